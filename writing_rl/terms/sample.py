"""What a reward term sees of a sample."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TermInput:
    response: str  # the decoded response, reasoning tags kept (as the reward fn sees it)
    response_length: int  # valid response tokens, from verl's response attention mask
    prompt: str = ""  # the request as text (its last user turn)
    data_source: str | None = None
    ground_truth: Any = None
    extra_info: dict = field(default_factory=dict)


def reference_text(ground_truth: Any) -> str | None:
    """The row's reference answer: ``target`` (Writing-RL rows; the first, easiest, of a list) or
    ``reference`` of a dict ground truth, or a plain string ground truth; None when it has none."""
    value = ground_truth
    if isinstance(value, str) and value.lstrip().startswith("{"):  # a JSON ground truth, as verl rows may hold
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if isinstance(value, dict):
        value = value.get("target", value.get("reference"))
    if hasattr(value, "tolist"):  # a list read back from parquet
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return value if isinstance(value, str) and value.strip() else None
