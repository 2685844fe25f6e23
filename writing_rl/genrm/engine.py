"""What a GenRM engine is to the pool: one async ``generate(messages, sampling) -> Generation``.

Two engines implement it: ``hf_engine.HFEngine`` (transformers, CPU or GPU, dynamic batching) and
``vllm_engine.VLLMEngine`` (vLLM's async engine, GPU only). Both run inside a pool replica (a Ray
actor); nothing here imports torch, transformers or vLLM.
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
    word it, so that judge clients recognise a configuration error (judge/base.py) instead of a bad reply."""


class EngineUnavailable(RuntimeError):
    """The engine cannot run here (package missing, no GPU); raised when a replica starts."""


class Engine(Protocol):
    # The longest prompt + completion the engine accepts, in tokens.
    max_model_len: int

    async def generate(self, messages: list[dict[str, str]], sampling: Sampling) -> Generation: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def encode_chat(tokenizer, messages: list[dict[str, str]], chat_template_kwargs: Mapping[str, Any]) -> list[int]:
    """Prompt token ids: the model's chat template with the generation prompt. The template already
    holds any BOS the model wants, so no special tokens are added again."""
    try:
        text = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, **chat_template_kwargs
        )
    except Exception as exc:  # jinja raises its own errors for messages the template refuses
        raise RequestRejected(f"the model's chat template rejected the messages: {exc}") from None
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def resolve_max_tokens(sampling: Sampling, prompt_tokens: int, max_model_len: int, default_max_tokens: int) -> int:
    """The completion budget of one request, or ``RequestRejected`` naming the limit it breaks.

    Same rule as vLLM's OpenAI server: an explicit ``max_tokens`` must fit in the context left after
    the prompt; without one, the default is clipped to what is left.
    """
    room = max_model_len - prompt_tokens
    if room <= 0:
        raise ContextTooLong(
            f"This model's maximum context length is {max_model_len} tokens, but the prompt has {prompt_tokens} "
            f"tokens ({prompt_tokens} in the messages): shorten the judge prompt or raise max_model_len"
        )
    if sampling.max_tokens is None:
        return min(default_max_tokens, room)
    if sampling.max_tokens > room:
        raise ContextTooLong(
            f"This model's maximum context length is {max_model_len} tokens. However, you requested "
            f"{prompt_tokens + sampling.max_tokens} tokens ({prompt_tokens} in the messages, {sampling.max_tokens} "
            f"in the completion): at most {room} completion tokens fit"
        )
    return sampling.max_tokens
