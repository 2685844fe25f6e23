"""BRPO (Writing-Zero): each rollout judged against a sibling bootstrapped as the group's reference.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.brpo`` under
``writing_rl.reward_loop.group_manager.GroupRewardManager`` (hydra_configs/brpo.yaml, which also sets
``algorithm.adv_estimator=brpo``: the reward is the advantage, writing_rl/reward_loop/advantage.py). Options
under ``reward.custom_reward_function.reward_kwargs``.

Per group: the responses are stripped of closed ``<think>`` blocks; identical answers are one
candidate. ``num_references`` candidates are drawn as references with a seed derived from ``seed`` and
the group's uid (same group, same references, in any arrival order). Every other candidate is judged
against each reference with the pairwise judge prompt, in the orders ``strategy`` names, ``votes``
judge samples per comparison (majority verdict; a split vote is a tie). The judge answers with a
verdict ``[[A]]``/``[[B]]``/``[[C]]`` or a score per answer (``output``: verdict, scores or auto; scores
within ``tie_margin`` tie). Outcomes: +1 when the judge prefers the candidate, -1 when it prefers the
reference, 0 on a tie. ``win_rule``: ``mean`` averages them over references and orders; ``consistent``
(Writing-Zero) gives +1 only for a win in every comparison, else -1. References (and rollouts identical
to one) get 0 without a judge call; a rollout without an answer gets ``format_error_reward``.

A comparison whose reply cannot be read counts as ``on_parse_error`` says (a loss by default). When
every comparison against a reference fails for two or more candidates, the reference is the culprit:
it gets -1 and those comparisons are dropped (its group is not punished for it). With a single
candidate the culprit cannot be told and both get -1.
Judge calls per group and order: (distinct answers - k) * k * votes, i.e. n-1 for k=1.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import PAIRWISE_OUTPUTS, Unreadable, read_comparison, strip_think
from writing_rl.protocols.pairwise_task import STRATEGIES, outcome
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, format_criteria, pairwise_messages
from writing_rl.reward_loop.contract import Member, fallback_outcome, option, read_options, unreadable_flags

OUTCOME_VALUE = {"win": 1.0, "tie": 0.0, "loss": -1.0}
WIN_RULES = ("mean", "consistent")


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.brpo``."""

    # The orders each rollout is judged in against a reference: both (2 calls per comparison), or one:
    # position-advantage (the rollout shown first) or position-disadvantage (the reference first).
    strategy: str = option("both", choices=STRATEGIES)
    # References drawn per group; a rollout's reward is its mean outcome against them.
    num_references: int = option(1, minimum=1)
    # With the group's uid, picks the references reproducibly.
    seed: int = 0
    # The reward of a rollout with no answer (an unclosed <think> block, or empty).
    format_error_reward: float = -1.0
    # A pairwise judge prompt template file; null: the built-in one (writing_rl/protocols/prompts.py).
    template: str | None = None
    # The judge's system message; null: none.
    system_prompt: str | None = PAIRWISE_SYSTEM
    # What the judge ends with: verdict ([[A]]/[[B]]/[[C]]), scores (A: 7, B: 4) or auto (a verdict
    # token when the reply has one, else a score pair).
    output: str = option("auto", choices=PAIRWISE_OUTPUTS)
    # Scores this close or closer are a tie (scores output).
    tie_margin: float = option(0.0, minimum=0)
    # Judge samples per comparison, majority verdict (a split vote is a tie).
    votes: int = option(1, minimum=1)
    # mean: the average +1/0/-1 over orders and references; consistent (Writing-Zero): +1 only for a win
    # in every comparison, else -1.
    win_rule: str = option("mean", choices=WIN_RULES)


@dataclass
class _Tally:
    """One candidate's comparisons: per reference the outcomes by order, and what failed."""

    by_reference: dict[str, list[str]] = field(default_factory=dict)
    unreadable: dict[str, list[Unreadable]] = field(default_factory=dict)
    judge_errors: int = 0

    def consistency(self, orders: int) -> int:
        if orders < 2:
            return -1
        checked = [len(set(o)) == 1 for o in self.by_reference.values() if len(o) == orders]
        if not checked:
            return -1
        return int(all(checked))


def failure_score(**_) -> float:
    """What a failed sample is paid (a judge call that failed, a group that never completed): a loss."""
    return OUTCOME_VALUE["loss"]


def choose_references(candidates: list[str], k: int, seed: int, uid: str) -> list[str]:
    """``k`` distinct candidates, reproducible from (seed, uid) whatever order the rollouts arrived in."""
    pool = sorted(candidates)
    return random.Random(f"{seed}:{uid}").sample(pool, min(k, len(pool)))


def vote(outcomes: list[str]) -> str:
    """The majority outcome of several judge samples; a split vote is a tie."""
    (top, count), *rest = Counter(outcomes).most_common()
    return "tie" if rest and rest[0][1] == count else top


async def compute_score(
    members: list[Member], *, judge: SampleJudge, on_parse_error: str = "loss", **given: Any
) -> list[dict]:
    """``on_parse_error``: reward.reward_kwargs.on_parse_error, passed by the manager."""
    options = read_options(RewardOptions, given)
    num_references, seed, votes, output = options.num_references, options.seed, options.votes, options.output
    answers = [strip_think(m.text) for m in members]
    candidates = list(dict.fromkeys(a for a in answers if a is not None))
    references = choose_references(candidates, min(num_references, max(1, len(candidates) - 1)), seed, members[0].uid)
    to_judge = [c for c in candidates if c not in references]

    first = members[0]
    criteria = first.ground_truth.get("criteria") if isinstance(first.ground_truth, dict) else None
    criteria = format_criteria(list(criteria) if criteria is not None and not isinstance(criteria, str) else criteria)
    slots = STRATEGIES[options.strategy]
    jobs = [(c, r, slot) for c in to_judge for r in references for slot in slots]
    requests = [
        pairwise_messages(
            first.prompt,
            response_a=c if slot == "A" else r,
            response_b=r if slot == "A" else c,
            criteria=criteria,
            template=options.template,
            system=options.system_prompt,
            output="scores" if output == "scores" else "verdict",
        )
        for c, r, slot in jobs
    ]
    # Each comparison is made for the first member with that answer (copies share its judgment).
    owner = {}
    for index, answer in enumerate(answers):
        owner.setdefault(answer, index)
    replies = await asyncio.gather(
        *(judge.member(owner[c]).complete(m) for (c, _, _), m in zip(jobs, requests) for _ in range(votes)),
        return_exceptions=True,
    )

    tallies = {c: _Tally() for c in to_judge}
    for number, (candidate, reference, slot) in enumerate(jobs):
        tally = tallies[candidate]
        samples = replies[number * votes : (number + 1) * votes]
        outcomes, failures = [], []
        for reply in samples:
            if isinstance(reply, JudgeError):
                tally.judge_errors += 1
                continue
            if isinstance(reply, BaseException):
                raise reply
            read = judge.read(reply, read_comparison, output, options.tie_margin)
            if isinstance(read, Unreadable):
                failures.append(read)
            else:
                outcomes.append(outcome(read.verdict, slot))
        if outcomes:
            tally.by_reference.setdefault(reference, []).append(vote(outcomes))
        elif failures:
            tally.unreadable.setdefault(reference, []).append(failures[0])

    culprits, excused = _culprit_references(references, tallies, on_parse_error)
    scores = {c: _candidate_score(tallies[c], excused, on_parse_error, options.win_rule) for c in to_judge}
    results = []
    for answer in answers:
        if answer is None:
            results.append(_result(options.format_error_reward, format_error=1))
        elif answer in culprits:
            results.append(_result(OUTCOME_VALUE["loss"], is_reference=1, parse_error=1))
        elif answer in references:
            results.append(_result(0.0, is_reference=1))
        else:
            tally = tallies[answer]
            failed = [u for reference, found in tally.unreadable.items() for u in found]
            results.append(
                _result(
                    scores[answer],
                    verdict=scores[answer],
                    position_consistent=tally.consistency(len(slots)),
                    judge_error=int(tally.judge_errors > 0),
                    unreadable=failed,
                )
            )
    return results


def _culprit_references(references: list[str], tallies: dict[str, _Tally], on_parse_error: str):
    """(culprits, excused): references every one of whose comparisons failed to read, and those of them
    whose failed comparisons do not count against the candidates (two or more candidates all failed
    against it; with one candidate who broke the judge cannot be told, and both pay a loss)."""
    culprits, excused = set(), set()
    if on_parse_error != "loss":
        return culprits, excused
    for reference in references:
        judged = [t for t in tallies.values() if reference in t.by_reference or reference in t.unreadable]
        if judged and all(reference not in t.by_reference for t in judged):
            culprits.add(reference)
            if len(judged) >= 2:
                excused.add(reference)
    return culprits, excused


def _candidate_score(tally: _Tally, excused: set[str], on_parse_error: str, win_rule: str) -> float:
    outcomes = [o for found in tally.by_reference.values() for o in found]
    for reference, failures in tally.unreadable.items():
        if reference not in excused:
            outcomes += [fallback_outcome(failure, on_parse_error) for failure in failures]
    if not outcomes:
        return 0.0
    if win_rule == "consistent":
        return OUTCOME_VALUE["win"] if all(o == "win" for o in outcomes) else OUTCOME_VALUE["loss"]
    return sum(OUTCOME_VALUE[o] for o in outcomes) / len(outcomes)


def _result(
    score: float,
    verdict: float = 0.0,
    is_reference: int = 0,
    position_consistent: int = -1,
    judge_error: int = 0,
    format_error: int = 0,
    parse_error: int = 0,
    unreadable: list[Unreadable] = (),
) -> dict:
    flags = unreadable_flags(unreadable)
    flags["parse_error"] = max(flags["parse_error"], parse_error)
    return {
        "score": float(score),
        "verdict": float(verdict),
        "is_reference": is_reference,
        "position_consistent": position_consistent,
        "judge_error": judge_error,
        "format_error": format_error,
        **flags,
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/tools/preflight/)


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """One BRPO call: two rollouts of this row's prompt."""
    truth = row.ground_truth if isinstance(row.ground_truth, dict) else {}
    criteria = truth.get("criteria")
    criteria = format_criteria(list(criteria) if criteria is not None and not isinstance(criteria, str) else criteria)
    system = reward_kwargs.get("system_prompt", PAIRWISE_SYSTEM)
    return pairwise_messages(
        row.prompt, response, response, criteria=criteria, template=reward_kwargs.get("template"), system=system
    )
