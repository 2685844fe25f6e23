"""verl's checkpoint engine ``gloo``: the trainer's weights to rollout replicas in other processes, on the CPU.

What it sends, how, and for which trainers (``actor_rollout_ref.rollout.checkpoint_engine.backend=gloo``):
docs/trainers.md and docs/train-on-a-laptop.md#how-it-plugs-into-verl. Each sync builds its own group: verl calls
``prepare``, ``build_topology`` and ``init_process_group`` before every update and ``finalize`` after.
"""

from __future__ import annotations

import pickle
from datetime import timedelta
from typing import Any, AsyncGenerator

import torch
import torch.distributed as dist
from verl.checkpoint_engine.base import (
    CheckpointEngine,
    CheckpointEngineRegistry,
    merge_weight_chunks,
    split_weight_chunks,
)
from verl.workers.rollout.utils import ensure_async_iterator

from writing_rl.cpu_backend.platform_name import CHECKPOINT_ENGINE, HOST

SENDER = 0  # actor rank 0; the other actor ranks only walk the weights (gathering each is collective)
NOT_IN_GROUP = -1
ALIGN = 16  # bytes: the widest element of any dtype


@CheckpointEngineRegistry.register(CHECKPOINT_ENGINE)
class GlooCheckpointEngine(CheckpointEngine):
    def __init__(self, bucket_size: int, is_master: bool = False, timeout_s: float = 600.0) -> None:
        self.bucket_size = bucket_size
        self.is_master = is_master
        self.timeout = timedelta(seconds=timeout_s)
        self.rank = NOT_IN_GROUP
        self.store: dist.TCPStore | None = None
        self.group: dist.ProcessGroupGloo | None = None

    def prepare(self) -> dict[str, Any] | None:
        if not self.is_master:
            return None
        self.store = dist.TCPStore(HOST, 0, is_master=True, timeout=self.timeout, wait_for_workers=False)
        return {"host": HOST, "port": self.store.port}

    @classmethod
    def build_topology(cls, actor_wg_world_size: int, rollout_world_size: int, metadata: list):
        store = metadata[0]
        if not store:
            raise RuntimeError("the gloo checkpoint engine: actor rank 0 did not start the group's store")
        world_size = 1 + rollout_world_size
        actor = {
            "rank": [SENDER] + [NOT_IN_GROUP] * (actor_wg_world_size - 1),
            "world_size": [world_size] * actor_wg_world_size,
            "store": [store] * actor_wg_world_size,
        }
        rollout = {
            "rank": list(range(1, world_size)),
            "world_size": [world_size] * rollout_world_size,
            "store": [store] * rollout_world_size,
        }
        return actor, rollout

    def init_process_group(self, rank: int, world_size: int, store: dict[str, Any]) -> None:
        self.rank = rank
        if rank == NOT_IN_GROUP:
            return
        if rank != SENDER:
            self.store = dist.TCPStore(store["host"], store["port"], is_master=False, timeout=self.timeout)
        self.group = dist.ProcessGroupGloo(self.store, rank, world_size, self.timeout)

    def finalize(self) -> None:
        self.group = None
        self.store = None
        self.rank = NOT_IN_GROUP

    @torch.no_grad()
    async def send_weights(self, weights, global_steps: int | None = None) -> dict:
        if self.rank != SENDER:
            async for _ in ensure_async_iterator(weights):
                pass
            return {}
        buffer, metas, used = torch.empty(self.bucket_size, dtype=torch.uint8), [], 0
        async for meta, chunk in split_weight_chunks(_contiguous(weights), self.bucket_size):
            used = -(-used // ALIGN) * ALIGN  # the receiver views each tensor in place: aligned for its dtype
            if used + meta.chunk_size > self.bucket_size:
                self._broadcast_bucket(buffer[:used], metas, last=False)
                buffer, metas, used = torch.empty(self.bucket_size, dtype=torch.uint8), [], 0
            meta.offset = used
            buffer[used : used + meta.chunk_size] = chunk
            metas.append(meta)
            used += meta.chunk_size
        self._broadcast_bucket(buffer[:used], metas, last=True)
        return {}

    async def receive_weights(self, global_steps: int | None = None) -> AsyncGenerator[tuple[str, torch.Tensor], None]:
        async for name, weight in merge_weight_chunks(self._receive_chunks(), self.bucket_size):
            yield name, weight

    async def _receive_chunks(self):
        if self.group is None or self.rank == SENDER:
            raise RuntimeError(
                "the gloo checkpoint engine: receive_weights before init_process_group on a rollout rank"
            )
        last = False
        while not last:
            # A fresh buffer per bucket: the tensors yielded from the last one may still be in use.
            bucket, metas, last = self._receive_bucket()
            for meta in metas:
                yield meta, bucket[meta.offset : meta.offset + meta.chunk_size]

    def _broadcast_bucket(self, bucket: torch.Tensor, metas: list, last: bool) -> None:
        header = torch.frombuffer(bytearray(pickle.dumps(metas)), dtype=torch.uint8)
        self._broadcast(torch.tensor([header.numel(), bucket.numel(), int(last)], dtype=torch.int64))
        self._broadcast(header)
        self._broadcast(bucket)

    def _receive_bucket(self) -> tuple[torch.Tensor, list, bool]:
        sizes = torch.zeros(3, dtype=torch.int64)
        self._broadcast(sizes)
        header_size, bucket_size, last = sizes.tolist()
        header = torch.empty(header_size, dtype=torch.uint8)
        self._broadcast(header)
        bucket = torch.empty(bucket_size, dtype=torch.uint8)
        self._broadcast(bucket)
        return bucket, pickle.loads(header.numpy().tobytes()), bool(last)

    def _broadcast(self, tensor: torch.Tensor) -> None:
        options = dist.BroadcastOptions()
        options.rootRank = SENDER
        self.group.broadcast([tensor], options).wait()


async def _contiguous(weights):
    async for name, weight in ensure_async_iterator(weights):
        yield name, weight.detach().to("cpu").contiguous()
