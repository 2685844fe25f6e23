"""The one judge interface every reward uses, its reply type and its typed failures."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Protocol

from writing_rl.protocols import Unreadable, read_reply
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
    # usage.total_tokens as the endpoint reports it (0: not reported).
    tokens: int = 0
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


class JudgeError(Exception):
    """The judge gave no usable reply after all retries. ``endpoint`` never contains credentials."""

    kind = "error"
    # What the call met before it failed (the client sets them): 429s, its concurrency limit, hedges sent.
    rate_limited = 0
    concurrency_limit = 0
    hedges = 0

    def __init__(self, endpoint: str, cause: str, attempts: int = 1):
        self.endpoint = endpoint
        self.cause = cause
        self.attempts = attempts
        super().__init__(f"judge at {endpoint} failed after {attempts} attempt(s): {cause}")


class JudgeTimeout(JudgeError):
    kind = "timeout"


class JudgeConnectionError(JudgeError):
    kind = "connection"


class JudgeUnavailable(JudgeConnectionError):
    """Every endpoint was left out as failing for ``judge.all_down_timeout_s``; ``endpoint`` lists them."""

    kind = "all_endpoints_down"


class JudgeRateLimited(JudgeError):
    """The judge kept answering 429 for longer than ``judge.rate_limit_wait_s``."""

    kind = "rate_limited"


class JudgeHTTPError(JudgeError):
    kind = "http"

    def __init__(self, endpoint: str, status: int, body: str, attempts: int = 1):
        self.status = status
        super().__init__(endpoint, self._cause(status, body), attempts)

    def _cause(self, status: int, body: str) -> str:
        return f"HTTP {status}: {body[:300]}"


# How endpoints refuse a prompt longer than the model's context (matched lowercased).
_CONTEXT_STATUSES = (400, 413, 422)
_CONTEXT_PHRASES = (
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI, vLLM, Mistral
    "is longer than the model's context length",  # SGLang, Together
    "is longer than the maximum model length",  # vLLM's engine: "The decoder prompt (length N) ..."
    "prompt is too long",  # Anthropic-compatible endpoints
    "input is too long",
)
# The token counts in those messages; the first pattern that matches gives the number.
_CONTEXT_NUMBERS = {
    "max_context": (
        r"maximum context length is (\d+)",
        r"model's context length \((\d+)",
        r"maximum model length of (\d+)",
        r"> (\d+) maximum",
        r"(\d+) maximum context length",
    ),
    "requested": (r"you requested (?:about )?(\d+) tokens", r"for a total of at least (\d+) tokens"),
    "prompt_tokens": (
        r"\((\d+) in the messages",
        r"(\d+) input tokens",
        r"messages resulted in (\d+) tokens",
        r"the input \((\d+) tokens\)",
        r"prompt \(length (\d+)\)",
        r"prompt is too long: (\d+) tokens",
        r"prompt contains (\d+) tokens",
        r"\((\d+) of text input",
    ),
    "completion_tokens": (
        r"(\d+) in the completion",
        r"requested (\d+) output tokens",
        r"is too large: (\d+)",  # vLLM: "'max_tokens' or 'max_completion_tokens' is too large: N"
        r"(\d+) in the output",
    ),
}


def is_context_length_error(status: int, body: str) -> bool:
    """Whether an error reply says the prompt plus max_tokens do not fit the judge's context."""
    lowered = body.lower()
    return status in _CONTEXT_STATUSES and any(phrase in lowered for phrase in _CONTEXT_PHRASES)


def context_length_numbers(body: str) -> dict[str, int | None]:
    """``max_context``, ``requested``, ``prompt_tokens``, ``completion_tokens`` as the message states them."""
    numbers: dict[str, int | None] = {}
    for name, patterns in _CONTEXT_NUMBERS.items():
        found = (re.search(pattern, body, re.IGNORECASE) for pattern in patterns)
        match = next((m for m in found if m), None)
        numbers[name] = int(match.group(1)) if match else None
    return numbers


def _judge_words(body: str, limit: int = 200) -> str:
    """The message of an OpenAI-style error body (else the body) on one line: the judge's own words
    without the JSON around them."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    said = error.get("message") if isinstance(error, dict) else None
    if not isinstance(said, str):
        said = data.get("message") if isinstance(data, dict) else None
    return " ".join((said if isinstance(said, str) else body).split())[:limit]


class JudgeContextLengthError(JudgeHTTPError):
    """The judge refused the request as longer than its context: a configuration error, never retried.
    The token counts are those the judge's message states (None where it states none)."""

    kind = "context_length"

    def __init__(self, endpoint: str, status: int, body: str, attempts: int = 1):
        self.said = _judge_words(body, limit=1000)  # what the judge said, without the advice added below
        numbers = context_length_numbers(body)
        self.max_context: int | None = numbers["max_context"]
        self.requested: int | None = numbers["requested"]
        self.prompt_tokens: int | None = numbers["prompt_tokens"]
        self.completion_tokens: int | None = numbers["completion_tokens"]
        super().__init__(endpoint, status, body, attempts)

    def _counts(self) -> str:
        """E.g. "judge context 8192 tokens, requested 9000 tokens = 8488 prompt + 512 completion"."""
        terms = ((self.prompt_tokens, "prompt"), (self.completion_tokens, "completion"))
        split = " + ".join(f"{n} {what}" for n, what in terms if n is not None)
        parts = [] if self.max_context is None else [f"judge context {self.max_context} tokens"]
        if self.requested is not None:
            parts.append(f"requested {self.requested} tokens" + (f" = {split}" if split else ""))
        elif split:
            parts.append(f"{split} tokens")
        return ", ".join(parts) or "the judge's message states no token counts"

    def _cause(self, status: int, body: str) -> str:
        return (
            f"HTTP {status}: context length exceeded, a configuration error (not retried): the judge prompt "
            f"(request + responses) plus judge.max_tokens exceed the judge's context ({self._counts()}). "
            "Lower actor_rollout_ref.rollout.response_length / data.max_response_length, lower "
            "reward.reward_kwargs.judge.max_tokens, or serve the judge with a longer max_model_len. "
            f"The judge said: {_judge_words(body)!r}"
        )


class JudgeResponseError(JudgeError):
    """HTTP 200 but not a chat completion we can read (bad JSON, no choices, no text)."""

    kind = "bad_response"


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


@dataclass
class CallRecord:
    messages: Messages
    latency_s: float
    reply: str | None = None
    error: str | None = None
    member: int | None = None  # in a group: the member the call was made for (None: the whole group)
    retries: int = 0  # attempts after the first (429s not counted: they are rate_limited)
    rate_limited: int = 0
    tokens: int = 0
    concurrency_limit: int = 0
    hedges: int = 0


@dataclass
class SampleJudge:
    """The judge as one sample (or one group) sees it: forwards calls and records them for its metrics.

    A group reward makes the calls of one member through ``judge.member(i)``; the group's record then
    says which calls each member's reward came from (calls made without it, for the whole group, count for
    every member). Each call is *counted* once (calls, tokens, retries, 429s): a group-wide call on the
    group's first member, so that sums over samples are what the judge served.
    """

    # The extra-info keys ``metrics`` measures for each sample.
    METRIC_KEYS: ClassVar[tuple[str, ...]] = (
        "judge_error",
        "judge_latency_s",
        "judge_calls",
        "judge_rate_limited",
        "judge_retries",
        "judge_tokens",
        "judge_concurrency_limit",
        "judge_hedges",
    )

    judge: Judge
    keep_transcripts: bool = False
    calls: list[CallRecord] = field(default_factory=list)
    errors: list[JudgeError] = field(default_factory=list)
    # (reply text, why) of each reply the reward could not read: the manager's parse-error guard shows one.
    unreadable: list[tuple[str, Unreadable]] = field(default_factory=list)
    _for_member: int | None = None

    def member(self, index: int) -> SampleJudge:
        """The same judge, recording its calls as made for member ``index``."""
        return SampleJudge(
            self.judge, self.keep_transcripts, self.calls, self.errors, self.unreadable, _for_member=index
        )

    def read(self, reply: JudgeReply, reader: Callable[..., Any], *args: Any) -> Any:
        """``reader(reply.text, *args)`` through ``protocols.read_reply`` (a truncated or refused reply is
        unreadable whatever it holds); an unreadable reply is remembered."""
        value = read_reply(reply, reader, *args)
        if isinstance(value, Unreadable):
            self.unreadable.append((reply.text, value))
        return value

    async def complete(self, messages: Messages) -> JudgeReply:
        start = time.perf_counter()
        try:
            reply = await self.judge.complete(messages)
        except JudgeError as err:
            self.errors.append(err)
            met = {"rate_limited": err.rate_limited, "concurrency_limit": err.concurrency_limit, "hedges": err.hedges}
            self._record(messages, time.perf_counter() - start, error=str(err), retries=err.attempts - 1, **met)
            raise
        met = {"rate_limited": reply.rate_limited, "concurrency_limit": reply.concurrency_limit, "hedges": reply.hedges}
        self._record(
            messages, reply.latency_s, reply=reply.text, retries=reply.attempts - 1, tokens=reply.tokens, **met
        )
        return reply

    def _record(self, messages: Messages, latency_s: float, **outcome: Any) -> None:
        kept = messages if self.keep_transcripts else []
        self.calls.append(CallRecord(kept, latency_s, member=self._for_member, **outcome))

    def calls_for(self, member: int | None = None) -> list[CallRecord]:
        """All calls, or those a member's reward came from: its own and the group-wide ones."""
        return self.calls if member is None else [c for c in self.calls if c.member in (None, member)]

    @property
    def latencies(self) -> list[float]:
        return [call.latency_s for call in self.calls if call.error is None]

    def counted_for(self, member: int | None = None) -> list[CallRecord]:
        """The calls a member is counted for: its own, and the group-wide ones on member 0."""
        if member is None:
            return self.calls
        return [c for c in self.calls if c.member == member or (c.member is None and member == 0)]

    def metrics(self, member: int | None = None) -> dict[str, float]:
        """The judge keys of extra info (``METRIC_KEYS``), over the calls (of one member): any failed call
        and the mean latency of the calls its reward came from; the number of calls, 429s met, retries,
        hedges and reply tokens it is counted for; and the client's concurrency limit when the last call was sent (with
        no call: the client's limit now; 0 for a judge without one)."""
        calls, counted = self.calls_for(member), self.counted_for(member)
        latencies = [c.latency_s for c in calls if c.error is None]
        limit = calls[-1].concurrency_limit if calls else getattr(self.judge, "concurrency_limit", 0)
        return {
            "judge_error": int(any(c.error is not None for c in calls)),
            "judge_latency_s": sum(latencies) / len(latencies) if latencies else 0.0,
            "judge_calls": len(counted),
            "judge_rate_limited": sum(c.rate_limited for c in counted),
            "judge_retries": sum(c.retries for c in counted),
            "judge_tokens": sum(c.tokens for c in counted),
            "judge_concurrency_limit": int(limit or 0),
            "judge_hedges": sum(c.hedges for c in counted),
        }

    def transcripts(self, member: int | None = None) -> list[dict[str, Any]]:
        return [
            {"messages": c.messages, "reply": c.reply, "error": c.error, "latency_s": round(c.latency_s, 4)}
            for c in self.calls_for(member)
        ]


# The judge keys of a sample that made no judge call (``SampleJudge.METRIC_KEYS``), of the types a sample
# that made calls has: verl builds each extra-info column from its first sample.
NO_CALLS = {**dict.fromkeys(SampleJudge.METRIC_KEYS, 0), "judge_latency_s": 0.0}
