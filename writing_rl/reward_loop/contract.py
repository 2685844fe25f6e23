"""The reward-fn contract: everything a reward fn written for our managers imports from ``writing_rl.reward_loop``.

``reward_fns/`` import from this module only (tests/test_layout.py checks it); a fn of yours should too.

A per-sample fn (``ParallelRewardManager``) has verl's ``custom_reward_function`` signature plus keyword
arguments the manager passes when the fn declares them (reward_loop/fn_extras.py)::

    async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *,
                            judge, curriculum=None, uid=None, group_size=1, **options) -> dict

A group fn (``GroupRewardManager``) scores every rollout of a prompt at once, each a ``Member``::

    async def compute_score(members: list[Member], *, judge, **options) -> list[dict]

Either returns ``{"score": float, <numeric extra keys>}`` per sample and catches ``JudgeError`` itself
(its neutral result); the module may define ``failure_score(**options) -> float``, what a failed sample
is paid (its loss: reward_loop/scoring.py). A fn that declares ``on_parse_error`` gets
``reward.reward_kwargs.on_parse_error`` from the manager.

Options: the module declares the fn's options (``reward.custom_reward_function.reward_kwargs``) as a
frozen dataclass named ``RewardOptions`` whose fields use ``option(default, choices=..., minimum=...)``
where a value is bounded, with a comment above each field (the config reference prints it); the fn reads
its keyword arguments with ``read_options(RewardOptions, given)``. The same declaration is checked when
``writing-rl check-config``, the preflight or a reward worker starts (reward_loop/fn_options.py), so a
misspelt or out-of-range option stops the run before any rollout. What this module gives a fn:

- ``Member``: one rollout of a group; ``is_validation(extra_info)``: a validation row (``split`` test/val/validation);
- ``Curriculum``: the handle a fn declaring ``curriculum`` gets (``None`` when ``curriculum.enable`` is
  off): ``pin``/``advance`` for a whole group, ``pin_group``/``report`` one rollout at a time
  (reward_loop/curriculum/handle.py; importing it loads no Ray);
- ``option`` and ``read_options``: the options, as above;
- the failure policy for unreadable judge replies (reward_loop/failures.py): ``fallback_outcome``
  (``"loss"`` or ``"tie"``, never a win),
  ``raise_if_asked`` (stop the step when ``on_parse_error=raise``) and ``unreadable_flags`` (the sample's
  ``parse_error`` / ``judge_truncated`` / ``judge_refusal`` extra-info keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from writing_rl.reward_loop.curriculum.handle import Curriculum
from writing_rl.reward_loop.failures import fallback_outcome, raise_if_asked, unreadable_flags
from writing_rl.reward_loop.fn_options import read_options
from writing_rl.settings import option

__all__ = [
    "Curriculum",
    "Member",
    "fallback_outcome",
    "is_validation",
    "option",
    "raise_if_asked",
    "read_options",
    "unreadable_flags",
]


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
