"""Running code right after verl imports one of its modules: how our plugins register with verl in every
process of a run, each piece when verl first imports the module it belongs to (and never in a process
that does not)."""

from __future__ import annotations

import importlib.abc
import sys
from types import ModuleType
from typing import Callable

Hook = Callable[[ModuleType], None]


def after_import(hooks: dict[str, Hook]) -> None:
    """Run ``hooks[name](module)`` right after module ``name`` is first imported (now, if it already is)."""
    pending = {}
    for name, hook in hooks.items():
        if name in sys.modules:
            hook(sys.modules[name])
        else:
            pending[name] = hook
    if pending:
        sys.meta_path.insert(0, _AfterImport(pending))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, hooks: dict[str, Hook]):
        self.hooks = hooks

    def find_spec(self, name, path, target=None):
        if name not in self.hooks:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        hook, run = self.hooks.pop(name), spec.loader.exec_module

        def exec_then_hook(module: ModuleType) -> None:
            run(module)
            hook(module)

        spec.loader.exec_module = exec_then_hook  # this module's own loader instance
        return spec
