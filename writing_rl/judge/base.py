"""The one judge interface every reward uses (``Judge.complete``), its reply type, and the judge that
makes no call. The failures it raises: judge/errors.py; what one sample makes of it: judge/sample.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from writing_rl.judge.errors import JudgeUnavailable
from writing_rl.protocols.prompts import Messages

# finish_reason values (lowercased) with which endpoints say the reply hit the token limit.
TOKEN_LIMIT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length", "token_limit"})


@dataclass(frozen=True)
class JudgeReply:
    text: str
    # "stop", "length" (the judge ran out of max_tokens), ... as the endpoint reports it.
    finish_reason: str | None
    latency_s: float
    attempts: int = 1
    # The model's refusal (OpenAI's message.refusal); text is then "" unless the endpoint sent both.
    refusal: str | None = None
    # usage.total_tokens as the endpoint reports it (0: not reported), and usage.prompt_tokens and
    # .completion_tokens; tokens_estimated: the endpoint reported no such split, so the client counted the
    # three (judge/usage.py). cost: what the tokens cost at judge.price (0: not priced).
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    cost: float = 0.0
    # The endpoint that answered (its URL without credentials; "" for a judge that is no HTTP client).
    endpoint: str = ""
    # 429s this call met (queued again, not counted in attempts) and the client's concurrency limit when
    # its last request was sent (0: a client without one).
    rate_limited: int = 0
    concurrency_limit: int = 0
    # Copies of a slow request sent to another endpoint (hedge_after), each a paid request.
    hedges: int = 0

    @property
    def truncated(self) -> bool:
        return (self.finish_reason or "").lower() in TOKEN_LIMIT_REASONS

    @property
    def refused(self) -> bool:
        return bool(self.refusal) or (self.finish_reason or "").lower() == "content_filter"


class Judge(Protocol):
    async def complete(self, messages: Messages) -> JudgeReply:
        """One chat completion. Raises a ``JudgeError`` subclass on failure, never returns None."""
        ...


class NoJudge:
    """A judge that makes no call: every ``complete`` fails with ``reason``. The manager hands it to a
    reward fn whose sample is a failure before any judging (its group never completed), so the fn
    returns its own failure result, with its own extra-info keys."""

    def __init__(self, reason: str):
        self.reason = reason

    async def complete(self, messages: Messages) -> JudgeReply:
        raise JudgeUnavailable("(no judge)", self.reason)
