"""What a judge client spends, and its share of the run's budget (``judge.price``, ``judge.budget``;
docs/judges/cost.md).

Each reward worker is a process with a client of its own, and no count is shared between them: each client
holds ``budget / workers``, the way ``max_concurrency`` is split. A call is refused before it is sent when it
would pass a share: the calls so far (in flight included) plus one, or the tokens / cost so far plus the
calls in flight and this one at the mean of a call so far. The counts start from 0 in every process, so a
restarted run gets its whole budget again.
"""

from __future__ import annotations

import dataclasses

from writing_rl.judge.base import JudgeReply
from writing_rl.judge.calls import JudgeStats, Spent
from writing_rl.judge.config import PREFIX, JudgeConfig
from writing_rl.judge.errors import JudgeBudgetExceeded
from writing_rl.judge.usage import TokenCounter
from writing_rl.protocols.prompts import Messages
from writing_rl.settings import ConfigError


def sharing_clients(config: JudgeConfig, concurrency: int) -> int:
    """The clients a budget is split between when the caller does not say: as many as share
    ``max_concurrency`` at ``concurrency`` each (reward_loop.config.worker_concurrency gives each of n
    workers ``total // n``, so this is never fewer than n: the shares never add up to more than the budget)."""
    return max(1, config.max_concurrency // max(1, concurrency))


class Spend:
    """Counts each call into the client's ``JudgeStats`` (in all and per endpoint), counts the tokens of a
    reply whose endpoint reported none, prices them, and refuses a call that would pass the client's share."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats, workers: int = 1):
        self.price = config.price
        self.counter = TokenCounter(config.usage_tokenizer)
        self.stats = stats
        self.workers = workers
        self.in_flight = 0
        self.shares: dict[str, float] = {}
        for name, limit in config.budget.limits.items():
            share = limit / workers if name == "cost" else limit // workers
            if share <= 0:
                raise ConfigError(
                    f"{PREFIX}.budget.{name}={limit} split between {workers} reward workers leaves each none: "
                    f"raise it to at least {workers}"
                )
            self.shares[name] = share
        self.limits = config.budget.limits

    def admit(self, endpoint: str) -> None:
        """Before a call is sent: a ``JudgeBudgetExceeded`` when it would pass a share."""
        for name, share in self.shares.items():
            spent = getattr(self.stats.spent, name)
            replies = self.stats.spent.replies
            per_call = 1 if name == "calls" else (spent / replies if replies else 0.0)
            if spent + (self.in_flight + 1) * per_call > share:
                raise JudgeBudgetExceeded(endpoint, self._refusal(name, share, spent, per_call))
        self.in_flight += 1

    def _refusal(self, name: str, share: float, spent: float, per_call: float) -> str:
        mean = "" if name == "calls" else f", {per_call:.4g} a call on average"
        return (
            f"{PREFIX}.budget.{name}={self.limits[name]:g} split between {self.workers} reward worker(s) gives this "
            f"worker {share:g}; it has spent {spent:.6g} with {self.in_flight} call(s) in flight{mean}, so one more "
            "call would pass its share. Each reward worker counts its own calls, from 0 whenever the run starts "
            "(a resumed run gets the whole budget again). The run stops whatever on_judge_error says; raise the "
            "budget to go on."
        )

    def settle(self, reply: JudgeReply, messages: Messages) -> JudgeReply:
        """The reply with its token counts (counted here where the endpoint reported none) and cost, tallied."""
        self.in_flight -= 1
        if reply.tokens_estimated:
            reply = self._counted(reply, messages)
        reply = dataclasses.replace(reply, cost=self.price.cost(reply.prompt_tokens, reply.completion_tokens))
        self._tally(reply.endpoint, reply)
        return reply

    def failed(self, endpoint: str) -> None:
        """A call that got no reply: counted as a call, with no tokens (the endpoint reported none)."""
        self.in_flight -= 1
        self._tally(endpoint, None)

    def _counted(self, reply: JudgeReply, messages: Messages) -> JudgeReply:
        prompt = self.counter.prompt(messages)
        if reply.tokens:  # a reported total without its split: the prompt's share counted, the rest completion
            prompt = min(prompt, reply.tokens)
            completion = reply.tokens - prompt
        else:
            completion = self.counter.completion(reply.text + (reply.refusal or ""))
        return dataclasses.replace(
            reply, prompt_tokens=prompt, completion_tokens=completion, tokens=reply.tokens or prompt + completion
        )

    def _tally(self, endpoint: str, reply: JudgeReply | None) -> None:
        self.stats.spent.add(reply)
        self.stats.spent_by_endpoint.setdefault(endpoint, Spent()).add(reply)
