"""What a GenRM engine is to the pool: one async ``generate(messages, sampling, ...) -> Generation``.

Two engines implement it: ``hf_engine.HFEngine`` (transformers, CPU or GPU, dynamic batching) and
``vllm_engine.VLLMEngine`` (vLLM's async engine, GPU only). Both run inside a pool replica (a Ray
actor) and prepare requests the same way (``requests``: chat template, prompt token ids, completion
budget, usage counts); nothing here imports torch, transformers or vLLM.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Protocol

ENGINES = ("hf", "vllm")


@dataclass(frozen=True)
class Sampling:
    """How to sample one completion. ``max_tokens=None``: the engine's default, clipped to the context
    left after the prompt. ``temperature=0``: greedy. ``seed``: reproducible sampling for this request."""

    max_tokens: int | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> Sampling:
        return cls(**(values or {}))


@dataclass(frozen=True)
class Generation:
    text: str
    # "stop": the model ended (EOS / a stop token); "length": it hit max_tokens.
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RequestRejected(ValueError):
    """The request can never succeed on this model (too long for its context, unusable messages):
    an HTTP 400, not worth a retry on another replica."""


class ContextTooLong(RequestRejected):
    """The prompt plus the completion budget do not fit the model's context. Worded as OpenAI and vLLM
    word it, so that judge clients recognise a configuration error instead of a bad reply (judge/errors.py)."""


class EngineUnavailable(RuntimeError):
    """The engine cannot run here (package missing, no GPU); raised when a replica starts."""


class Engine(Protocol):
    # The longest prompt + completion the engine accepts, in tokens.
    max_model_len: int

    # ``chat_template_kwargs``: the request's, over the replica's (``requests.ChatRequests``).
    async def generate(
        self,
        messages: list[dict[str, str]],
        sampling: Sampling,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> Generation: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
