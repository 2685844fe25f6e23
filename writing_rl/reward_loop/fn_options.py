"""A reward fn's options (``reward.custom_reward_function.reward_kwargs``), checked once at start.

A method declares them (``METHOD.options``: docs/methods/your-own.md#the-contract; an optional ``check(prefix)``
for rules across fields); the fn reads its keyword arguments with ``read_options``. ``check_fn_options`` reads the
same declaration when ``writing-rl check-config``, the preflight, ``DRY_RUN`` or our reward managers start
(through reward_loop/reward_fn.py), as the config reference does (scripts/config_reference.py).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from writing_rl.settings import ConfigError, build, check_keywords, plain

FN_PREFIX = "reward.custom_reward_function.reward_kwargs"
# Passed by verl (when it hosts a reward model) or by our managers, not set in reward_kwargs.
PASSED_BY_THE_CALLER = (
    "data_source", "solution_str", "ground_truth", "extra_info", "members", "reward_router_address",
    "reward_model_tokenizer", "judge", "judge_tokenizer", "uid", "group_size", "on_parse_error",
)  # fmt: skip


def read_options(cls: type, given: Mapping[str, Any]):
    """``given`` (the fn's keyword arguments from reward_kwargs) as ``cls``, every value checked. A fn
    called per sample is given the same options every time: they are checked the first time only."""
    try:
        key = (cls, tuple(given.items()))
        known = _READ.get(key)
    except TypeError:  # an unhashable value (a list, a dict): read it each time
        key = known = None
    if known is not None:
        return known
    options = build(cls, dict(given), FN_PREFIX)
    check = getattr(options, "check", None)
    if check is not None:
        check(FN_PREFIX)
    if key is not None:
        if len(_READ) >= _READ_MAX:
            _READ.clear()
        _READ[key] = options
    return options


_READ: dict[tuple, Any] = {}  # (options class, the options given) -> the options read (frozen dataclasses)
_READ_MAX = 64


def check_fn_options(fn: Callable, reward_kwargs: Any, where: str, declared: type | None) -> str:
    """Raise ``ConfigError`` for a reward_kwargs entry ``fn`` would refuse; return what was checked.
    ``declared``: the fn's options (its ``METHOD.options``); None: checked against its signature."""
    given = plain(reward_kwargs or {})
    method = getattr(getattr(fn, "__func__", fn), "reward_method", None)
    passed = (*PASSED_BY_THE_CALLER, *(extra.name for extra in getattr(method, "extras", ())))  # and its extras
    for key in given:
        if key in passed:  # (a fn taking **kwargs would get it silently in place of the manager's)
            setting = " (set reward.reward_kwargs.on_parse_error)" if key == "on_parse_error" else ""
            raise ConfigError(f"{FN_PREFIX}.{key}: the manager passes {key} to the reward fn; not an option{setting}")
    if declared is not None:
        read_options(declared, given)
        return f"reward fn options: {len(given)} set, checked against {where}'s declared options"
    check_keywords(fn, given, FN_PREFIX, where, passed)
    return f"reward fn options: {len(given)} set, each one {where} takes"
