"""What a ``GenRMPool`` is asked for and how it fails: ``PoolConfig`` with its checks, and the errors
the pool raises beyond the judge layer's own.

Nothing here imports Ray, so ``serve-judge``'s argument handling and the HTTP server can build a
config and tell the pool's errors apart before (or without) starting a pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from writing_rl.genrm.engine import ENGINES, Sampling
from writing_rl.judge.errors import JudgeError

PLACEMENT_STRATEGIES = ("SPREAD", "PACK", "STRICT_SPREAD", "STRICT_PACK")
DEVICES = ("auto", "cpu", "cuda")


class JudgeRequestError(JudgeError):
    """The GenRM refused the request itself (too long for its context, messages its chat template
    rejects); another attempt would fail the same way."""

    kind = "bad_request"


class JudgeEngineError(JudgeError):
    """The engine failed while generating (e.g. out of memory); the replica itself is still alive."""

    kind = "engine"


class PoolStartError(RuntimeError):
    """The pool could not start: resources never became available, or a replica failed to load."""


@dataclass(frozen=True)
class PoolConfig:
    # Local directory (or hub id, where the nodes can download) of a chat model with a chat template.
    model: str
    engine: str = "hf"
    replicas: int = 1
    # Name the pool answers to (OpenAI "model" field); default: ``model``.
    served_model_name: str | None = None
    # hf: "cpu", "cuda" (one GPU per replica) or "auto" (cuda when the cluster has a GPU per replica).
    # vllm: always cuda, with tensor_parallel_size GPUs per replica.
    device: str = "auto"
    tensor_parallel_size: int = 1
    # CPUs reserved per replica (hf on CPU: also its torch threads).
    num_cpus: float = 1.0
    dtype: str = "auto"
    # Longest prompt + completion accepted; default: the model's max_position_embeddings (hf) / vLLM's choice.
    max_model_len: int | None = None
    # Completion budget of a request that names none (clipped to the context left after the prompt).
    default_max_tokens: int = 4096
    # hf: most requests in one generate call, and optionally most padded tokens (prompt + new) in it.
    max_batch_size: int = 16
    max_batch_tokens: int | None = None
    # vllm: fraction of each GPU for weights + KV cache; extra AsyncEngineArgs.
    gpu_memory_utilization: float = 0.9
    engine_kwargs: Mapping[str, Any] = field(default_factory=dict)
    # Passed to the chat template of every request (e.g. {"enable_thinking": false} for Qwen3).
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    trust_remote_code: bool = False
    seed: int = 0
    placement_strategy: str = "SPREAD"
    # Tries per request: a request whose replica dies is retried on another (or the replacement).
    max_attempts: int = 3
    # Whole-request limit, retries and waiting for a live replica included.
    request_timeout_s: float = 600.0
    # Limit for reserving resources and loading the model, at start and for each replacement.
    start_timeout_s: float = 900.0
    # Consecutive failed starts of one replica's replacement before that replica is given up.
    max_restarts: int = 3
    # Sampling of ``complete()`` (the judge interface): greedy, default max_tokens.
    sampling: Sampling = field(default_factory=Sampling)

    @property
    def name(self) -> str:
        return self.served_model_name or self.model

    def validate(self) -> PoolConfig:
        checks = [
            (self.engine in ENGINES, f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}"),
            (self.replicas >= 1, f"replicas must be >= 1, got {self.replicas}"),
            (self.device in DEVICES, f"device must be one of {', '.join(DEVICES)}, got {self.device!r}"),
            (self.tensor_parallel_size >= 1, f"tensor_parallel_size must be >= 1, got {self.tensor_parallel_size}"),
            (
                self.engine == "vllm" or self.tensor_parallel_size == 1,
                "tensor_parallel_size > 1 needs engine=vllm (an hf replica uses at most one GPU)",
            ),
            (self.engine == "hf" or self.device != "cpu", "the vllm engine runs on GPUs only; use engine=hf on CPU"),
            (self.num_cpus > 0, f"num_cpus must be > 0, got {self.num_cpus}"),
            (self.max_batch_size >= 1, f"max_batch_size must be >= 1, got {self.max_batch_size}"),
            (self.default_max_tokens >= 1, f"default_max_tokens must be >= 1, got {self.default_max_tokens}"),
            (0 < self.gpu_memory_utilization <= 1, "gpu_memory_utilization must be in (0, 1]"),
            (
                self.placement_strategy in PLACEMENT_STRATEGIES,
                f"placement_strategy must be one of {', '.join(PLACEMENT_STRATEGIES)}, got {self.placement_strategy!r}",
            ),
            (self.max_attempts >= 1, f"max_attempts must be >= 1, got {self.max_attempts}"),
            (self.request_timeout_s > 0, f"request_timeout_s must be > 0, got {self.request_timeout_s}"),
            (self.start_timeout_s > 0, f"start_timeout_s must be > 0, got {self.start_timeout_s}"),
            (self.max_restarts >= 0, f"max_restarts must be >= 0, got {self.max_restarts}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"GenRM pool: {message}")
        return self
