"""What a judge client spends, and its share of the run's budget (``judge.price``, ``judge.budget``;
docs/judges/cost.md). No count is shared between reward workers: each client holds ``budget / workers``, counted
from 0 in every process, and refuses a call before it is sent when it could pass that share (``Spend.admit``).
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


class Budget:
    """A client's share of ``judge.budget``: what was spent against it and what the calls in flight hold. The
    judges of an ensemble hold one together (ensemble.py): their calls are the judgment's cost."""

    def __init__(self, config: JudgeConfig, workers: int = 1, judges: int = 1):
        self.limits = config.budget.limits
        self.workers = workers
        self.judges = judges  # named in a refusal: the judges whose calls this share covers
        self.shares: dict[str, float] = {}
        for name, limit in self.limits.items():
            share = limit / workers if name == "cost" else limit // workers
            if share <= 0:
                raise ConfigError(
                    f"{PREFIX}.budget.{name}={limit} split between {workers} reward workers leaves each none: "
                    f"raise it to at least {workers}"
                )
            self.shares[name] = share
        self.spent = Spent()
        self.in_flight = 0
        self.held = dict.fromkeys(self.shares, 0.0)  # what the calls in flight may still spend, at most


class Spend:
    """Counts each call into the client's ``JudgeStats`` (in all and per endpoint), counts the tokens of a
    reply whose endpoint reported none, prices them, and refuses a call that would pass the client's share
    of the budget (``budget``, which an ensemble's judges share)."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats, workers: int = 1):
        self.price = config.price
        self.counter = TokenCounter(config.usage_tokenizer)
        self.stats = stats
        self.budget = Budget(config, workers)
        self.max_tokens = config.max_tokens

    def admit(self, endpoint: str, messages: Messages) -> dict[str, float]:
        """Before a call is sent: a ``JudgeBudgetExceeded`` when it could pass a share; else what it holds of
        the shares until it ends (``settle`` or ``failed`` gives it back). A call holds one call, and the most
        it can cost: its prompt (counted) and a reply of max_tokens, or the mean of a call so far when larger."""
        held, budget = self._most(messages), self.budget
        for name, share in budget.shares.items():
            spent = getattr(budget.spent, name)
            if spent + budget.held[name] + held[name] > share:
                raise JudgeBudgetExceeded(endpoint, self._refusal(name, share, spent, held[name]))
        for name in budget.shares:
            budget.held[name] += held[name]
        budget.in_flight += 1
        return held

    def _most(self, messages: Messages) -> dict[str, float]:
        most = {"calls": 1.0}
        if "tokens" in self.budget.shares or "cost" in self.budget.shares:
            spent = self.stats.spent
            replies = max(1, spent.replies)
            prompt = self.counter.prompt(messages)
            completion = self.max_tokens if self.max_tokens is not None else spent.completion_tokens / replies
            most["tokens"] = max(prompt + completion, spent.tokens / replies)
            most["cost"] = max(self.price.cost(prompt, completion), spent.cost / replies)
        return most

    def _release(self, held: dict[str, float]) -> None:
        self.budget.in_flight -= 1
        for name in self.budget.shares:
            self.budget.held[name] -= held[name]

    def _refusal(self, name: str, share: float, spent: float, most: float) -> str:
        budget = self.budget
        held = "" if name == "calls" else f" (and up to {budget.held[name]:.6g} more), {most:.6g} for this call at most"
        judges = f" (the {budget.judges} judges of its ensemble together)" if budget.judges > 1 else ""
        return (
            f"{PREFIX}.budget.{name}={budget.limits[name]:g} split between {budget.workers} reward worker(s) gives "
            f"this worker {share:g}; it has spent {spent:.6g}{judges} with {budget.in_flight} call(s) in flight{held}, "
            "so one more call could pass its share. Each reward worker counts its own calls, from 0 whenever the run starts "
            "(a resumed run gets the whole budget again). The run stops whatever on_judge_error says; raise the "
            "budget to go on."
        )

    def settle(self, reply: JudgeReply, messages: Messages, held: dict[str, float]) -> JudgeReply:
        """The reply with its token counts (counted here where the endpoint reported none) and cost, tallied."""
        self._release(held)
        if reply.tokens_estimated:
            reply = self._counted(reply, messages)
        reply = dataclasses.replace(reply, cost=self.price.cost(reply.prompt_tokens, reply.completion_tokens))
        self._tally(reply.endpoint, reply)
        return reply

    def failed(self, endpoint: str, held: dict[str, float]) -> None:
        """A call that got no reply: counted as a call, with no tokens (the endpoint reported none)."""
        self._release(held)
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
        self.budget.spent.add(reply)
        self.stats.spent.add(reply)
        self.stats.spent_by_endpoint.setdefault(endpoint, Spent()).add(reply)
