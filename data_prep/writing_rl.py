"""Writing-RL rows: a prompt, optional criteria and references (easiest first) -> verl RL rows whose
``reward_model.ground_truth`` is Writing-RL's ``{prompt, target, criteria, id}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from writing_rl.prompts import format_criteria

from .pipeline import BadRow

CHAT = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))

SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", CHAT),
        ("ability", pa.string()),
        (
            "reward_model",
            pa.struct(
                [
                    ("style", pa.string()),
                    (
                        "ground_truth",
                        pa.struct(
                            [
                                ("prompt", pa.string()),
                                ("target", pa.list_(pa.string())),
                                ("criteria", pa.string()),
                                ("id", pa.int64()),
                            ]
                        ),
                    ),
                ]
            ),
        ),
        ("extra_info", pa.struct([("index", pa.int64()), ("split", pa.string())])),
    ]
)


def text_field(row: dict, key: str, required: bool = True) -> str | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BadRow(key, f"expected a non-empty string, got {_show(value)}")
    return value


def text_list_field(row: dict, key: str) -> list[str]:
    """A string or a list of non-empty strings; absent = empty list."""
    value = row.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadRow(key, f"expected a string or a list of non-empty strings, got {_show(value)}")
    return list(value)


@dataclass
class WritingRLBuilder:
    prompt_key: str = "prompt"
    references_key: str = "references"
    criteria_key: str = "criteria"
    data_source: str = "writing"
    system_prompt: str | None = None
    schema: pa.Schema = SCHEMA

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        prompt = text_field(row, self.prompt_key)
        references = text_list_field(row, self.references_key)
        criteria = row.get(self.criteria_key)
        criteria = text_field(row, self.criteria_key) if isinstance(criteria, str) else text_list_field(row, self.criteria_key)
        chat = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        chat.append({"role": "user", "content": prompt})
        return [
            {
                "data_source": row.get("data_source") or self.data_source,
                "prompt": chat,
                "ability": "writing",
                "reward_model": {
                    "style": "model",
                    "ground_truth": {
                        "prompt": prompt,
                        "target": references,
                        "criteria": format_criteria(criteria),
                        "id": source_id,
                    },
                },
                "extra_info": {"index": source_id, "split": split},
            }
        ]


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
