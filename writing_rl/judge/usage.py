"""A judge call's token counts: ``usage`` as the endpoint reports it, or counted here when it reports none
(a tokenizer when ``judge.usage_tokenizer`` names one, else an estimate from characters)."""

from __future__ import annotations

import math
from typing import Any

from writing_rl.protocols.prompts import Messages
from writing_rl.settings import ConfigError

# The estimate without a tokenizer: about 4 characters a token in English text (OpenAI's rule of thumb;
# fewer for Chinese, more for code), plus a few tokens of chat formatting per message.
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4


def _count(usage: dict, key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reported_usage(completion: Any) -> dict[str, Any]:
    """``tokens`` (``usage.total_tokens``), ``prompt_tokens`` and ``completion_tokens`` of a chat-completion
    body, and ``tokens_estimated``: true when the endpoint did not report both counts (or reported nonsense:
    not a whole number >= 0), which the client then counts itself; ``tokens`` stays what was reported (0: none)."""
    usage = completion.get("usage") if isinstance(completion, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion_tokens, total = (
        _count(usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
    )
    if prompt is None or completion_tokens is None:
        return {"tokens": total or 0, "prompt_tokens": 0, "completion_tokens": 0, "tokens_estimated": True}
    # (a total below its parts is nonsense: the parts win)
    tokens = total if total is not None and total >= prompt + completion_tokens else prompt + completion_tokens
    return {
        "tokens": tokens,
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "tokens_estimated": False,
    }


class TokenCounter:
    """Counts a call's tokens when the endpoint reports none: with the tokenizer at ``path`` (the judge
    model's, for counts close to the endpoint's), else from characters."""

    def __init__(self, path: str | None = None):
        self.path = path
        self.tokenizer = _load_tokenizer(path) if path else None

    def prompt(self, messages: Messages) -> int:
        if self.tokenizer is not None and getattr(self.tokenizer, "chat_template", None):
            return len(self.tokenizer.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True))
        texts = [_text(message.get("content")) for message in messages]
        if self.tokenizer is not None:
            return sum(len(self.tokenizer.encode(text, add_special_tokens=False)) for text in texts)
        return sum(TOKENS_PER_MESSAGE + math.ceil(len(text) / CHARS_PER_TOKEN) for text in texts)

    def completion(self, text: str) -> int:
        if self.tokenizer is not None:
            return len(self.tokenizer.encode(text, add_special_tokens=False))
        return math.ceil(len(text) / CHARS_PER_TOKEN)


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


def _load_tokenizer(path: str):
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError, ImportError) as exc:
        raise ConfigError(
            f"reward.reward_kwargs.judge.usage_tokenizer={path!r}: cannot load it ({type(exc).__name__}: "
            f"{str(exc)[:200]}); name a tokenizer directory or Hugging Face name, or null to estimate from characters"
        ) from None
