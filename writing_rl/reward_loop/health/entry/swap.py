"""verl's own entry point and task runner, with the one class that builds the trainer replaced by ours.

verl's task runners name their trainer class in the method that builds it, and its ``main`` names its task
runner: the recipe's way to change either is an entry point of one's own. Ours run verl's ``main`` and verl's
task runner unchanged; only those names are pointed at our subclasses. In the driver that is the module's
attribute. In the task runner's Ray process it is the name in the globals of the method itself: Ray ships a
remote class's methods by value, each with a copy of the names it uses, so the module's attribute is not what
that method reads there. A name verl no longer uses stops the run at once rather than training without
judge health.
"""

from __future__ import annotations

from types import ModuleType


def _gone(where: str, name: str) -> RuntimeError:
    return RuntimeError(
        f"verl's {where} no longer uses {name}: writing-rl's judge-health entry point "
        "(writing_rl/reward_loop/health/entry/) needs updating for this verl; run verl's own entry point meanwhile"
    )


def replace(module: ModuleType, name: str, ours) -> None:
    """``module.name`` is ours (the driver: what verl's ``main`` looks up)."""
    if not hasattr(module, name):
        raise _gone(module.__name__, name)
    setattr(module, name, ours)


def replace_in(method, name: str, ours) -> None:
    """The global ``name`` that ``method`` reads is ours (the task runner's process)."""
    function = getattr(method, "__func__", method)
    if name not in function.__code__.co_names:
        raise _gone(function.__qualname__, name)
    function.__globals__[name] = ours
