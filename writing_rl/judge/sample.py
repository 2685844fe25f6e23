"""The judge as one sample (or one group) sees it: ``SampleJudge`` forwards its calls and records them
for the sample's extra info (``judge_calls``, ``judge_latency_s``, ...; an ensemble's ``judge/ensemble/...``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from writing_rl.judge.base import Judge, JudgeReply
from writing_rl.judge.ensemble import EnsembleReply, MemberAnswer, sample_keys
from writing_rl.judge.errors import JudgeError
from writing_rl.judge.votes import read_answers
from writing_rl.protocols import Unreadable, read_reply
from writing_rl.protocols.prompts import Messages


@dataclass
class CallRecord:
    messages: Messages
    latency_s: float
    reply: str | None = None
    finish_reason: str | None = None  # the reply's: "length" for a reply cut at max_tokens
    error: str | None = None
    member: int | None = None  # in a group: the member the call was made for (None: the whole group)
    retries: int = 0  # attempts after the first (429s not counted: they are rate_limited)
    rate_limited: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False  # counted by the client: the endpoint reported no usage
    cost: float = 0.0
    concurrency_limit: int = 0
    hedges: int = 0
    calls: int = 1  # judge calls it made: an ensemble's asks each of its judges
    answers: tuple[MemberAnswer, ...] = ()  # an ensemble's: each judge's reply or failure


@dataclass(frozen=True)
class ReadRecord:
    """An ensemble's reply read (votes.Reading): for a group, by the member whose judge read it."""

    member: int | None
    unreadable: tuple[str, ...]  # the judges whose reply could not be read
    agreed: bool | None
    split: bool


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
        "judge_prompt_tokens",
        "judge_completion_tokens",
        "judge_tokens_estimated",
        "judge_cost",
        "judge_concurrency_limit",
        "judge_hedges",
    )

    judge: Judge
    keep_transcripts: bool = False
    calls: list[CallRecord] = field(default_factory=list)
    errors: list[JudgeError] = field(default_factory=list)
    # (reply text, why) of each reply the reward could not read: the manager's parse-error guard shows one.
    unreadable: list[tuple[str, Unreadable]] = field(default_factory=list)
    # The worker's judge client, whose own keys (an ensemble's) every sample carries, one scored with a
    # NoJudge too (verl needs the same keys on every sample); default: ``judge``.
    client: Any = None
    reads: list[ReadRecord] = field(default_factory=list)
    _for_member: int | None = None

    def member(self, index: int) -> SampleJudge:
        """The same judge, recording its calls as made for member ``index``."""
        return SampleJudge(
            self.judge,
            self.keep_transcripts,
            self.calls,
            self.errors,
            self.unreadable,
            self.client,
            self.reads,
            _for_member=index,
        )

    def read(self, reply: JudgeReply, reader: Callable[..., Any], *args: Any) -> Any:
        """``reader(reply.text, *args)`` through ``protocols.read_reply`` (a truncated or refused reply is
        unreadable whatever it holds); an unreadable reply is remembered. An ensemble's reply: each judge's
        reply read so, the readings combined (votes.py)."""
        if isinstance(reply, EnsembleReply):
            reading = read_answers(reply.answers, reader, args, reply.split)
            self.reads.append(ReadRecord(self._for_member, reading.unreadable, reading.agreed, reading.split))
            value, text = reading.value, reply.transcript
        else:
            value, text = read_reply(reply, reader, *args), reply.text
        if isinstance(value, Unreadable):
            self.unreadable.append((text, value))
        return value

    async def complete(self, messages: Messages) -> JudgeReply:
        start = time.perf_counter()
        try:
            reply = await self.judge.complete(messages)
        except JudgeError as err:
            self.errors.append(err)
            met = {"rate_limited": err.rate_limited, "concurrency_limit": err.concurrency_limit, "hedges": err.hedges}
            retries = max(err.attempts - 1, 0)  # (a call refused by the budget made no attempt)
            answered = getattr(err, "reply", None)  # an ensemble's: what the judges that answered spent
            parts = {**_spent(answered), **_judges(answered)} if isinstance(answered, EnsembleReply) else {}
            self._record(messages, time.perf_counter() - start, error=str(err), retries=retries, **met, **parts)
            raise
        met = {"rate_limited": reply.rate_limited, "concurrency_limit": reply.concurrency_limit, "hedges": reply.hedges}
        text = reply.transcript if isinstance(reply, EnsembleReply) else reply.text
        parts = _judges(reply) if isinstance(reply, EnsembleReply) else {}
        finish = getattr(reply, "finish_reason", None)
        self._record(messages, reply.latency_s, reply=text, finish_reason=finish, retries=reply.attempts - 1, **met,
                     **_spent(reply), **parts)  # fmt: skip
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
        return _counted(self.calls, member)

    def metrics(self, member: int | None = None) -> dict[str, float]:
        """The judge keys of extra info (``METRIC_KEYS``), over the calls (of one member): any failed call
        and the mean latency of the calls its reward came from; the number of calls, 429s met, retries,
        hedges, tokens (in all, prompt, completion; the calls whose tokens the client counted because the endpoint
        reported none) and cost it is counted for; and the client's concurrency limit when the last call was sent
        (with no call: the client's limit now; 0 for a judge without one)."""
        calls, counted = self.calls_for(member), self.counted_for(member)
        latencies = [c.latency_s for c in calls if c.error is None]
        limit = calls[-1].concurrency_limit if calls else getattr(self.judge, "concurrency_limit", 0)
        return {
            "judge_error": int(any(c.error is not None for c in calls)),
            "judge_latency_s": sum(latencies) / len(latencies) if latencies else 0.0,
            "judge_calls": sum(c.calls for c in counted),
            "judge_rate_limited": sum(c.rate_limited for c in counted),
            "judge_retries": sum(c.retries for c in counted),
            "judge_tokens": sum(c.tokens for c in counted),
            "judge_prompt_tokens": sum(c.prompt_tokens for c in counted),
            "judge_completion_tokens": sum(c.completion_tokens for c in counted),
            "judge_tokens_estimated": sum(c.tokens_estimated for c in counted),
            "judge_cost": float(sum(c.cost for c in counted)),
            "judge_concurrency_limit": int(limit or 0),
            "judge_hedges": sum(c.hedges for c in counted),
            **self._client_keys(counted, member),
        }

    def _client_keys(self, counted: list[CallRecord], member: int | None) -> dict[str, float]:
        names = getattr(self.client or self.judge, "judge_names", ())
        return sample_keys(names, counted, _counted(self.reads, member)) if names else {}

    def transcripts(self, member: int | None = None) -> list[dict[str, Any]]:
        return [
            {"messages": c.messages, "reply": c.reply, "finish_reason": c.finish_reason, "error": c.error,
             "latency_s": round(c.latency_s, 4)}  # fmt: skip
            for c in self.calls_for(member)
        ]


def _counted(records: list, member: int | None) -> list:
    """The records (calls, readings) a member is counted for: its own, and the group-wide ones on member 0."""
    if member is None:
        return records
    return [r for r in records if r.member == member or (r.member is None and member == 0)]


def _judges(reply: EnsembleReply) -> dict[str, Any]:
    return {"calls": len(reply.answers), "answers": reply.answers}


def _spent(reply: JudgeReply) -> dict[str, Any]:
    keys = ("tokens", "prompt_tokens", "completion_tokens", "tokens_estimated", "cost")
    return {key: getattr(reply, key) for key in keys}


# The judge keys of a sample that made no judge call (``SampleJudge.METRIC_KEYS``), of the types a sample
# that made calls has: verl builds each extra-info column from its first sample.
NO_CALLS = {**dict.fromkeys(SampleJudge.METRIC_KEYS, 0), "judge_latency_s": 0.0, "judge_cost": 0.0}
