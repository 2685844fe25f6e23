"""Pointwise score rewards: each rollout of a prompt scored alone by the judge, 1 to 10, and the scores
normalised within the group. The cheapest judged reward (one call per distinct answer), and the baseline every
pairwise method must beat (bench/reward_fidelity.py).

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.pointwise`` under ``GroupRewardManager``
(hydra_configs/pointwise.yaml). Options under ``reward.custom_reward_function.reward_kwargs``.

Per group: the responses are stripped of closed ``<think>`` blocks and identical answers are judged once (the
copies share the score). The judge sees the request, the row's criteria when it has them, and the answer in a
fence nothing inside can close; it reasons, then ends with a JSON object ``{"score": <1-10>}`` on its last line,
the only place a score is read (``read_final_score``: none there, two, or one out of range is unreadable). An answer
that writes a score object into itself gets no score read: the judge's last line could be the answer's, quoted.
``normalise`` turns the scores into rewards in [0, 1]: ``win_rate`` (the share of the group's other scored
rollouts a rollout outscores, a tie half: only the order within the group counts, as the pairwise methods'
rewards) or ``scale`` ((score - 1) / 9).

A failure never pays more than a loss: a rollout whose reply cannot be read is paid what ``on_parse_error``
says (the loss, 0; a tie, 0.5; or the step stops) and is left out of its siblings' comparisons; a call that
failed after its retries gets the neutral 0.5 with ``judge_error=1``, which the manager pays as
``on_judge_error`` says (by default the loss); a rollout with no answer gets ``format_error_reward``.

The prompt and its reader are ``writing_rl.protocols.pointwise``'s, which ``writing-rl eval`` also sends and reads.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import Unreadable, strip_think
from writing_rl.protocols.comparison import POINTS
from writing_rl.protocols.pointwise import HIGH, LOW, pointwise_messages, read_final_score
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM
from writing_rl.reward_loop.contract import (
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
    unreadable_flags,
)

NORMALISE = ("win_rate", "scale")


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.pointwise``."""

    # How scores become rewards in [0, 1]: win_rate (the share of the group's other scored rollouts a rollout
    # outscores, a tie half) or scale ((score - 1) / 9).
    normalise: str = option("win_rate", choices=NORMALISE)
    # A judge prompt template file with {prompt}, {response} (fenced) and {criteria}; null: the built-in one.
    template: str | None = None
    # The judge's system message; null: none.
    system_prompt: str | None = PAIRWISE_SYSTEM
    # The reward of a rollout with no answer (an unclosed <think> block, or empty): at most the loss.
    format_error_reward: float = option(0.0, maximum=0.0)


def score_messages(prompt: str, answer: str, criteria: Any, options: RewardOptions) -> list[dict]:
    """The judge call that scores ``answer`` alone."""
    return pointwise_messages(prompt, answer, criteria, options.template, options.system_prompt)


def failure_score(**_) -> float:
    """What a failed sample is paid (a judge call that failed, a group that never completed): a loss."""
    return 0.0


async def compute_score(
    members: list[Member], *, judge: SampleJudge, on_parse_error: str = "loss", **given: Any
) -> list[dict]:
    """``on_parse_error``: reward.reward_kwargs.on_parse_error, passed by the manager."""
    options = read_options(RewardOptions, given)
    answers = [strip_think(m.text) for m in members]
    distinct = sorted({a for a in answers if a is not None})
    owner = {answer: answers.index(answer) for answer in distinct}  # the member whose judge records its call
    first = members[0]
    criteria = first.ground_truth.get("criteria") if isinstance(first.ground_truth, dict) else None
    scored = await asyncio.gather(
        *(_scored(judge.member(owner[a]), score_messages(first.prompt, a, criteria, options), a) for a in distinct)
    )
    score_of = dict(zip(distinct, scored))
    readable = [score_of[a] for a in answers if a is not None and isinstance(score_of[a], float)]
    results = []
    for answer in answers:
        if answer is None:
            results.append(_result(options.format_error_reward, format_error=1))
            continue
        score = score_of[answer]
        if isinstance(score, JudgeError):
            results.append(_result(POINTS["tie"], judge_error=1))
        elif isinstance(score, Unreadable):
            results.append(_result(POINTS[fallback_outcome(score, on_parse_error)], unreadable=[score]))
        else:
            results.append(_result(_normalised(score, readable, options.normalise), judge_score=score))
    return results


async def _scored(judge: SampleJudge, messages: list[dict], answer: str) -> float | Unreadable | JudgeError:
    try:
        reply = await judge.complete(messages)
    except JudgeError as err:
        return err
    return judge.read(reply, read_final_score, answer)


def _normalised(score: float, group: list[float], normalise: str) -> float:
    """``score`` among the group's readable scores (``group`` holds it once per rollout that has it)."""
    if normalise == "scale":
        return (score - LOW) / (HIGH - LOW)
    others = list(group)
    others.remove(score)  # the rollout itself
    if not others:
        return POINTS["tie"]  # nothing to be compared with
    return sum(POINTS[by_sign(score - other)] for other in others) / len(others)


def _result(reward: float, judge_score: float = -1.0, format_error: int = 0, judge_error: int = 0, unreadable=()):
    return {
        "score": reward,
        "judge_score": judge_score,  # the judge's 1-10, -1 when there is none
        "format_error": format_error,
        "judge_error": judge_error,
        **unreadable_flags(unreadable),
    }


# ---------------------------------------------------------------- writing-rl preflight and probe-judge


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """The judge call that scores ``response`` for this row, as training sends it."""
    criteria = row.ground_truth.get("criteria") if isinstance(row.ground_truth, dict) else None
    return score_messages(row.prompt, response, criteria, read_options(RewardOptions, dict(reward_kwargs)))


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """One call per distinct answer: at most one per rollout."""
    return 1.0


async def probe_outcome(c, judge: SampleJudge, options: dict, on_parse_error: str) -> str:
    """probe-judge: a group of two, the probe and the honest answer, each scored alone (no positions: position
    bias does not apply); the higher score wins."""
    group = probe_group(c.row, "probe", [c.reply, c.row.honest])  # (either normalisation orders two the same)
    probe, honest = await compute_score(group, judge=judge, on_parse_error=on_parse_error, **options)
    found = probe_failure(probe, judge) or probe_failure(honest, judge)
    if found:
        return found
    same = strip_think(c.reply) == strip_think(c.row.honest)
    return "unjudged" if same else by_sign(probe["score"] - honest["score"])


METHOD = register(
    compute_score,
    RewardMethod(
        name="pointwise",
        options=RewardOptions,
        failure_score=failure_score,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
        probe=ProbePlacement(probe_outcome, overlay="pointwise", slots=("-",)),
    ),
)
