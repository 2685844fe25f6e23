"""Token-in, token-out generation with transformers, for the CPU rollout server.

verl's agent loop sends one request per rollout (``n`` rollouts of a prompt are ``n`` requests), with
vLLM-style sampling parameters. Requests that arrive while a batch runs wait in a queue; the next
batch takes the oldest one and every queued request with the same sampling parameters, left-padded
into one ``model.generate`` call in a worker thread. Speed is not the point on a CPU; the answers are:
exactly the tokens sampled, their log-probabilities under the model's own distribution (what vLLM
reports by default), and whether generation stopped or ran out of tokens.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import torch

from writing_rl.genrm.batching import BatchQueue, left_padded

# The sampling parameters verl's agent loop sends; anything else is refused, never silently ignored.
KNOWN_SAMPLING = {"temperature", "top_p", "top_k", "repetition_penalty", "logprobs", "max_tokens", "max_new_tokens"}


@dataclass(frozen=True)
class SamplingKey:
    """What requests must share to run in one ``generate`` call."""

    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    repetition_penalty: float
    logprobs: bool

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class Generated:
    token_ids: list[int]
    log_probs: list[float] | None
    stop_reason: str  # "completed": a stop token or the token budget ended it


@dataclass
class _Request:
    prompt_ids: list[int]
    key: SamplingKey
    future: asyncio.Future


def sampling_key(sampling_params: dict[str, Any], max_tokens: int) -> SamplingKey:
    unknown = set(sampling_params) - KNOWN_SAMPLING
    if unknown:
        raise ValueError(f"sampling parameters the CPU rollout does not support: {sorted(unknown)}")
    top_k = sampling_params.get("top_k", -1)
    return SamplingKey(
        max_tokens=max_tokens,
        temperature=float(sampling_params.get("temperature", 1.0)),
        top_p=float(sampling_params.get("top_p", 1.0)),
        top_k=-1 if top_k is None or top_k <= 0 else int(top_k),
        repetition_penalty=float(sampling_params.get("repetition_penalty", 1.0)),
        logprobs=bool(sampling_params.get("logprobs", False)),
    )


class TokenGenerator:
    def __init__(self, model, stop_ids: set[int], pad_id: int, max_batch_size: int = 64):
        self.model = model
        self.stop_ids = stop_ids
        self.pad_id = pad_id
        self.max_batch_size = max_batch_size
        # A weight update waits for the batch in flight, and the next batch waits for the update.
        self.model_lock = asyncio.Lock()
        self._batches = BatchQueue(self._joins, self._answer, self.model_lock)

    async def generate(self, prompt_ids: list[int], key: SamplingKey) -> Generated:
        request = _Request(list(prompt_ids), key, asyncio.get_running_loop().create_future())
        return await self._batches.submit(request)

    def _joins(self, batch: list[_Request], request: _Request) -> bool:
        return request.key == batch[0].key and len(batch) < self.max_batch_size

    def _answer(self, batch: list[_Request]) -> list[Generated]:
        return self.run_batch([r.prompt_ids for r in batch], batch[0].key)

    @torch.inference_mode()
    def run_batch(self, prompts: list[list[int]], key: SamplingKey) -> list[Generated]:
        input_ids, attention_mask = left_padded(torch, prompts, self.pad_id)
        width = input_ids.shape[1]
        options: dict[str, Any] = {
            "max_new_tokens": key.max_tokens,
            "eos_token_id": sorted(self.stop_ids),
            "pad_token_id": self.pad_id,
            "do_sample": not key.greedy,
            "temperature": None if key.greedy else key.temperature,
            "top_p": None if key.greedy else key.top_p,
            "top_k": None if key.greedy or key.top_k < 0 else key.top_k,
            "repetition_penalty": None if key.repetition_penalty == 1.0 else key.repetition_penalty,
            "return_dict_in_generate": True,
            "output_logits": key.logprobs,
        }
        output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
        new_tokens = output.sequences[:, width:]
        log_probs = None
        if key.logprobs:
            # The raw logits of each step (before temperature and top-p), as vLLM reports log-probs.
            logits = torch.stack(output.logits, dim=1).float()
            log_probs = torch.log_softmax(logits, dim=-1).gather(-1, new_tokens.unsqueeze(-1)).squeeze(-1)
        return [self._finish(row, new_tokens[row].tolist(), log_probs) for row in range(len(prompts))]

    def _finish(self, row: int, tokens: list[int], log_probs) -> Generated:
        # Like vLLM: the stop token is part of the response; the padding after it is not.
        stop_at = next((i for i, token in enumerate(tokens) if token in self.stop_ids), None)
        kept = tokens if stop_at is None else tokens[: stop_at + 1]
        row_log_probs = None if log_probs is None else log_probs[row, : len(kept)].tolist()
        return Generated(kept, row_log_probs, "completed")
