"""BRPO (Writing-Zero): each rollout judged against a sibling bootstrapped as the group's reference.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.brpo`` under
``writing_rl.group_manager.GroupRewardManager`` (hydra_configs/brpo.yaml). Options under
``reward.custom_reward_function.reward_kwargs``.

Per group: the responses are stripped of closed ``<think>`` blocks; identical answers are one
candidate. ``num_references`` candidates are drawn as references with a seed derived from ``seed`` and
the group's uid (same group, same references, in any arrival order). Every other candidate is judged
against each reference with the pairwise judge prompt: +1 when the judge prefers it, -1 when it prefers
the reference, 0 on a tie, averaged over references and orders. References (and rollouts identical to
one) get 0 without a judge call; a rollout without an answer gets ``format_error_reward``.
Judge calls per group and order: (distinct answers - k) * k, i.e. n-1 for k=1.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Mapping

from writing_rl.groups import Member
from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.parsing import parse_verdict, strip_think
from writing_rl.prompts import format_criteria, pairwise_messages

from .pairwise import STRATEGIES, outcome

OUTCOME_VALUE = {"win": 1.0, "tie": 0.0, "loss": -1.0}


@dataclass
class _Tally:
    """One candidate's comparisons: outcome values, and per reference the outcomes by order."""

    values: list[float] = field(default_factory=list)
    by_reference: dict[str, list[str]] = field(default_factory=dict)
    parse_errors: int = 0
    judge_errors: int = 0

    def consistency(self, orders: int) -> int:
        if orders < 2:
            return -1
        checked = [len(set(o)) == 1 for o in self.by_reference.values() if len(o) == orders]
        if not checked:
            return -1
        return int(all(checked))


def choose_references(candidates: list[str], k: int, seed: int, uid: str) -> list[str]:
    """``k`` distinct candidates, reproducible from (seed, uid) whatever order the rollouts arrived in."""
    pool = sorted(candidates)
    return random.Random(f"{seed}:{uid}").sample(pool, min(k, len(pool)))


async def compute_score(
    members: list[Member],
    *,
    judge: SampleJudge,
    strategy: str = "both",
    num_references: int = 1,
    seed: int = 0,
    format_error_reward: float = -1.0,
    template: str | None = None,
) -> list[dict]:
    if strategy not in STRATEGIES:
        raise ValueError(f"reward_kwargs.strategy must be one of {sorted(STRATEGIES)}, got {strategy!r}")
    if num_references < 1:
        raise ValueError(f"reward_kwargs.num_references must be >= 1, got {num_references}")
    answers = [strip_think(m.text) for m in members]
    candidates = list(dict.fromkeys(a for a in answers if a is not None))
    references = choose_references(candidates, min(num_references, max(1, len(candidates) - 1)), seed, members[0].uid)
    to_judge = [c for c in candidates if c not in references]

    first = members[0]
    criteria = first.ground_truth.get("criteria") if isinstance(first.ground_truth, dict) else None
    criteria = format_criteria(list(criteria) if criteria is not None and not isinstance(criteria, str) else criteria)
    slots = STRATEGIES[strategy]
    jobs = [(c, r, slot) for c in to_judge for r in references for slot in slots]
    requests = [
        pairwise_messages(
            first.prompt,
            response_a=c if slot == "A" else r,
            response_b=r if slot == "A" else c,
            criteria=criteria,
            template=template,
        )
        for c, r, slot in jobs
    ]
    # Each comparison is made for the first member with that answer (copies share its judgment).
    owner = {}
    for index, answer in enumerate(answers):
        owner.setdefault(answer, index)
    replies = await asyncio.gather(
        *(judge.member(owner[c]).complete(m) for (c, _, _), m in zip(jobs, requests)), return_exceptions=True
    )

    tallies = {c: _Tally() for c in to_judge}
    for (candidate, reference, slot), reply in zip(jobs, replies):
        tally = tallies[candidate]
        if isinstance(reply, JudgeError):
            tally.judge_errors += 1
            continue
        if isinstance(reply, BaseException):
            raise reply
        verdict = None if reply.truncated else parse_verdict(reply.text)
        if verdict is None:
            tally.parse_errors += 1
            continue
        result = outcome(verdict, slot)
        tally.values.append(OUTCOME_VALUE[result])
        tally.by_reference.setdefault(reference, []).append(result)

    results = []
    for answer in answers:
        if answer is None:
            results.append(_result(format_error_reward, format_error=1))
        elif answer in references:
            results.append(_result(0.0, is_reference=1))
        else:
            tally = tallies[answer]
            mean = sum(tally.values) / len(tally.values) if tally.values else 0.0
            results.append(
                _result(
                    mean,
                    verdict=mean,
                    position_consistent=tally.consistency(len(slots)),
                    parse_error=int(tally.parse_errors > 0),
                    judge_error=int(tally.judge_errors > 0),
                )
            )
    return results


def _result(
    score: float,
    verdict: float = 0.0,
    is_reference: int = 0,
    position_consistent: int = -1,
    parse_error: int = 0,
    judge_error: int = 0,
    format_error: int = 0,
) -> dict:
    return {
        "score": float(score),
        "verdict": float(verdict),
        "is_reference": is_reference,
        "position_consistent": position_consistent,
        "parse_error": parse_error,
        "judge_error": judge_error,
        "format_error": format_error,
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/preflight.py)


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """One BRPO call: two rollouts of this row's prompt."""
    truth = row.ground_truth if isinstance(row.ground_truth, dict) else {}
    criteria = truth.get("criteria")
    criteria = format_criteria(list(criteria) if criteria is not None and not isinstance(criteria, str) else criteria)
    return pairwise_messages(row.prompt, response, response, criteria=criteria, template=reward_kwargs.get("template"))
