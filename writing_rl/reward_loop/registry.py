"""Every reward method we and other installed packages ship, by name: what the config reference iterates over,
so that no list of methods is kept anywhere else (docs/methods/your-own.md).

``methods()`` imports every module of the packages declared under the entry-point group ``writing-rl.methods``
(ours: ``reward_fns``) and returns the methods they registered on import (``register``, reward_loop/contract.py).
A fn loaded from a file path (verl's loader gives it a module name of its own) is registered for its run but is
not one of them.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable

ENTRY_POINTS = "writing-rl.methods"
# Our reward managers' modules: each adds its manager to verl's registry by name (writing_rl/plugin.py).
MANAGER_MODULES = ("writing_rl.reward_loop.manager", "writing_rl.reward_loop.group_manager")


@dataclass(frozen=True)
class Registered:
    method: Any  # the RewardMethod (reward_loop/contract.py, which imports this module)
    module: str  # reward.custom_reward_function.path=pkg://<module>
    fns: tuple[str, ...]  # the fns registered with it (reward.custom_reward_function.name)

    @property
    def path(self) -> str:
        return f"pkg://{self.module}"


_BY_MODULE: dict[str, Registered] = {}


def record(fn: Callable, method: Any) -> None:
    """``method`` is ``fn``'s; a module imported again replaces what it registered."""
    module = getattr(fn, "__module__", None) or "?"
    known = _BY_MODULE.get(module)
    fns = known.fns if known is not None and known.method == method else ()
    name = getattr(fn, "__name__", None) or repr(fn)
    _BY_MODULE.pop(module, None)  # (kept in the order of the last registration)
    _BY_MODULE[module] = Registered(method, module, tuple(dict.fromkeys((*fns, name))))


def method_modules() -> list[str]:
    """Every module of the packages (or the modules) declared under the entry-point group."""
    points = sorted(entry_points(group=ENTRY_POINTS), key=lambda p: p.name)
    if not points:
        raise RuntimeError(
            f"no package declares reward methods (entry-point group {ENTRY_POINTS}): writing-rl is not installed "
            "in this environment; run pip install -e . in the checkout"
        )
    modules = []
    for point in points:
        package = importlib.import_module(point.module)
        modules.append(package.__name__)
        if hasattr(package, "__path__"):
            modules += [info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return modules


def methods() -> dict[str, Registered]:
    """Every installed method, by name (sorted). Two modules registering one name are refused here."""
    found: dict[str, Registered] = {}
    for module in method_modules():
        importlib.import_module(module)
        if module not in _BY_MODULE:
            continue
        known = _BY_MODULE[module]
        other = found.get(known.method.name)
        if other is not None:
            raise ValueError(
                f"two reward methods are named {known.method.name!r}: {other.module} and {module}; "
                "give one another RewardMethod(name=...)"
            )
        found[known.method.name] = known
    return dict(sorted(found.items()))


def registered(name: str) -> Registered:
    known = methods()
    if name not in known:
        raise KeyError(f"no reward method is named {name!r}: choose one of {', '.join(known)}")
    return known[name]


def extras() -> dict[str, Any]:
    """Every extra (``RewardMethod.extras``) of the installed methods and of the methods loaded from a file in this
    process, by name: their settings sections sit under ``reward.reward_kwargs.<name>``. Two installed extras of
    one name are refused; a method loaded from a file is the run's own, so the last one loaded wins its names."""
    installed = methods()
    found: dict[str, Any] = {}
    for known in installed.values():
        for extra in known.method.extras:
            other = found.setdefault(extra.name, extra)
            if other is not extra and type(other) is not type(extra):
                raise ValueError(f"two method extras are named {extra.name!r}: {type(other).__name__} and "
                                 f"{type(extra).__name__}")  # fmt: skip
    modules = {known.module for known in installed.values()}
    for known in _BY_MODULE.values():  # in the order they were loaded
        if known.module not in modules:
            found.update((extra.name, extra) for extra in known.method.extras)
    return dict(sorted(found.items()))


def advantage_estimators() -> dict[str, Callable]:
    """Every installed method's advantage estimators (``RewardMethod.advantage_estimators``), by name."""
    found: dict[str, Callable] = {}
    for known in methods().values():
        for name, estimator in known.method.advantage_estimators:
            if found.setdefault(name, estimator) is not estimator:
                raise ValueError(f"two methods declare the advantage estimator {name!r}")
    return found
