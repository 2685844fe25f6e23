"""Every reward method, by name: what the config reference, ``probe-judge``, the preflight and the tests iterate
over, so that no list of methods is kept anywhere else.

A method's module registers itself when it is imported (``register`` in reward_loop/contract.py). ``methods()``
first imports every module of the packages named under the entry-point group ``writing_rl.methods`` (ours:
``reward_fns``, in setup.py; a package of yours adds its own entry), so a new method is one module there.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable

ENTRY_POINTS = "writing_rl.methods"


@dataclass(frozen=True)
class Registered:
    method: Any  # the RewardMethod (reward_loop/contract.py, which imports this module)
    module: str  # reward.custom_reward_function.path=pkg://<module>
    fns: tuple[str, ...]  # the fns registered with it (reward.custom_reward_function.name)

    @property
    def path(self) -> str:
        return f"pkg://{self.module}"


_BY_NAME: dict[str, Registered] = {}


def record(fn: Callable, method: Any) -> None:
    """``method`` (named) is ``fn``'s. A module imported again replaces what it registered; two modules may
    not register one name."""
    known = _BY_NAME.get(method.name)
    if known is not None and known.module != fn.__module__:
        raise ValueError(
            f"two reward methods are named {method.name!r}: {known.module} and {fn.__module__}; "
            "give one another RewardMethod(name=...)"
        )
    fns = known.fns if known is not None and known.method == method else ()
    _BY_NAME[method.name] = Registered(method, fn.__module__, tuple(dict.fromkeys((*fns, fn.__name__))))


def method_modules() -> list[str]:
    """Every module of the packages (or the modules) registered under the entry-point group."""
    modules = []
    for point in sorted(entry_points(group=ENTRY_POINTS), key=lambda p: p.name):
        package = importlib.import_module(point.value)
        modules.append(package.__name__)
        if hasattr(package, "__path__"):
            modules += [info.name for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")]
    return modules


def methods() -> dict[str, Registered]:
    """Every method, by name (sorted), its module imported."""
    for module in method_modules():
        importlib.import_module(module)
    return dict(sorted(_BY_NAME.items()))


def registered(name: str) -> Registered:
    known = methods()
    if name not in known:
        raise KeyError(f"no reward method is named {name!r}: choose one of {', '.join(known)}")
    return known[name]
