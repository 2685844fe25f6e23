"""The request side both GenRM engines share: a request in (chat template, prompt token ids, completion
budget) and what is counted of each answer.

``ChatRequests.prepare`` turns messages and a ``Sampling`` into the ``PreparedRequest`` an engine
generates from: the prompt rendered with the model's chat template and handed over as token ids (so
prompt accounting and context checks are the same in every engine), and the completion budget that
``resolve_max_tokens`` allows. ``Usage`` counts requests and tokens for an engine's ``stats()``.
transformers is imported only by ``ChatRequests.load``, inside a replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl.genrm.engine import ContextTooLong, Generation, RequestRejected, Sampling


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


@dataclass(frozen=True)
class PreparedRequest:
    """What an engine generates from: the prompt token ids and the completion budget."""

    ids: list[int]
    max_tokens: int

    def generation(self, text: str, finish_reason: str, completion_tokens: int) -> Generation:
        """The answer to this request, its prompt tokens counted."""
        return Generation(
            text=text, finish_reason=finish_reason, prompt_tokens=len(self.ids), completion_tokens=completion_tokens
        )


class ChatRequests:
    """A model's tokenizer with the replica's chat-template options and default completion budget."""

    def __init__(self, tokenizer, default_max_tokens: int, chat_template_kwargs: Mapping[str, Any] | None = None):
        self.tokenizer = tokenizer
        self.default_max_tokens = default_max_tokens
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    @classmethod
    def load(
        cls,
        model: str,
        default_max_tokens: int,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        trust_remote_code: bool = False,
    ) -> ChatRequests:
        """The tokenizer of ``model``, which must have a chat template."""
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
        if not tokenizer.chat_template:
            raise ValueError(f"{model}: the tokenizer has no chat template; a chat GenRM needs one")
        return cls(tokenizer, default_max_tokens, chat_template_kwargs)

    def encode(
        self, messages: list[dict[str, str]], chat_template_kwargs: Mapping[str, Any] | None = None
    ) -> list[int]:
        """The prompt token ids; a request's ``chat_template_kwargs`` override the replica's."""
        return encode_chat(self.tokenizer, messages, {**self.chat_template_kwargs, **(chat_template_kwargs or {})})

    def prepare(
        self,
        messages: list[dict[str, str]],
        sampling: Sampling,
        max_model_len: int,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> PreparedRequest:
        """The request encoded and its budget resolved; ``RequestRejected`` for what can never run."""
        ids = self.encode(messages, chat_template_kwargs)
        return PreparedRequest(ids, resolve_max_tokens(sampling, len(ids), max_model_len, self.default_max_tokens))


@dataclass
class Usage:
    """Requests answered and their tokens, as both engines report them in ``stats()``."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, generation: Generation) -> None:
        self.requests += 1
        self.prompt_tokens += generation.prompt_tokens
        self.completion_tokens += generation.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
