"""What the two batching generators share (the hf GenRM engine, the CPU rollout): prompts left-padded
into one tensor, and a batch's results handed to the requests still waiting for them."""

from __future__ import annotations

import asyncio
from typing import Any, Sequence


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
