"""The one judge interface every reward uses, its reply type and its typed failures."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class JudgeReply:
    text: str
    # "stop", "length" (the judge ran out of max_tokens), ... as the endpoint reports it.
    finish_reason: str | None
    latency_s: float
    attempts: int = 1

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class JudgeError(Exception):
    """The judge gave no usable reply after all retries. ``endpoint`` never contains credentials."""

    kind = "error"

    def __init__(self, endpoint: str, cause: str, attempts: int = 1):
        self.endpoint = endpoint
        self.cause = cause
        self.attempts = attempts
        super().__init__(f"judge at {endpoint} failed after {attempts} attempt(s): {cause}")


class JudgeTimeout(JudgeError):
    kind = "timeout"


class JudgeConnectionError(JudgeError):
    kind = "connection"


class JudgeHTTPError(JudgeError):
    kind = "http"

    def __init__(self, endpoint: str, status: int, body: str, attempts: int = 1):
        self.status = status
        super().__init__(endpoint, f"HTTP {status}: {body[:300]}", attempts)


class JudgeResponseError(JudgeError):
    """HTTP 200 but not a chat completion we can read (bad JSON, no choices, no text)."""

    kind = "bad_response"


class Judge(Protocol):
    async def complete(self, messages: Messages) -> JudgeReply:
        """One chat completion. Raises a ``JudgeError`` subclass on failure, never returns None."""
        ...


@dataclass
class CallRecord:
    messages: Messages
    latency_s: float
    reply: str | None = None
    error: str | None = None


@dataclass
class SampleJudge:
    """The judge as one sample sees it: forwards calls and records them for that sample's metrics."""

    judge: Judge
    keep_transcripts: bool = False
    calls: list[CallRecord] = field(default_factory=list)
    errors: list[JudgeError] = field(default_factory=list)

    async def complete(self, messages: Messages) -> JudgeReply:
        start = time.perf_counter()
        try:
            reply = await self.judge.complete(messages)
        except JudgeError as err:
            self.errors.append(err)
            self._record(messages, time.perf_counter() - start, error=str(err))
            raise
        self._record(messages, reply.latency_s, reply=reply.text)
        return reply

    def _record(self, messages: Messages, latency_s: float, **outcome: Any) -> None:
        self.calls.append(CallRecord(messages if self.keep_transcripts else [], latency_s, **outcome))

    @property
    def latencies(self) -> list[float]:
        return [call.latency_s for call in self.calls if call.error is None]

    def transcripts(self) -> list[dict[str, Any]]:
        return [
            {"messages": c.messages, "reply": c.reply, "error": c.error, "latency_s": round(c.latency_s, 4)}
            for c in self.calls
        ]
