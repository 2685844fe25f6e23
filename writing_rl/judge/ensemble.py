"""A judge ensemble (``judge.ensemble``): every judge asked each judgment at once; one reply that holds each
judge's reply or failure, read through ``SampleJudge.read`` (``votes.py``). What a failed judge, a quorum not met
(``EnsembleFailed``) and a failure no reply can cause (``stops_the_run``) do, and the one shared budget
(``spend.Budget``): docs/judges/ensembles.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from writing_rl.judge.base import JudgeReply, Messages
from writing_rl.judge.calls import JudgeStats, Spent
from writing_rl.judge.config import PREFIX, JudgeConfig
from writing_rl.judge.errors import JudgeBudgetExceeded, JudgeContextLengthError, JudgeError, JudgeHTTPError
from writing_rl.judge.http import OpenAIJudge
from writing_rl.judge.spend import Budget, sharing_clients
from writing_rl.settings import ConfigError

# The extra-info keys of an ensemble's counts begin so; each is the tracker's metric of that name.
KEY_PREFIX = "judge/ensemble/"
# HTTP statuses no reply can cause: a wrong key, permission, model or URL (reward_loop/scoring.py stops on them).
CONFIGURATION_STATUSES = (401, 403, 404)


@dataclass(frozen=True)
class MemberAnswer:
    """One judge's part of an ensemble call: its reply, or the error its call failed with."""

    name: str
    reply: JudgeReply | None = None
    error: JudgeError | None = None


@dataclass(frozen=True)
class EnsembleReply(JudgeReply):
    """The judges' answers to one request. Its counts (tokens, cost, retries, 429s, hedges) are theirs added up,
    its latency the whole call's. Its text is empty: each judge's reply is read (``SampleJudge.read``)."""

    answers: tuple[MemberAnswer, ...] = ()
    split: str = "tie"

    @property
    def transcript(self) -> str:
        """Each judge's reply or failure, under its name (for the sample's transcripts)."""
        parts = [f"[{a.name}] {a.reply.text if a.reply is not None else f'(failed: {a.error})'}" for a in self.answers]
        return "\n\n".join(parts)


class EnsembleFailed(JudgeError):
    """Fewer of the ensemble's judges answered than ``judge.ensemble.quorum``; ``reply``: what those that did
    answered (their spend is the sample's)."""

    kind = "ensemble"

    def __init__(self, endpoint: str, cause: str, reply: EnsembleReply):
        super().__init__(endpoint, cause, reply.attempts)
        self.reply = reply
        self.rate_limited, self.concurrency_limit, self.hedges = (
            reply.rate_limited,
            reply.concurrency_limit,
            reply.hedges,
        )


def stops_the_run(err: JudgeError) -> bool:
    """A failure no reply causes, raised whatever the other judges answered."""
    if isinstance(err, (JudgeContextLengthError, JudgeBudgetExceeded)):
        return True
    return isinstance(err, JudgeHTTPError) and err.status in CONFIGURATION_STATUSES


class EnsembleJudge:
    """``complete(messages) -> EnsembleReply``: each judge of ``config.ensemble`` asked at once. The keyword
    arguments are ``OpenAIJudge``'s, for every judge: ``concurrency`` is the worker's share of the judge's
    ``max_concurrency`` (a judge with a max_concurrency of its own gets as large a share of it)."""

    def __init__(
        self,
        config: JudgeConfig,
        concurrency: int | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        workers: int | None = None,
        upstream_group: str = "",
    ):
        self.config = config.validate()
        self.split, self.quorum = config.ensemble.split, config.ensemble.quorum
        self.judges: dict[str, OpenAIJudge] = {}
        for index, (name, judge) in enumerate(config.ensemble.judges(config, PREFIX)):
            share = _share(judge, config, concurrency)
            try:
                self.judges[name] = OpenAIJudge(judge, share, sleep, workers, upstream_group)
            except ConfigError as err:  # (its API key's variable unset)
                raise ConfigError(str(err).replace(f"{PREFIX}.", f"{PREFIX}.ensemble.members[{index}].")) from None
        held_by = workers or sharing_clients(config, concurrency or config.max_concurrency)
        self.budget = Budget(config, held_by, judges=len(self.judges))
        for judge in self.judges.values():
            judge.spend.budget = self.budget
        self.endpoint = ", ".join(f"{name} ({judge.endpoint})" for name, judge in self.judges.items())

    @property
    def judge_names(self) -> tuple[str, ...]:
        return tuple(self.judges)

    @property
    def concurrency_limit(self) -> int:
        """Judgments the ensemble may have in flight now: as many as its most limited judge."""
        return min(judge.concurrency_limit for judge in self.judges.values())

    @property
    def stats(self) -> JudgeStats:
        """Its judges' counters added up; what each endpoint served under ``<name> <endpoint>``."""
        total = JudgeStats(concurrency_limit=self.concurrency_limit)
        for name, judge in self.judges.items():
            stats = judge.stats
            total.requests += stats.requests
            total.retries += stats.retries
            total.failures.update(stats.failures)
            total.rate_limited += stats.rate_limited
            total.limit_decreases += stats.limit_decreases
            _add_spent(total.spent, stats.spent)
            for endpoint, spent in stats.spent_by_endpoint.items():
                _add_spent(total.spent_by_endpoint.setdefault(f"{name} {endpoint}", Spent()), spent)
        return total

    async def complete(self, messages: Messages) -> EnsembleReply:
        start = time.perf_counter()
        asked = [asyncio.ensure_future(self._ask(name, judge, messages)) for name, judge in self.judges.items()]
        try:
            answers = tuple(await asyncio.gather(*asked))
        except BaseException:  # cancelled (or a bug): no judge's call outlives the ensemble's
            for call in asked:
                call.cancel()
            await asyncio.gather(*asked, return_exceptions=True)
            raise
        stopping = next((a.error for a in answers if a.error is not None and stops_the_run(a.error)), None)
        if stopping is not None:
            raise stopping
        reply = self._reply(answers, time.perf_counter() - start)
        answered = sum(a.reply is not None for a in answers)
        if answered < self.quorum:
            failures = "; ".join(f"{a.name}: {a.error}" for a in answers if a.error is not None)
            cause = (
                f"{answered} of the ensemble's {len(answers)} judges answered, under judge.ensemble.quorum="
                f"{self.quorum}: {failures}"
            )
            raise EnsembleFailed(self.endpoint, cause, reply)
        return reply

    @staticmethod
    async def _ask(name: str, judge: OpenAIJudge, messages: Messages) -> MemberAnswer:
        try:
            return MemberAnswer(name, reply=await judge.complete(messages))
        except JudgeError as err:
            return MemberAnswer(name, error=err)

    def _reply(self, answers: tuple[MemberAnswer, ...], latency_s: float) -> EnsembleReply:
        replies = [a.reply for a in answers if a.reply is not None]
        errors = [a.error for a in answers if a.error is not None]
        spent = {key: sum(getattr(r, key) for r in replies) for key in ("tokens", "prompt_tokens", "completion_tokens")}
        limits = [r.concurrency_limit for r in replies if r.concurrency_limit]
        return EnsembleReply(
            text="",
            finish_reason=None,
            latency_s=latency_s,
            attempts=1 + sum(r.attempts - 1 for r in replies) + sum(max(e.attempts - 1, 0) for e in errors),
            tokens_estimated=any(r.tokens_estimated for r in replies),
            cost=sum(r.cost for r in replies),
            endpoint=", ".join(r.endpoint for r in replies),
            rate_limited=sum(r.rate_limited for r in replies) + sum(e.rate_limited for e in errors),
            concurrency_limit=min(limits) if limits else 0,
            hedges=sum(r.hedges for r in replies) + sum(e.hedges for e in errors),
            answers=answers,
            split=self.split,
            **spent,
        )

    async def close(self) -> None:
        for judge in self.judges.values():
            await judge.close()


def sample_keys(names: tuple[str, ...], calls: list[Any], reads: list[Any]) -> dict[str, float]:
    """The extra-info keys of an ensemble over one sample's calls (``CallRecord``s) and readings
    (``ReadRecord``s): each judge's calls, failures, unreadable replies, tokens and cost (``..._total``, summed
    over a step), the judgments read and split, and the share of judgments (two or more judges read) on which
    every judge read the same (``agreement``, the step's mean; -1: none)."""
    answers = [answer for call in calls for answer in call.answers]
    keys: dict[str, float] = {}
    for name in names:
        mine = [a for a in answers if a.name == name]
        replies = [a.reply for a in mine if a.reply is not None]
        keys[f"{KEY_PREFIX}{name}/calls_total"] = len(mine)
        keys[f"{KEY_PREFIX}{name}/failures_total"] = len(mine) - len(replies)
        keys[f"{KEY_PREFIX}{name}/unreadable_total"] = sum(name in read.unreadable for read in reads)
        keys[f"{KEY_PREFIX}{name}/tokens_total"] = sum(r.tokens for r in replies)
        keys[f"{KEY_PREFIX}{name}/cost_total"] = float(sum(r.cost for r in replies))
    compared = [read.agreed for read in reads if read.agreed is not None]
    keys[f"{KEY_PREFIX}judgments_total"] = len(reads)
    keys[f"{KEY_PREFIX}splits_total"] = sum(read.split for read in reads)
    keys[f"{KEY_PREFIX}agreement"] = sum(compared) / len(compared) if compared else -1.0
    return keys


def _share(judge: JudgeConfig, config: JudgeConfig, concurrency: int | None) -> int | None:
    """A judge's concurrency: the worker's share of its own max_concurrency, as ``concurrency`` is of the
    ensemble's (None: the judge's max_concurrency, as for one judge)."""
    if concurrency is None or judge.max_concurrency == config.max_concurrency:
        return concurrency
    return max(1, judge.max_concurrency * concurrency // config.max_concurrency)


def _add_spent(total: Spent, spent: Spent) -> None:
    for field in dataclasses.fields(Spent):
        setattr(total, field.name, getattr(total, field.name) + getattr(spent, field.name))
