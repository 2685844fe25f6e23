"""A reward fn's options (``reward.custom_reward_function.reward_kwargs``), checked once at start.

A reward fn module declares its options as a frozen dataclass named ``RewardOptions`` (fields with their
defaults, bounded with ``writing_rl.settings.option``, the comment above each field saying what it does;
an optional ``check(prefix)`` for rules across fields). The fn reads its keyword arguments with
``read_options``, and the same declaration is read by ``check_fn_options`` (called by ``writing-rl
check-config``, the preflight, ``DRY_RUN`` and our reward managers when they start) and by the config
reference (scripts/config_reference.py). A fn without ``RewardOptions`` is checked against its signature.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from writing_rl.reward_loop.failures import refuse_moved
from writing_rl.settings import ConfigError, build, check_keywords, plain

FN_PREFIX = "reward.custom_reward_function.reward_kwargs"
# Passed by verl (when it hosts a reward model) or by our managers, not set in reward_kwargs.
PASSED_BY_THE_CALLER = (
    "data_source", "solution_str", "ground_truth", "extra_info", "members", "reward_router_address",
    "reward_model_tokenizer", "judge", "judge_tokenizer", "curriculum", "uid", "group_size", "on_parse_error",
)  # fmt: skip


def read_options(cls: type, given: Mapping[str, Any]):
    """``given`` (the fn's keyword arguments from reward_kwargs) as ``cls``, every value checked."""
    options = build(cls, dict(given), FN_PREFIX)
    check = getattr(options, "check", None)
    if check is not None:
        check(FN_PREFIX)
    return options


def options_of(fn: Callable) -> type | None:
    """The ``RewardOptions`` of the module that defines ``fn`` (loaded from a file or a package alike)."""
    return getattr(inspect.unwrap(fn), "__globals__", {}).get("RewardOptions")


def check_fn_options(fn: Callable, reward_kwargs: Any, where: str) -> str:
    """Raise ``ConfigError`` for a reward_kwargs entry ``fn`` would refuse; return what was checked."""
    given = plain(reward_kwargs or {})
    refuse_moved(FN_PREFIX, given)
    declared = options_of(fn)
    if declared is not None:
        read_options(declared, given)
        return f"reward fn options: {len(given)} set, checked against {where}'s RewardOptions"
    check_keywords(fn, given, FN_PREFIX, where, PASSED_BY_THE_CALLER)
    return f"reward fn options: {len(given)} set, each one {where} takes"


def check_configured_fn(config) -> str | None:
    """``check_fn_options`` for the fn ``reward.custom_reward_function`` names, loaded as verl loads it."""
    from verl.utils.import_utils import load_extern_object

    fn_config = config.reward.custom_reward_function
    if not fn_config.get("path"):
        return None
    fn = load_extern_object(module_path=fn_config.path, object_name=fn_config.name)
    where = f"{fn_config.path}:{fn_config.name}"
    checked = check_fn_options(fn, fn_config.get("reward_kwargs"), where)
    supported = getattr(options_of(fn), "ON_PARSE_ERROR", None)
    on_parse_error = (config.reward.get("reward_kwargs") or {}).get("on_parse_error") or "loss"
    if supported is not None and on_parse_error not in supported:
        raise ConfigError(
            f"reward.reward_kwargs.on_parse_error={on_parse_error!r}: {where} supports {', '.join(supported)}"
        )
    return checked
