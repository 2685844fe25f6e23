"""The four places where verl 0.9.1 cannot run on a CPU through its plugin points alone.

Each shim changes one name in one verl module, in CPU runs only (``VERL_PLATFORM=cpu``): nothing here
runs on a GPU cluster. ``tests/test_cpu_backend.py`` reads verl's own code and fails once verl no longer
needs a shim, so that it is removed then.

1. ``engine_workers``: the training worker's process group backend is built as
   ``cpu:gloo,{device}:{backend}``, which for the CPU is ``cpu:gloo,cpu:gloo``, refused by torch
   ("Duplicate device type cpu"). The shim passes ``gloo``.
2. ``rollout.base._ROLLOUT_REGISTRY``: the training worker finds its rollout adapter in this dict, and
   verl offers no function to add to it (the replica side has ``RolloutReplicaRegistry.register``).
3. ``transformer_impl.CPUOffloadPolicy``: a forward-only FSDP2 model (the reference policy) is always
   offloaded with ``pin_memory=True``, and pinning needs an accelerator. The shim pins nothing.
4. ``distributed.initialize_global_process_group`` (the SFT trainer's, under torchrun): the same
   ``cpu:gloo,cpu:gloo`` as 1, written into the function with no backend argument to pass. The shim
   replaces the function with one that starts the same process group on gloo.
"""

from __future__ import annotations

import functools
import os
from datetime import timedelta

ADAPTER = "writing_rl.cpu_backend.rollout.TransformersServerAdapter"


def gloo_process_group(engine_workers) -> None:
    original = engine_workers.initialize_global_process_group_ray

    @functools.wraps(original)
    def with_gloo(timeout_second=None, backend=None):
        return original(timeout_second=timeout_second, backend=backend or "gloo")

    engine_workers.initialize_global_process_group_ray = with_gloo


def gloo_global_process_group(distributed) -> None:
    distributed.initialize_global_process_group = _initialize_on_gloo


def _initialize_on_gloo(timeout_second: int = 36000) -> tuple[int, int, int]:
    """What verl's ``initialize_global_process_group`` does under torchrun, on gloo alone."""
    import torch.distributed

    torch.distributed.init_process_group(
        backend="gloo",
        timeout=timedelta(seconds=timeout_second),
        init_method=os.environ.get("DIST_INIT_METHOD", None),
    )
    return int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def add_rollout_adapter(rollout_base, rollout_name: str) -> None:
    rollout_base._ROLLOUT_REGISTRY[(rollout_name, "async")] = ADAPTER


def unpinned_offload(transformer_impl) -> None:
    transformer_impl.CPUOffloadPolicy = functools.partial(_unpinned, transformer_impl.CPUOffloadPolicy)


def _unpinned(policy, pin_memory: bool = True):
    return policy(pin_memory=False)
