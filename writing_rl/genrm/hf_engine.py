"""A transformers GenRM engine (CPU or GPU) that batches the requests queued while it was busy.

``generate`` validates and tokenizes a request at once (a bad request fails at once), then queues it. One
background task takes the oldest request plus every queued request with the same sampling settings, runs one
left-padded ``model.generate`` in a worker thread and answers each request; whatever arrived meanwhile forms the
next batch. Batch limits, out-of-memory halving, sampling and reproducibility: docs/genrm/hosting.md ("Engines").
Sampled requests without a ``seed`` draw from the replica's generator, seeded once at start.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from writing_rl.genrm.batching import BatchQueue, left_padded
from writing_rl.genrm.engine import Generation, Sampling
from writing_rl.genrm.requests import ChatRequests, PreparedRequest, Usage

# Full batches that must fit before the batch size limit, lowered by an out-of-memory error, grows by one.
RAISE_CAP_AFTER = 8

_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}


@dataclass
class _Request:
    prepared: PreparedRequest
    sampling: Sampling
    future: asyncio.Future
    # Requests batch together only when their keys are equal.
    key: tuple = field(default=())


@dataclass
class BatchStats(Usage):
    batches: int = 0
    largest_batch: int = 0
    busy_s: float = 0.0
    oom_splits: int = 0  # batches halved after running out of memory


# A request reaching an idle engine waits this long for the rest of its burst (requests come one by one over HTTP
# and Ray): generating a batch of 1 and then one of the others costs a whole extra generate call. Small beside
# a generate call of a judge reply (a second or more on a CPU).
FILL_WAIT_S = 0.02


class HFEngine:
    def __init__(
        self,
        model: str,
        device: str = "cpu",
        dtype: str = "auto",
        max_batch_size: int = 16,
        max_batch_tokens: int | None = None,
        max_model_len: int | None = None,
        default_max_tokens: int = 4096,
        chat_template_kwargs: dict[str, Any] | None = None,
        trust_remote_code: bool = False,
        num_threads: int | None = None,
        seed: int = 0,
    ):
        import torch
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # one bar per replica per load clutters the driver's log
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"device={device!r} but this replica sees no CUDA device")
        if num_threads:
            torch.set_num_threads(num_threads)
        torch.manual_seed(seed)
        self._torch = torch
        self.device = device
        self.max_batch_size = max_batch_size
        self.batch_cap = max_batch_size  # lowered after an out-of-memory error, then regrown
        self._fits_at_cap = 0
        self.max_batch_tokens = max_batch_tokens

        self.chat = ChatRequests.load(
            model, default_max_tokens, chat_template_kwargs, trust_remote_code=trust_remote_code
        )
        self.tokenizer = self.chat.tokenizer
        self.model = AutoModelForCausalLM.from_pretrained(
            model, dtype=_torch_dtype(torch, dtype, device), trust_remote_code=trust_remote_code
        ).to(device)
        self.model.eval()

        self.stop_ids = _stop_token_ids(self.tokenizer, self.model.generation_config)
        if not self.stop_ids:
            raise ValueError(f"{model}: neither the tokenizer nor generation_config names an EOS token")
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.stop_ids)
        context = getattr(self.model.config, "max_position_embeddings", None)
        self.max_model_len = max_model_len or context or 4096
        if context and self.max_model_len > context:
            raise ValueError(f"max_model_len={self.max_model_len} exceeds the model's context of {context}")

        self._batches = BatchQueue(self._joins, self.run_batch_or_split, fill_wait_s=FILL_WAIT_S)
        self._solo = itertools.count()
        self._stats = BatchStats()

    # ---------------------------------------------------------------- requests

    async def generate(
        self,
        messages: list[dict[str, str]],
        sampling: Sampling,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> Generation:
        prepared = self.chat.prepare(messages, sampling, self.max_model_len, chat_template_kwargs)
        max_new = prepared.max_tokens
        request = _Request(prepared, sampling, asyncio.get_running_loop().create_future())
        if sampling.greedy:
            request.key = (max_new,)
        elif sampling.seed is None:
            request.key = (max_new, sampling.temperature, sampling.top_p)
        else:
            request.key = ("seeded", next(self._solo))
        return await self._batches.submit(request)

    # ---------------------------------------------------------------- batching

    def _joins(self, batch: list[_Request], request: _Request) -> bool:
        """Whether a queued request can share the ``generate`` call of ``batch`` (headed by the oldest)."""
        head = batch[0]
        if len(batch) >= self.batch_cap or request.key != head.key:
            return False
        if not self.max_batch_tokens:
            return True
        width = max(len(r.prepared.ids) for r in (*batch, request))
        return (len(batch) + 1) * (width + head.prepared.max_tokens) <= self.max_batch_tokens

    def run_batch_or_split(self, batch: list[_Request]) -> list[Generation | BaseException]:
        """``run_batch``; when it runs out of memory, each half of the batch on its own (recursively).
        A single request that does not fit gets the out-of-memory error as its result."""
        try:
            return self.run_batch(batch)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            error = RuntimeError(f"out of memory generating a batch of {len(batch)}: {exc}")
        # Past the except block, so the failed call's frames, and the tensors they hold, can be freed.
        gc.collect()
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()
        if len(batch) == 1:
            return [error]
        self._stats.oom_splits += 1
        self.batch_cap, self._fits_at_cap = max(1, min(self.batch_cap, len(batch) // 2)), 0
        half = len(batch) // 2
        return self._run_part(batch[:half]) + self._run_part(batch[half:])

    def _run_part(self, part: list[_Request]) -> list[Generation | BaseException]:
        """One half of a split batch: its own failure fails only its requests; requests cancelled while
        the whole batch was failing are not generated (their result is a ``CancelledError``)."""
        results: list[Generation | BaseException] = [asyncio.CancelledError()] * len(part)
        live = [i for i, request in enumerate(part) if not request.future.done()]
        if live:
            try:
                answers = self.run_batch_or_split([part[i] for i in live])
            except Exception as exc:
                answers = [exc] * len(live)
            for i, answer in zip(live, answers):
                results[i] = answer
        return results

    def run_batch(self, batch: list[_Request]) -> list[Generation]:
        """One left-padded ``model.generate`` over the batch (blocking; runs in a worker thread)."""
        torch = self._torch
        start = time.perf_counter()
        input_ids, attention_mask = left_padded(torch, [r.prepared.ids for r in batch], self.pad_id)
        width = input_ids.shape[1]

        head = batch[0]
        options: dict[str, Any] = {
            "max_new_tokens": head.prepared.max_tokens,
            "eos_token_id": sorted(self.stop_ids),
            "pad_token_id": self.pad_id,
            "do_sample": not head.sampling.greedy,
            # Only the request's sampling applies: neutralise the model's generation-config extras.
            "top_k": None,
            "repetition_penalty": None,
        }
        if not head.sampling.greedy:
            options.update(temperature=head.sampling.temperature, top_p=head.sampling.top_p)
            if head.sampling.seed is not None:
                torch.manual_seed(head.sampling.seed)
        else:
            options.update(temperature=None, top_p=None)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device), **options
            )
        new_tokens = output[:, width:].tolist()
        results = [self._finish(request.prepared, tokens) for request, tokens in zip(batch, new_tokens)]

        if len(batch) >= self.batch_cap < self.max_batch_size:
            self._fits_at_cap += 1
            if self._fits_at_cap == RAISE_CAP_AFTER:
                self.batch_cap, self._fits_at_cap = self.batch_cap + 1, 0
        stats = self._stats
        stats.batches += 1
        stats.largest_batch = max(stats.largest_batch, len(batch))
        for result in results:
            stats.add(result)
        stats.busy_s += time.perf_counter() - start
        return results

    def _finish(self, request: PreparedRequest, tokens: list[int]) -> Generation:
        stop_at = next((i for i, token in enumerate(tokens[: request.max_tokens]) if token in self.stop_ids), None)
        if stop_at is None:
            kept, finish_reason, completion_tokens = tokens[: request.max_tokens], "length", request.max_tokens
        else:
            # Like vLLM: the stop token counts as generated but is not part of the text.
            kept, finish_reason, completion_tokens = tokens[:stop_at], "stop", stop_at + 1
        return request.generation(
            self.tokenizer.decode(kept, skip_special_tokens=True), finish_reason, completion_tokens
        )

    # ---------------------------------------------------------------- lifecycle

    def stats(self) -> dict[str, Any]:
        s = self._stats
        return {
            "engine": "hf",
            "device": self.device,
            "queued": self._batches.waiting(),
            "requests": s.requests,
            "batches": s.batches,
            "largest_batch": s.largest_batch,
            "mean_batch": round(s.requests / s.batches, 3) if s.batches else 0.0,
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "busy_s": round(s.busy_s, 4),
            "oom_splits": s.oom_splits,
            "batch_cap": self.batch_cap,
        }

    def close(self) -> None:
        self._batches.close()
        self.model = None
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()


_OUT_OF_MEMORY = ("out of memory", "can't allocate memory", "cublas_status_alloc_failed")


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's out-of-memory error (CUDA and other accelerators), Python's MemoryError, or an allocator
    failure reported as a RuntimeError (CPU allocator, cuBLAS workspace)."""
    import torch

    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(exc, RuntimeError) and any(text in str(exc).lower() for text in _OUT_OF_MEMORY)


def _stop_token_ids(tokenizer, generation_config) -> set[int]:
    ids: set[int] = set()
    for value in (tokenizer.eos_token_id, getattr(generation_config, "eos_token_id", None)):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(v for v in value if isinstance(v, int))
    return ids


def _torch_dtype(torch, dtype: str, device: str):
    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be auto or one of {', '.join(sorted(_DTYPES))}, got {dtype!r}")
    return getattr(torch, _DTYPES[dtype])
