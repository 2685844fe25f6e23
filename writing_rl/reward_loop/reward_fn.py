"""The reward fn a config names (``reward.custom_reward_function``), loaded the way verl loads it, with
the method registered for it (``register(fn, RewardMethod(...))``, reward_loop/contract.py): the one loader
of reward fns, for the reward managers, ``writing-rl check-config`` and the preflight alike."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from writing_rl.reward_loop.contract import RewardMethod
from writing_rl.reward_loop.failures import ON_PARSE_ERROR
from writing_rl.reward_loop.fn_options import check_fn_options
from writing_rl.settings import ConfigError, plain


@dataclass(frozen=True)
class ConfiguredFn:
    fn: Callable
    where: str  # path:name, for messages
    method: RewardMethod | None  # None: a fn with no registered method (a fn written for verl's own managers)
    reward_kwargs: dict[str, Any]

    @property
    def parameters(self) -> frozenset[str]:
        """The fn's parameters: a manager passes each extra (reward_loop/fn_extras.py) only to a fn naming it."""
        return frozenset(inspect.signature(self.fn).parameters)

    def failure_score(self, configured: float | None) -> float:
        """What a failed sample is paid: ``reward.reward_kwargs.failure_score`` when set, else the method's loss."""
        if configured is not None:
            return float(configured)
        if self.method is None:
            raise ConfigError(
                f"{self.where}: no reward method is registered for it, so what a failed sample is paid is unknown; "
                "declare METHOD = register(fn, RewardMethod(options=..., failure_score=...)) "
                "(writing_rl.reward_loop.contract) or set reward.reward_kwargs.failure_score to the reward's loss"
            )
        return float(self.method.failure_score(**self.reward_kwargs))

    def check_options(self, on_parse_error: str) -> str:
        """Raise ``ConfigError`` for an option the fn would refuse, or an ``on_parse_error`` it does not
        honour; return what was checked."""
        declared = None if self.method is None else self.method.options
        checked = check_fn_options(self.fn, self.reward_kwargs, self.where, declared)
        # A value no reward takes is refused with the manager's settings (reward_loop/config.py).
        honoured = ON_PARSE_ERROR if self.method is None else self.method.on_parse_error
        if on_parse_error in ON_PARSE_ERROR and on_parse_error not in honoured:
            raise ConfigError(
                f"reward.reward_kwargs.on_parse_error={on_parse_error!r}: {self.where} supports " + ", ".join(honoured)
            )
        return checked


def declared_method(fn: Callable) -> RewardMethod | None:
    """The method registered for ``fn`` (``register``), or None for a fn with none."""
    unwrapped = inspect.unwrap(fn)
    method = getattr(unwrapped, "reward_method", None)
    if method is None and isinstance(getattr(unwrapped, "__globals__", {}).get("METHOD"), RewardMethod):
        raise ConfigError(
            f"{fn.__module__} declares METHOD but never registers it for {fn.__qualname__}: write "
            f"METHOD = register({fn.__qualname__}, RewardMethod(...)) (writing_rl.reward_loop.contract)"
        )
    if method is not None and not isinstance(method, RewardMethod):
        raise ConfigError(f"{fn.__module__}.{fn.__qualname__}.reward_method must be a RewardMethod (use register)")
    return method


def load_reward_fn(config) -> ConfiguredFn | None:
    """The configured fn, or None when ``reward.custom_reward_function.path`` is not set."""
    from verl.utils.import_utils import load_extern_object

    fn_config = config.reward.custom_reward_function
    if not fn_config.get("path"):
        return None
    fn = load_extern_object(module_path=fn_config.path, object_name=fn_config.name)
    where = f"{fn_config.path}:{fn_config.name}"
    return ConfiguredFn(fn, where, declared_method(fn), plain(fn_config.get("reward_kwargs") or {}))
