"""Writing-RL's reward: the policy's response judged against a reference answer.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.pairwise`` (name ``compute_score``),
run by ``writing_rl.manager.ParallelRewardManager``, which passes the ``judge``. Options go under
``reward.custom_reward_function.reward_kwargs``.

Ground truth is Writing-RL's row format, as published: ``{prompt, target, criteria, id}`` where
``target`` is one reference or a list of references ordered easiest first.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.parsing import parse_verdict, strip_think
from writing_rl.prompts import format_criteria, pairwise_messages

# Which slot the policy's response takes in each judge call.
STRATEGIES = {
    "position-advantage": ("A",),  # response shown first
    "position-disadvantage": ("B",),  # reference shown first
    "both": ("A", "B"),  # both orders, scores averaged
}


@dataclass(frozen=True)
class WritingRLTask:
    prompt: str
    references: tuple[str, ...]
    criteria: str | None
    id: int | None


def read_ground_truth(ground_truth: Any, extra_info: Mapping | None = None) -> WritingRLTask:
    """Validate a Writing-RL ground truth; errors name the sample and the field."""
    where = _sample_name(ground_truth, extra_info)
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError:
            raise ValueError(
                f"{where}: reward_model.ground_truth is a string that is not JSON; expected "
                "{prompt, target, criteria, id}"
            ) from None
    if not isinstance(ground_truth, Mapping):
        raise ValueError(
            f"{where}: reward_model.ground_truth must be a dict {{prompt, target, criteria, id}}, "
            f"got {type(ground_truth).__name__}"
        )
    prompt = ground_truth.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"{where}: reward_model.ground_truth.prompt must be a non-empty string, got {prompt!r:.80}")
    target = ground_truth.get("target")
    if isinstance(target, str):
        references = (target,)
    elif isinstance(target, (list, tuple, np.ndarray)):
        references = tuple(target)
    else:
        references = ()
    if not references or not all(isinstance(r, str) and r.strip() for r in references):
        raise ValueError(
            f"{where}: reward_model.ground_truth.target must be a reference string or a non-empty list of "
            f"non-empty strings (easiest first), got {target!r:.80}"
        )
    raw_id = ground_truth.get("id")
    return WritingRLTask(
        prompt=prompt,
        references=references,
        criteria=format_criteria(_as_criteria(ground_truth.get("criteria"))),
        id=None if raw_id is None else int(raw_id),
    )


def outcome(verdict: str, response_slot: str) -> str:
    """'win', 'tie' or 'loss' for the response, given the judge's verdict and the response's slot."""
    if verdict == "C":
        return "tie"
    return "win" if verdict == response_slot else "loss"


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping | None = None,
    *,
    judge: SampleJudge,
    strategy: str = "position-disadvantage",
    win_score: float = 1.0,
    tie_score: float = 0.5,
    loss_score: float = 0.0,
    neutral_reward: float | None = None,
    template: str | None = None,
) -> dict[str, float]:
    """Score one response against the sample's current reference.

    - The response's closed ``<think>`` block is dropped; no answer (unclosed block, empty) = loss,
      ``format_error=1``, no judge call.
    - Each judged order gives win/tie/loss; the score is the mean over orders that produced a verdict.
    - No verdict in any order (or a truncated judge reply) = ``neutral_reward`` (default: the tie
      score) with ``parse_error=1``. A judge failure gives the same neutral reward; the manager marks
      it ``judge_error=1`` or fails the step, as ``reward.reward_kwargs.on_judge_error`` says.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"reward_kwargs.strategy must be one of {sorted(STRATEGIES)}, got {strategy!r}")
    task = read_ground_truth(ground_truth, extra_info)
    scores = {"win": win_score, "tie": tie_score, "loss": loss_score}
    neutral = tie_score if neutral_reward is None else neutral_reward

    answer = strip_think(solution_str)
    if answer is None:
        return _result(loss_score, outcomes=["loss"], format_error=1)

    reference = task.references[0]
    slots = STRATEGIES[strategy]
    requests = [
        pairwise_messages(
            task.prompt,
            response_a=answer if slot == "A" else reference,
            response_b=reference if slot == "A" else answer,
            criteria=task.criteria,
            template=template,
        )
        for slot in slots
    ]
    try:
        replies = await asyncio.gather(*(judge.complete(messages) for messages in requests))
    except JudgeError:
        return _result(neutral, outcomes=[])

    outcomes = []
    for slot, reply in zip(slots, replies):
        verdict = None if reply.truncated else parse_verdict(reply.text)
        if verdict is not None:
            outcomes.append(outcome(verdict, slot))
    if not outcomes:
        return _result(neutral, outcomes=[], parse_error=1)

    consistent = -1
    if len(slots) == 2 and len(outcomes) == 2:
        consistent = int(outcomes[0] == outcomes[1])
    score = sum(scores[o] for o in outcomes) / len(outcomes)
    return _result(score, outcomes, parse_error=int(len(outcomes) < len(slots)), position_consistent=consistent)


def _result(
    score: float, outcomes: list[str], parse_error: int = 0, format_error: int = 0, position_consistent: int = -1
) -> dict[str, float]:
    n = len(outcomes) or 1
    return {
        "score": float(score),
        "win": outcomes.count("win") / n,
        "tie": outcomes.count("tie") / n,
        "loss": outcomes.count("loss") / n,
        "parse_error": parse_error,
        "format_error": format_error,
        "position_consistent": position_consistent,
    }


def _as_criteria(value: Any) -> Any:
    return list(value) if isinstance(value, np.ndarray) else value


def _sample_name(ground_truth: Any, extra_info: Mapping | None) -> str:
    if isinstance(ground_truth, Mapping) and ground_truth.get("id") is not None:
        return f"sample id={ground_truth['id']}"
    if extra_info and extra_info.get("index") is not None:
        return f"sample index={extra_info['index']}"
    return "sample"
