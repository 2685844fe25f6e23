"""Writing-RL rows: a prompt, optional criteria and references (easiest first) -> verl RL rows whose
``reward_model.ground_truth`` is Writing-RL's ``{prompt, target, criteria, id}``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa

from writing_rl.data import fields
from writing_rl.data.builder import BadRow
from writing_rl.data.schemas import rl_schema
from writing_rl.protocols.prompts import format_criteria

SCHEMA = rl_schema(
    [("index", pa.int64()), ("split", pa.string())],
    ground_truth=pa.struct(
        [("prompt", pa.string()), ("target", pa.list_(pa.string())), ("criteria", pa.string()), ("id", pa.int64())]
    ),
)


def string_or_list(row: dict, key: str) -> list[str]:
    """A string or a list of non-empty strings; absent = empty list."""
    value = row.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [fields.text(row, key)]
    return fields.text_list(row, key, min_items=0)


@dataclass
class WritingRLBuilder:
    prompt_key: str = "prompt"
    references_key: str = "references"
    criteria_key: str = "criteria"
    data_source: str = "writing"
    system_prompt: str | None = None
    schema: pa.Schema = SCHEMA
    counts: Counter = field(default_factory=Counter)
    consumes: ClassVar[tuple[str, ...]] = ("data_source",)  # a row's own data_source wins

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        prompt = fields.text(row, self.prompt_key)
        references = string_or_list(row, self.references_key)
        criteria = self._criteria(row)
        chat = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        chat.append({"role": "user", "content": prompt})
        self.counts[min(len(references), 2)] += 1  # the row is valid: it will be written
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
                        "criteria": criteria,
                        "id": source_id,
                    },
                },
                "extra_info": {"index": source_id, "split": split},
            }
        ]

    def _criteria(self, row: dict) -> str | None:
        """A string, a list of strings, or WritingBench's checklist (a list of {name, criteria_description,
        score bands}), also as JSON text (a CSV cell): rendered as the judge reads it, by the function the
        reward uses for criteria that reach it unrendered."""
        try:
            return format_criteria(row.get(self.criteria_key))
        except ValueError as err:
            raise BadRow(self.criteria_key, str(err)) from None

    def summary(self) -> list[str]:
        none, one, several = (self.counts[k] for k in (0, 1, 2))
        lines = [f"references per row: none {none}, one {one}, several {several} (a curriculum)"]
        if none:
            lines.append(
                f"  {none} rows have no reference: fine for BRPO / group ranking, but the pairwise reward and "
                "`writing-rl select` need one (`writing-rl order-references` writes rows with references)"
            )
        return lines
