"""Writing-RL's reward: the policy's response judged against a reference answer.

Two verl entry points (``reward.custom_reward_function.path=pkg://reward_fns.pairwise``), options under
``reward.custom_reward_function.reward_kwargs``:

- ``compute_score`` under ``writing_rl.reward_loop.manager.ParallelRewardManager`` (hydra_configs/writing_rl.yaml):
  each rollout judged as it arrives; with the curriculum (writing_rl/curriculum/), the rollouts of
  a prompt share the level the first one pinned and the last report decides the advance.
- ``compute_group_score`` under ``writing_rl.reward_loop.group_manager.GroupRewardManager``: the same reward with
  the rollouts of a prompt scored together.

Ground truth is Writing-RL's row format, as published: ``{prompt, target, criteria, id}`` where
``target`` is one reference or a list of references ordered easiest first.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl.curriculum import CURRICULUM, Curriculum
from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import PAIRWISE_OUTPUTS, Unreadable, strip_think
from writing_rl.protocols.comparison import STRATEGIES, comparison_messages, consistency, read_outcome
from writing_rl.protocols.pairwise_task import WritingRLTask, read_writing_rl_task
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM
from writing_rl.reward_loop.contract import (
    PROBE_FIRST,
    Member,
    ProbePlacement,
    RewardMethod,
    fallback_outcome,
    is_validation,
    option,
    probe_failure,
    read_options,
    register,
    unreadable_flags,
)


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.pairwise``."""

    # The orders the response is judged in against the reference: position-disadvantage (the reference
    # first, Writing-RL's default), position-advantage (the response first) or both (2 calls; the mean).
    strategy: str = option("position-disadvantage", choices=STRATEGIES)
    # The reward of a win, a tie and a loss in one order.
    win_score: float = 1.0
    tie_score: float = 0.5
    loss_score: float = 0.0
    # The reward after a judge call failure under reward.reward_kwargs.on_judge_error=neutral; null: tie_score.
    neutral_reward: float | None = None
    # A pairwise judge prompt template file; null: the built-in one (writing_rl/protocols/prompts.py).
    template: str | None = None
    # The judge's system message; null: none, as in Writing-RL's own prompt.
    system_prompt: str | None = PAIRWISE_SYSTEM
    # What the judge ends with: verdict ([[A]]/[[B]]/[[C]]), scores (A: 7, B: 4; a tie within tie_margin)
    # or auto (a verdict token when the reply has one, else a score pair).
    output: str = option("verdict", choices=PAIRWISE_OUTPUTS)
    # Scores this close or closer are a tie (scores output).
    tie_margin: float = option(0.0, minimum=0)
    # With the curriculum: a group moves to its next reference when at least one rollout won and the share
    # of its rollouts that won reaches this (0: any win, as in Writing-RL).
    advance_threshold: float = option(0.0, minimum=0)

    @property
    def neutral(self) -> float:
        return self.tie_score if self.neutral_reward is None else self.neutral_reward


async def judge_against(
    response: str, task: WritingRLTask, reference: str, judge: SampleJudge, how: RewardOptions, on_parse_error: str
) -> dict:
    """The reward of one response against ``reference``.

    - The response's closed ``<think>`` block is dropped; no answer (unclosed block, empty) = loss,
      ``format_error=1``, no judge call.
    - Each judged order gives win/tie/loss; the score is the mean over the orders.
    - An order whose reply cannot be read (no or conflicting verdicts, truncated, refused) counts as
      ``on_parse_error`` says (a loss by default) and is counted (``parse_error``,
      ``judge_truncated``, ``judge_refusal``).
    - A judge call failure gives the neutral reward; the manager marks it ``judge_error=1`` or fails
      the step, as ``reward.reward_kwargs.on_judge_error`` says.
    """
    answer = strip_think(response)
    if answer is None:
        return _result(how.loss_score, outcomes=["loss"], format_error=1)

    slots = STRATEGIES[how.strategy]
    requests = [
        comparison_messages(
            task.prompt,
            answer,
            reference,
            slot,
            criteria=task.criteria,
            template=how.template,
            system=how.system_prompt,
            output=how.output,
        )
        for slot in slots
    ]
    try:
        replies = await asyncio.gather(*(judge.complete(messages) for messages in requests))
    except JudgeError:
        return _result(how.neutral, outcomes=[])

    outcomes, unreadable = [], []
    for slot, reply in zip(slots, replies):
        read = judge.read(reply, read_outcome, slot, how.output, how.tie_margin)
        if isinstance(read, Unreadable):
            unreadable.append(read)
            outcomes.append(fallback_outcome(read, on_parse_error))
        else:
            outcomes.append(read)

    consistent = consistency(outcomes, len(slots)) if not unreadable else -1
    scores = {"win": how.win_score, "tie": how.tie_score, "loss": how.loss_score}
    score = sum(scores[o] for o in outcomes) / len(outcomes)
    return _result(score, outcomes, unreadable=unreadable, position_consistent=consistent)


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping | None = None,
    *,
    judge: SampleJudge,
    curriculum: Curriculum | None = None,
    uid: str | None = None,
    group_size: int = 1,
    on_parse_error: str = "loss",
    **given: Any,
) -> dict[str, float]:
    """Per-sample entry (``ParallelRewardManager``, hydra_configs/writing_rl.yaml): one response against
    a reference, as soon as it arrives. ``given``: the ``RewardOptions``.

    With the curriculum (the manager passes ``curriculum``, ``uid`` and ``group_size``), the rollouts of
    one group (``uid``) share the level the first of them pinned, each reports whether it won, and the
    group's last report moves the level up one when at least one rollout won and the group's win rate
    reaches ``advance_threshold`` (writing_rl/curriculum/groups.py): Writing-RL's rule,
    with no rollout waiting for its siblings. Without it (or for validation rows, or one reference):
    the first reference. ``curriculum/level`` reports the level judged at."""
    task = read_writing_rl_task(ground_truth, extra_info)
    how = read_options(RewardOptions, given)
    scheduled = curriculum is not None and uid is not None and len(task.references) > 1
    scheduled = scheduled and not is_validation(extra_info)
    key = curriculum_key(task)
    level = await curriculum.pin_group(key, len(task.references), uid, group_size) if scheduled else 0
    result = await judge_against(solution_str, task, task.references[level], judge, how, on_parse_error)
    if scheduled:
        await curriculum.report(uid, result["win"] == 1.0, how.advance_threshold)
    return {**result, "curriculum/level": level}


async def compute_group_score(
    members: list[Member],
    *,
    judge: SampleJudge,
    curriculum: Curriculum | None = None,
    on_parse_error: str = "loss",
    **given: Any,
) -> list[dict[str, float]]:
    """Group entry (``GroupRewardManager``): Writing-RL with its reference curriculum.

    The group's level is pinned once, every rollout is judged against that reference, then the level
    moves up one when at least one rollout won and the group's win rate (share of its rollouts that won
    in every judged order) is at least ``advance_threshold`` (0: any win, as in Writing-RL). Validation rows
    (``extra_info.split`` test/val/validation) are judged against their first reference and never
    move a level. ``curriculum/level`` reports the pinned level.
    """
    first = members[0]
    task = read_writing_rl_task(first.ground_truth, first.extra_info)
    how = read_options(RewardOptions, given)
    key = curriculum_key(task)
    level = 0
    validation = is_validation(first.extra_info)
    # Validation rows are judged against their first reference: their ids (0..N-1 of another file)
    # would otherwise read, and re-register, the levels of unrelated training prompts.
    if curriculum is not None and len(task.references) > 1 and not validation:
        level = await curriculum.pin(key, len(task.references))
    reference = task.references[level]
    results = await asyncio.gather(
        *(judge_against(m.text, task, reference, judge.member(i), how, on_parse_error) for i, m in enumerate(members))
    )
    # A rollout has won when it won in every order it was judged in: in both-order mode a win in one
    # order and a loss in the other is a position-biased judge, not progress.
    win_rate = sum(r["win"] == 1.0 for r in results) / len(results)
    if curriculum is not None and level + 1 < len(task.references) and not validation:
        if win_rate > 0 and win_rate >= how.advance_threshold:
            await curriculum.advance(key, level, first.uid)
    return [{**r, "curriculum/level": level} for r in results]


def failure_score(loss_score: float = 0.0, **_: Any) -> float:
    """What a failed sample is paid (a judge call that failed, a group that never completed): a loss."""
    return float(loss_score)


def curriculum_key(task: WritingRLTask) -> str:
    """The id the curriculum tracks: ground_truth.id, or a hash of the prompt for rows without one."""
    if task.id is not None:
        return str(task.id)
    return "prompt:" + hashlib.sha1(task.prompt.encode("utf-8")).hexdigest()[:16]


def _result(
    score: float,
    outcomes: list[str],
    unreadable: list[Unreadable] = (),
    format_error: int = 0,
    position_consistent: int = -1,
) -> dict[str, float]:
    n = len(outcomes) or 1
    return {
        "score": float(score),
        "win": outcomes.count("win") / n,
        "tie": outcomes.count("tie") / n,
        "loss": outcomes.count("loss") / n,
        "format_error": format_error,
        "position_consistent": position_consistent,
        **unreadable_flags(unreadable),
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/tools/preflight/)


def preflight_row(ground_truth: Any, extra_info: Mapping | None = None) -> None:
    """A row the pairwise reward can score: a prompt and at least one reference."""
    read_writing_rl_task(ground_truth, extra_info)


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """The judge call of this row with the response against its longest reference, as training sends it (the
    run's template, system prompt and output)."""
    task = read_writing_rl_task(row.ground_truth, row.extra_info)
    options = read_options(RewardOptions, dict(reward_kwargs))
    return comparison_messages(task.prompt, response, max(task.references, key=len), "A", criteria=task.criteria,
                               template=options.template, system=options.system_prompt, output=options.output)  # fmt: skip


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """One call per judged order."""
    return float(len(STRATEGIES[read_options(RewardOptions, dict(reward_kwargs)).strategy]))


async def probe_outcome(c, judge: SampleJudge, options: dict, on_parse_error: str) -> str:
    """probe-judge: the row's target is the honest answer and the probe is the policy's response; ``strategy``
    shows the probe at A (position-advantage) or at B (position-disadvantage)."""
    options = {**options, "strategy": PROBE_FIRST[c.slot]}
    result = await compute_score(c.row.data_source, c.reply, c.row.ground_truth, c.row.extra_info, judge=judge,
                                 on_parse_error=on_parse_error, **options)  # fmt: skip
    found = probe_failure(result, judge)
    if found:
        return found
    return "win" if result["win"] == 1 else "tie" if result["tie"] == 1 else "loss"


METHOD = register(
    compute_score,
    RewardMethod(
        name="writing_rl",
        extras=(CURRICULUM,),
        options=RewardOptions,
        failure_score=failure_score,
        check_row=preflight_row,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
        probe=ProbePlacement(probe_outcome, overlay="writing_rl", rows_hold_answer=True),
    ),
)
register(compute_group_score, METHOD)  # the same method under GroupRewardManager
