"""Reward fns for bench/group_rewards.py: a naive all-pairs round robin, and judge-free fns that
isolate the cost of gathering groups."""

from __future__ import annotations

import asyncio
import itertools

from reward_fns.brpo import OUTCOME_VALUE
from writing_rl.protocols import verdict_or_none
from writing_rl.protocols.comparison import outcome
from writing_rl.protocols.prompts import pairwise_messages


async def round_robin(members, *, judge, judge_tokenizer=None):
    """Every pair of rollouts judged in both orders: n(n-1) calls; reward = mean outcome vs the others."""
    texts = [m.text for m in members]
    jobs = [(i, j) for i, j in itertools.permutations(range(len(texts)), 2)]  # i shown as A
    replies = await asyncio.gather(
        *(judge.complete(pairwise_messages(members[0].prompt, texts[i], texts[j])) for i, j in jobs)
    )
    totals = [[] for _ in texts]
    for (i, j), reply in zip(jobs, replies):
        verdict = verdict_or_none(reply.text)
        if verdict is not None:
            totals[i].append(OUTCOME_VALUE[outcome(verdict, "A")])
            totals[j].append(OUTCOME_VALUE[outcome(verdict, "B")])
    return [{"score": sum(t) / len(t) if t else 0.0} for t in totals]


async def group_noop(members, *, judge, judge_tokenizer=None):
    return [{"score": 0.0} for _ in members]


async def sample_noop(data_source, solution_str, ground_truth, extra_info=None, *, judge):
    return {"score": 0.0}
