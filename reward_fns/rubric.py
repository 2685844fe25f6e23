"""A rubric reward: the response scored by a judge against the row's own weighted criteria (Rubrics as
Rewards, RLCF checklists, WritingBench's per-query criteria). hydra_configs/rubric.yaml runs it under
``ParallelRewardManager``; the formula and the reply formats are in writing_rl/protocols/rubric.py.

Options: ``RewardOptions`` below. An unreadable reply is a loss (0), or stops the step under
``reward.reward_kwargs.on_parse_error=raise``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import Unreadable, strip_think
from writing_rl.protocols.rubric import (
    HIGH,
    LOW,
    RUBRIC_SYSTEM,
    criterion_messages,
    read_criterion_score,
    read_rubric,
    read_rubric_scores,
    rubric_messages,
    rubric_reward,
)
from writing_rl.reward_loop.contract import (
    ProbePlacement,
    RewardMethod,
    by_sign,
    option,
    probe_failure,
    raise_if_asked,
    read_options,
    register,
    unreadable_flags,
)


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.rubric``."""

    # false: one judge call scores every criterion; true: one call per criterion in WritingBench's critic
    # format, so its critic model can serve.
    per_criterion: bool = False
    # The judge's system message; null: none.
    system_prompt: str | None = RUBRIC_SYSTEM
    # Criteria logged per position (rubric/c<i> in the extra info), the same keys on every sample.
    positions: int = option(8, minimum=0)


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping | None = None,
    *,
    judge: SampleJudge,
    on_parse_error: str = "loss",
    **given: Any,
) -> dict[str, float]:
    options = read_options(RewardOptions, given)
    positions, system_prompt = options.positions, options.system_prompt
    criteria = read_rubric(ground_truth)
    prompt = ground_truth.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"ground_truth.prompt must be the request as text, got {prompt!r}")
    answer = strip_think(solution_str)
    if answer is None:  # an unclosed reasoning block or no answer: a loss, no judge call
        return _result(0.0, positions, format_error=1)
    if options.per_criterion:
        requests = [criterion_messages(prompt, answer, c, system_prompt) for c in criteria]
    else:
        requests = [rubric_messages(prompt, answer, criteria, system_prompt)]
    calls = [asyncio.ensure_future(judge.complete(messages)) for messages in requests]
    try:
        replies = await asyncio.gather(*calls)
    except JudgeError:
        for call in calls:
            call.cancel()  # (the sample has failed: its other calls would hold judge slots for nothing)
        return _result(0.0, positions)
    if options.per_criterion:
        read = [judge.read(reply, read_criterion_score) for reply in replies]
        unreadable = [r for r in read if isinstance(r, Unreadable)]
        scores = None if unreadable else read
    else:
        scores = judge.read(replies[0], read_rubric_scores, len(criteria))
        unreadable = [scores] if isinstance(scores, Unreadable) else []
    if unreadable:
        raise_if_asked(unreadable[0], on_parse_error)
        return _result(0.0, positions, unreadable=unreadable)
    return _result(rubric_reward(criteria, scores), positions, scores)


def failure_score(**_: Any) -> float:
    """What a failed sample is paid: the rubric's least reward."""
    return 0.0


def _result(score: float, positions: int, scores=None, unreadable=(), format_error: int = 0) -> dict[str, float]:
    scaled = [(s - LOW) / (HIGH - LOW) for s in scores or []]
    per_position = {f"rubric/c{i + 1}": scaled[i] if i < len(scaled) else -1.0 for i in range(positions)}
    return {"score": score, "format_error": format_error, **per_position, **unreadable_flags(unreadable)}


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/tools/preflight/)


def preflight_row(ground_truth: Any, extra_info: Mapping | None = None) -> None:
    """A row the rubric reward can score: a prompt and a rubric."""
    read_rubric(ground_truth)
    if not isinstance(ground_truth.get("prompt"), str) or not ground_truth["prompt"].strip():
        raise ValueError("ground_truth.prompt must be the request as text")


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """The judge call of this row (the one-call layout; per criterion, its longest criterion's)."""
    criteria = read_rubric(row.ground_truth)
    system = reward_kwargs.get("system_prompt", RUBRIC_SYSTEM)
    if reward_kwargs.get("per_criterion"):
        longest = max(criteria, key=lambda c: len(c.text))
        return criterion_messages(row.ground_truth["prompt"], response, longest, system)
    return rubric_messages(row.ground_truth["prompt"], response, criteria, system)


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """One call for the whole rubric, or one per criterion (per_criterion)."""
    return float(len(read_rubric(row.ground_truth))) if reward_kwargs.get("per_criterion") else 1.0


async def probe_outcome(c, judge: SampleJudge, options: dict, on_parse_error: str) -> str:
    """probe-judge: the probe and the honest answer scored alone; the higher rubric reward wins (no positions:
    position bias does not apply)."""
    row = c.row
    probe, honest = [
        await compute_score(row.data_source, text, row.ground_truth, row.extra_info, judge=judge,
                            on_parse_error=on_parse_error, **options)
        for text in (c.reply, row.honest)
    ]  # fmt: skip
    return probe_failure(probe, judge) or probe_failure(honest, judge) or by_sign(probe["score"] - honest["score"])


METHOD = register(
    compute_score,
    RewardMethod(
        name="rubric",
        options=RewardOptions,
        failure_score=failure_score,
        # A rubric score has no tie to fall back to: an unreadable reply is a loss, or stops the step.
        on_parse_error=("loss", "raise"),
        check_row=preflight_row,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
        probe=ProbePlacement(probe_outcome, overlay="rubric", slots=("-",)),
    ),
)
