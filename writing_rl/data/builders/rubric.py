"""Prompts with rubrics -> verl RL rows for the rubric reward (reward_fns/rubric.py).

The input's keys and the three shapes of a criterion, mixed freely: docs/methods/rubric.md#data. A rubric may
also be JSON text. WritingBench's score bands are dropped: they are for its critic's 1-10 scale, which the
rubric judge uses anyway.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from writing_rl.data import fields
from writing_rl.data.builder import BadRow
from writing_rl.data.schemas import rl_schema

RUBRIC = pa.list_(pa.struct([("criterion", pa.string()), ("weight", pa.float64())]))
SCHEMA = rl_schema(
    [("index", pa.int64()), ("split", pa.string()), ("prompt", pa.string())],
    ground_truth=pa.struct([("prompt", pa.string()), ("rubric", RUBRIC)]),
)
PROMPT_KEYS = ("prompt", "query", "question")
RUBRIC_KEYS = ("rubric", "checklist", "rubrics")


@dataclass
class RubricBuilder:
    prompt_key: str | None = None  # None: the first of PROMPT_KEYS the row has
    rubric_key: str | None = None  # None: the first of RUBRIC_KEYS the row has
    data_source: str = "rubric"
    system_prompt: str | None = None
    schema: pa.Schema = SCHEMA
    consumes: ClassVar[tuple[str, ...]] = ("data_source",)

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        prompt_key = self.prompt_key or next((k for k in PROMPT_KEYS if row.get(k) is not None), PROMPT_KEYS[0])
        value = row.get(prompt_key)
        if isinstance(value, (list, tuple)):
            chat = fields.chat(row, prompt_key)
            if chat[-1]["role"] != "user" or not chat[-1]["content"].strip():
                raise BadRow(prompt_key, "a chat prompt must end with a non-empty user message")
            request = chat[-1]["content"]
        else:
            request = fields.text(row, prompt_key)
            chat = [{"role": "user", "content": request}]
        if self.system_prompt and chat[0]["role"] != "system":
            chat = [{"role": "system", "content": self.system_prompt}, *chat]
        rubric_key = self.rubric_key or next((k for k in RUBRIC_KEYS if row.get(k) is not None), RUBRIC_KEYS[0])
        rubric = read_rubric_column(row.get(rubric_key), rubric_key)
        return [
            {
                "data_source": row.get("data_source") or self.data_source,
                "prompt": chat,
                "ability": "writing",
                "reward_model": {"style": "rubric", "ground_truth": {"prompt": request, "rubric": rubric}},
                "extra_info": {"index": source_id, "split": split, "prompt": request},
            }
        ]


def read_rubric_column(value: Any, key: str) -> list[dict]:
    """A rubric column as ``[{criterion, weight}]``; a ``BadRow`` names the item and what was expected."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise BadRow(key, "a rubric given as text must be a JSON list of criteria") from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise BadRow(key, f"expected a non-empty list of criteria, got {fields.describe_value(value)}")
    rubric = [_criterion(item, f"{key}[{i}]") for i, item in enumerate(value)]
    if not any(c["weight"] > 0 for c in rubric):
        raise BadRow(key, "no criterion has a positive weight (a rubric of pitfalls only scores nothing)")
    return rubric


def _criterion(item: Any, where: str) -> dict:
    if not isinstance(item, dict):
        raise BadRow(where, f"expected a criterion object, got {fields.describe_value(item)}")
    if "criterion" in item:
        text = item["criterion"]
    elif "title" in item or "name" in item:
        title = item.get("title", item.get("name"))
        description = item.get("description", item.get("criteria_description"))
        text = f"{title}: {description}" if isinstance(description, str) and description.strip() else title
    else:
        raise BadRow(
            where, "expected {criterion, weight}, {title, description, weight} or {name, criteria_description}"
        )
    if not isinstance(text, str) or not text.strip():
        raise BadRow(where, f"the criterion text must be a non-empty string, got {fields.describe_value(text)}")
    weight = item.get("weight", 1.0)
    if not isinstance(weight, numbers.Real) or isinstance(weight, bool) or not math.isfinite(weight) or weight == 0:
        raise BadRow(f"{where}.weight", f"expected a non-zero number, got {fields.describe_value(weight)}")
    return {"criterion": text.strip(), "weight": float(weight)}
