"""What the two batching generators share (the hf GenRM engine, the CPU rollout): the queue of requests
answered in batches, prompts left-padded into one tensor, and a batch's results handed to the requests
still waiting for them."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any, Callable, Sequence


class BatchQueue:
    """Requests answered in batches by one task of the running loop. Each batch is headed by the oldest
    request still waiting; ``joins(batch, request)`` says whether a later one may join it, and
    ``answer(batch)`` (run in a thread, under ``lock`` when given) returns one result or exception per
    request. A request is anything with a ``future``. ``fill_wait_s``: how long a request arriving at an idle
    queue waits for others before its batch starts (a burst's first request would otherwise run alone, and the
    rest of the burst wait for it); a batch that follows another starts at once."""

    def __init__(self, joins: Callable[[list, Any], bool], answer: Callable[[list], list], lock=None,
                 fill_wait_s: float = 0.0):  # fmt: skip
        self._joins, self._answer, self._lock = joins, answer, lock
        self._fill_wait_s = fill_wait_s
        self._queue: deque = deque()
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None

    async def submit(self, request) -> Any:
        if self._worker is None or self._worker.done():
            self._wakeup = asyncio.Event()
            self._worker = asyncio.get_running_loop().create_task(self._serve())
        self._queue.append(request)
        self._wakeup.set()
        return await request.future

    def waiting(self) -> int:
        return sum(1 for request in self._queue if not request.future.done())

    def close(self) -> None:
        """Stop answering: the worker task and every waiting request are cancelled."""
        if self._worker is not None:
            self._worker.cancel()
        for request in self._queue:
            if not request.future.done():
                request.future.cancel()
        self._queue.clear()

    def take_batch(self) -> list:
        """The oldest live request and the queued requests that may join it (cancelled ones dropped)."""
        batch, rest = [], deque()
        for request in self._queue:
            if request.future.done():
                continue
            (batch if not batch or self._joins(batch, request) else rest).append(request)
        self._queue = rest
        return batch

    async def _serve(self) -> None:
        idle = True
        while True:
            if idle and self._fill_wait_s:
                await asyncio.sleep(self._fill_wait_s)
            batch = self.take_batch()
            if not batch:
                self._wakeup.clear()
                await self._wakeup.wait()
                idle = True
                continue
            idle = False
            async with self._lock or contextlib.nullcontext():
                try:
                    results = await asyncio.to_thread(self._answer, batch)
                except Exception as exc:  # a failed batch fails its own requests only
                    results = [exc] * len(batch)
            settle([request.future for request in batch], results)


def left_padded(torch, prompts: Sequence[Sequence[int]], pad_id: int):
    """``(input_ids, attention_mask)`` for ``prompts``, each right-aligned so generation continues them all."""
    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids) :] = torch.tensor(list(ids), dtype=torch.long)
        attention_mask[row, width - len(ids) :] = 1
    return input_ids, attention_mask


def settle(futures: Sequence[asyncio.Future], results: Sequence[Any]) -> None:
    """Each future its result, or its exception where the result is one; cancelled ones are skipped."""
    for future, result in zip(futures, results):
        if future.done():
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)
