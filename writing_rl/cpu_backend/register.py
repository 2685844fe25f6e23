"""Everything the CPU backend adds to verl, each piece added when verl imports the module it belongs to.

The platform is registered at once (verl asks for it while importing). The rest waits for its module: a
process that never imports verl's engines or rollouts (a reward worker, a TransferQueue storage unit)
pays nothing for them, and every registration still happens before verl can look it up.
"""

from __future__ import annotations

import functools
from types import ModuleType

from writing_rl.cpu_backend import shims
from writing_rl.cpu_backend.platform_name import PLATFORM, ROLLOUT
from writing_rl.import_hooks import after_import


@functools.cache
def install() -> None:
    from writing_rl.cpu_backend import platform  # noqa: F401  (registers itself)

    after_import(
        {
            "verl.workers.rollout.replica": _register_replica,
            "verl.workers.rollout.base": lambda base: shims.add_rollout_adapter(base, ROLLOUT),
            "verl.workers.engine.fsdp.transformer_impl": _register_engines,
            "verl.workers.engine_workers": shims.gloo_process_group,
            "verl.utils.distributed": shims.gloo_global_process_group,
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
