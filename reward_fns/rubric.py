"""A rubric reward: the response scored by a judge against the row's own weighted criteria (Rubrics as
Rewards, RLCF checklists, WritingBench's per-query criteria). hydra_configs/rubric.yaml runs it under
``ParallelRewardManager``; the formula and the reply formats are in writing_rl/protocols/rubric.py.

Options (``reward.custom_reward_function.reward_kwargs``): ``per_criterion`` (false: one call scores every
criterion; true: one call per criterion in WritingBench's critic format, so its critic model can serve),
``system_prompt``, ``on_parse_error`` (``loss`` or ``raise``) and ``positions`` (criteria logged per
position as ``rubric/c<i>``).
"""

from __future__ import annotations

import asyncio
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
from writing_rl.reward_loop.contract import raise_if_asked, unreadable_flags
from writing_rl.settings import require

ON_PARSE_ERROR = ("loss", "raise")


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping | None = None,
    *,
    judge: SampleJudge,
    per_criterion: bool = False,
    system_prompt: str | None = RUBRIC_SYSTEM,
    on_parse_error: str = "loss",
    positions: int = 8,
    **_: Any,
) -> dict[str, float]:
    require(on_parse_error in ON_PARSE_ERROR, f"reward_kwargs.on_parse_error must be one of {ON_PARSE_ERROR}")
    criteria = read_rubric(ground_truth)
    prompt = ground_truth.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"ground_truth.prompt must be the request as text, got {prompt!r}")
    answer = strip_think(solution_str)
    if answer is None:  # an unclosed reasoning block or no answer: a loss, no judge call
        return _result(0.0, positions, format_error=1)
    if per_criterion:
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
    if per_criterion:
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
