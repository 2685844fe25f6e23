"""What a reward fn written for our managers works with (the contract ``reward_fns/`` build on).

A per-sample fn has verl's ``custom_reward_function`` signature plus keyword arguments the manager
passes when the fn declares them (reward_loop/fn_extras.py)::

    async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *,
                            judge, curriculum=None, uid=None, group_size=1, **options) -> dict

A group fn (``GroupRewardManager``) scores every rollout of a prompt at once::

    async def compute_score(members: list[Member], *, judge, **options) -> list[dict]

Either returns ``{"score": float, <numeric extra keys>}`` per sample and catches ``JudgeError`` itself
(its neutral result); the module may define ``failure_score(**options) -> float``, what a failed sample
is paid (its loss: reward_loop/scoring.py). The curriculum handle is ``reward_loop.curriculum.Curriculum``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Member:
    """What one rollout brings to its group."""

    uid: str  # verl's group id: the same for every rollout of one prompt
    text: str  # the decoded response
    response_length: int  # valid response tokens
    prompt: str  # the request as text (last user turn)
    data_source: str
    ground_truth: Any
    extra_info: dict


VALIDATION_SPLITS = ("test", "val", "validation")


def is_validation(extra_info: dict | None) -> bool:
    """A validation row, by the convention our builders and verl's example preprocessors follow."""
    return str((extra_info or {}).get("split", "")).lower() in VALIDATION_SPLITS
