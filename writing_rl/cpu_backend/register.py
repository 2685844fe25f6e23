"""Everything the CPU backend adds to verl, each piece added when verl imports the module it belongs to.

The platform is registered at once (verl asks for it while importing). The rest waits for its module: a
process that never imports verl's engines or rollouts (a reward worker, a TransferQueue storage unit)
pays nothing for them, and every registration still happens before verl can look it up.
"""

from __future__ import annotations

import functools
import importlib.abc
import sys
from types import ModuleType
from typing import Callable

from writing_rl.cpu_backend import shims
from writing_rl.cpu_backend.platform_name import PLATFORM, ROLLOUT

Hook = Callable[[ModuleType], None]


@functools.cache
def install() -> None:
    from writing_rl.cpu_backend import platform  # noqa: F401  (registers itself)

    after_import(
        {
            "verl.workers.rollout.replica": _register_replica,
            "verl.workers.rollout.base": lambda base: shims.add_rollout_adapter(base, ROLLOUT),
            "verl.workers.engine.fsdp.transformer_impl": _register_engines,
            "verl.workers.engine_workers": shims.gloo_process_group,
            "verl.checkpoint_engine.base": _register_checkpoint_engine,
        }
    )


def _register_replica(replica: ModuleType) -> None:
    def load():
        from writing_rl.cpu_backend.rollout import TransformersReplica

        return TransformersReplica

    replica.RolloutReplicaRegistry.register(ROLLOUT, load)


def _register_checkpoint_engine(base: ModuleType) -> None:
    from writing_rl.cpu_backend import checkpoint_engine  # noqa: F401  (registers itself)


def _register_engines(transformer_impl: ModuleType) -> None:
    # verl registers its FSDP engines for cuda and npu; the same classes train on the CPU.
    register = transformer_impl.EngineRegistry.register
    register("language_model", ["fsdp", "fsdp2"], device=PLATFORM)(transformer_impl.FSDPEngineWithLMHead)
    register("value_model", ["fsdp", "fsdp2"], device=PLATFORM)(transformer_impl.FSDPEngineWithValueHead)
    shims.unpinned_offload(transformer_impl)


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
