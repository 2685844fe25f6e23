"""The four places where verl 0.9.1 cannot run on a CPU through its plugin points alone: each shim changes one
name in one verl module, in CPU runs only (``VERL_PLATFORM=cpu``), never on a GPU cluster.

Each shim and why: docs/train-on-a-laptop.md#how-it-plugs-into-verl. ``tests/test_cpu_backend.py`` reads verl's
own code and fails once verl no longer needs a shim, so that it is removed then.
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
