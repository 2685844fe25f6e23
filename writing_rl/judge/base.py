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
    member: int | None = None  # in a group: the member the call was made for (None: the whole group)


@dataclass
class SampleJudge:
    """The judge as one sample (or one group) sees it: forwards calls and records them for its metrics.

    A group reward makes the calls of one member through ``judge.member(i)``; the group's record then
    says which calls each member's reward came from (calls made without it count for every member).
    """

    judge: Judge
    keep_transcripts: bool = False
    calls: list[CallRecord] = field(default_factory=list)
    errors: list[JudgeError] = field(default_factory=list)
    _for_member: int | None = None

    def member(self, index: int) -> SampleJudge:
        """The same judge, recording its calls as made for member ``index``."""
        return SampleJudge(self.judge, self.keep_transcripts, self.calls, self.errors, _for_member=index)

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
        kept = messages if self.keep_transcripts else []
        self.calls.append(CallRecord(kept, latency_s, member=self._for_member, **outcome))

    def calls_for(self, member: int | None = None) -> list[CallRecord]:
        """All calls, or those a member's reward came from: its own and the group-wide ones."""
        return self.calls if member is None else [c for c in self.calls if c.member in (None, member)]

    @property
    def latencies(self) -> list[float]:
        return [call.latency_s for call in self.calls if call.error is None]

    def metrics(self, member: int | None = None) -> dict[str, float]:
        """The judge keys of extra info: any failed call, mean latency, number of calls (of one member)."""
        calls = self.calls_for(member)
        latencies = [c.latency_s for c in calls if c.error is None]
        return {
            "judge_error": int(any(c.error is not None for c in calls)),
            "judge_latency_s": sum(latencies) / len(latencies) if latencies else 0.0,
            "judge_calls": len(calls),
        }

    def transcripts(self, member: int | None = None) -> list[dict[str, Any]]:
        return [
            {"messages": c.messages, "reply": c.reply, "error": c.error, "latency_s": round(c.latency_s, 4)}
            for c in self.calls_for(member)
        ]
