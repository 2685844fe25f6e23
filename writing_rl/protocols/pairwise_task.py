"""Writing-RL's row format: shared by the reward (reward_fns/pairwise.py) and the offline tools
(selection, ordering, win rate).

Ground truth is Writing-RL's row format, as published: ``{prompt, target, criteria, id}`` where
``target`` is one reference or a list of references ordered easiest first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from writing_rl.protocols.prompts import format_criteria


@dataclass(frozen=True)
class WritingRLTask:
    prompt: str
    references: tuple[str, ...]
    criteria: str | None
    id: int | str | None  # the prompt's id (the curriculum's key): an integer or a non-empty string


def read_writing_rl_task(ground_truth: Any, extra_info: Mapping | None = None) -> WritingRLTask:
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
    return WritingRLTask(
        prompt=prompt,
        references=references,
        criteria=format_criteria(_as_criteria(ground_truth.get("criteria"))),
        id=_read_id(ground_truth.get("id"), where),
    )


def _read_id(raw: Any, where: str) -> int | str | None:
    """``ground_truth.id``: an integer (a whole float too, as parquet may store one) or a non-empty string."""
    if raw is None or isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, (float, np.floating)) and float(raw).is_integer():
        return int(raw)
    raise ValueError(
        f"{where}: reward_model.ground_truth.id must be an integer or a non-empty string (the prompt's id), "
        f"got {type(raw).__name__} {raw!r:.80}"
    )


def _as_criteria(value: Any) -> Any:
    return list(value) if isinstance(value, np.ndarray) else value


def _sample_name(ground_truth: Any, extra_info: Mapping | None) -> str:
    if isinstance(ground_truth, Mapping) and ground_truth.get("id") is not None:
        return f"sample id={ground_truth['id']}"
    if extra_info and extra_info.get("index") is not None:
        return f"sample index={extra_info['index']}"
    return "sample"
