"""Everything the CPU backend adds to verl, registered once per process."""

from __future__ import annotations

import functools


@functools.cache
def register(rollout_name: str) -> None:
    # The platform first: importing verl's engines asks for the platform at module level.
    from writing_rl.cpu_backend import platform  # noqa: F401  (registers itself)

    from verl.workers.engine.base import EngineRegistry
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    from writing_rl.cpu_backend import shims
    from writing_rl.cpu_backend.platform_name import PLATFORM

    # verl registers its FSDP engines for cuda and npu; the same classes train on the CPU.
    EngineRegistry.register("language_model", ["fsdp", "fsdp2"], device=PLATFORM)(FSDPEngineWithLMHead)
    EngineRegistry.register("value_model", ["fsdp", "fsdp2"], device=PLATFORM)(FSDPEngineWithValueHead)
    RolloutReplicaRegistry.register(rollout_name, _replica_class)
    shims.apply(rollout_name)


def _replica_class():
    from writing_rl.cpu_backend.rollout import TransformersReplica

    return TransformersReplica
