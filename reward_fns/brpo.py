"""BRPO (Writing-Zero): each rollout judged against a sibling bootstrapped as the group's reference.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.brpo`` under
``writing_rl.reward_loop.group_manager.GroupRewardManager`` (hydra_configs/brpo.yaml, which also sets
``algorithm.adv_estimator=brpo``: the reward is the advantage, declared below, writing_rl/reward_loop/advantage.py). Options
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
from writing_rl.protocols import PAIRWISE_OUTPUTS, Unreadable, strip_think
from writing_rl.protocols.comparison import STRATEGIES, comparison_messages, consistency, read_outcome
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, format_criteria
from writing_rl.reward_loop.contract import (
    PROBE_FIRST,
    Member,
    ProbePlacement,
    RewardMethod,
    by_sign,
    fallback_outcome,
    option,
    probe_failure,
    probe_group,
    read_options,
    register,
    reward_as_advantage,
    uid_where,
    unreadable_flags,
)

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
        """1 when every reference judged in every order gave one outcome, 0 when one did not, -1 when none can tell."""
        checked = [consistency(found, orders) for found in self.by_reference.values()]
        checked = [c for c in checked if c != -1]
        return int(all(checked)) if checked else -1


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
    answers = [strip_think(m.text) for m in members]
    candidates = list(dict.fromkeys(a for a in answers if a is not None))
    k = min(options.num_references, max(1, len(candidates) - 1))
    references = choose_references(candidates, k, options.seed, members[0].uid)
    comparisons = [
        (candidate, reference, slot)
        for candidate in candidates
        if candidate not in references
        for reference in references
        for slot in STRATEGIES[options.strategy]
    ]
    replies = await _judge(comparisons, members, answers, judge, options)
    tallies = _tally(comparisons, replies, judge, options)
    return _rewards(answers, references, tallies, options, on_parse_error)


async def _judge(comparisons, members: list[Member], answers, judge: SampleJudge, options: RewardOptions) -> list:
    """``votes`` replies per comparison, in order; a failed call is its ``JudgeError``. Each comparison
    is made for the first member with that answer (copies share its judgment)."""
    first = members[0]
    criteria = first.ground_truth.get("criteria") if isinstance(first.ground_truth, dict) else None
    criteria = format_criteria(criteria)  # a string, one checklist entry, or a list (or parquet's array) of them
    owner = {}
    for index, answer in enumerate(answers):
        owner.setdefault(answer, index)
    calls = [
        judge.member(owner[candidate]).complete(
            comparison_messages(
                first.prompt,
                candidate,
                reference,
                slot,
                criteria=criteria,
                template=options.template,
                system=options.system_prompt,
                output=options.output,
            )
        )
        for candidate, reference, slot in comparisons
        for _ in range(options.votes)
    ]
    replies = await asyncio.gather(*calls, return_exceptions=True)
    for reply in replies:
        if isinstance(reply, BaseException) and not isinstance(reply, JudgeError):
            raise reply
    return replies


def _tally(comparisons, replies: list, judge: SampleJudge, options: RewardOptions) -> dict[str, _Tally]:
    """Each candidate's outcomes (the majority of its votes) and failures, per reference and order."""
    tallies = {}
    for number, (candidate, reference, slot) in enumerate(comparisons):
        tally = tallies.setdefault(candidate, _Tally())
        outcomes, failures = [], []
        for reply in replies[number * options.votes : (number + 1) * options.votes]:
            if isinstance(reply, JudgeError):
                tally.judge_errors += 1
                continue
            read = judge.read(reply, read_outcome, slot, options.output, options.tie_margin)
            (failures if isinstance(read, Unreadable) else outcomes).append(read)
        if outcomes:
            tally.by_reference.setdefault(reference, []).append(vote(outcomes))
        elif failures:
            tally.unreadable.setdefault(reference, []).append(failures[0])
    return tallies


def _rewards(answers, references, tallies: dict[str, _Tally], options: RewardOptions, on_parse_error: str) -> list:
    culprits, excused = _culprit_references(references, tallies, on_parse_error)
    orders = len(STRATEGIES[options.strategy])
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
            score = _candidate_score(tally, excused, on_parse_error, options.win_rule)
            failed = [u for found in tally.unreadable.values() for u in found]
            results.append(
                _result(
                    score,
                    verdict=score,
                    position_consistent=tally.consistency(orders),
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
    """One BRPO call: two rollouts of this row's prompt, as training sends it (the run's template, system prompt
    and output)."""
    truth = row.ground_truth if isinstance(row.ground_truth, dict) else {}
    criteria = format_criteria(truth.get("criteria"))  # a string, a checklist entry, or a list (parquet's array)
    options = read_options(RewardOptions, dict(reward_kwargs))
    return comparison_messages(row.prompt, response, response, "A", criteria=criteria, template=options.template,
                               system=options.system_prompt, output=options.output)  # fmt: skip


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """A group's (n - k) * k comparisons, each in every order and ``votes`` times, shared by its n rollouts."""
    options = read_options(RewardOptions, dict(reward_kwargs))
    k = min(options.num_references, max(1, group_size - 1))
    comparisons = max(0, group_size - k) * k * len(STRATEGIES[options.strategy]) * options.votes
    return comparisons / max(1, group_size)


async def probe_outcome(c, judge: SampleJudge, options: dict, on_parse_error: str) -> str:
    """probe-judge: a group of two, the honest answer and the probe, under a uid for which ``choose_references``
    draws the honest answer as the bootstrap reference; ``strategy`` shows the probe at A or B. The probe's
    reward (+1, 0, -1) is its outcome."""
    options = {**options, "strategy": PROBE_FIRST[c.slot]}
    answers, seed = [strip_think(c.row.honest), strip_think(c.reply)], int(options.get("seed", 0))
    uid = "probe-unplaced"
    if None not in answers and answers[0] != answers[1]:
        uid = uid_where(lambda u: choose_references(answers, 1, seed, u) == [answers[0]], f"{c.probe}-{c.slot}")
    group = probe_group(c.row, uid, [c.row.honest, c.reply])
    honest, probe = await compute_score(group, judge=judge, on_parse_error=on_parse_error, **options)
    if probe.get("is_reference"):  # the fn drew the probe as the reference after all: no comparison
        return "unjudged"
    return probe_failure(probe, judge) or by_sign(probe["score"])


METHOD = register(
    compute_score,
    RewardMethod(
        name="brpo",
        options=RewardOptions,
        failure_score=failure_score,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
        probe=ProbePlacement(probe_outcome, overlay="brpo"),
        # algorithm.adv_estimator=brpo: the reward (+1 / 0 / -1 against the bootstrap reference) is the advantage;
        # grpo would subtract the group mean again and move the reference (docs/methods/brpo.md).
        advantage_estimators=(("brpo", reward_as_advantage),),
    ),
)
