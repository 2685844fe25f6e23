"""The rows a probe run judges: a request, its honest answer and what the method's reward fn reads.

The honest answer is the row's own reference where the method's rows hold one (``ProbePlacement.rows_hold_answer``;
Writing-RL's rows: the best reference, the last of ``target``), else the first line of ``--responses`` for the row. Without
``--data`` the rows we ship (``data/probe_rows.jsonl``: writing prompts with honest answers and rubrics,
and translation sources with their translations) are used by every method.

A translation row (``extra_info.src_text``) has its wrong-language answer at hand: the untranslated
source. A shipped writing row carries one (``wrong_language``); any other row gets one by translation
(``run.py``)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from writing_rl.files import read_jsonl

SHIPPED_ROWS = Path(__file__).resolve().parent / "data" / "probe_rows.jsonl"
NOT_TRUTH = ("honest", "extra_info", "wrong_language")  # a shipped row's fields that are not its ground truth


@dataclass(frozen=True)
class ProbeRow:
    key: str  # how reports and errors name the row: "row 3" or "shipped essay-lighthouse"
    prompt: str  # the request as text
    honest: str
    ground_truth: dict  # as the method's reward fn reads it (target = [honest] where rows hold the answer)
    extra_info: dict = field(default_factory=dict)
    data_source: str = "probe"
    wrong_language: str | None = None

    @property
    def criteria(self) -> Any:
        return self.ground_truth.get("criteria")


def shipped_rows(path: str | Path = SHIPPED_ROWS) -> list[ProbeRow]:
    rows = []
    for line, record in read_jsonl(path):
        where = f"{path}:{line}"
        for name in ("id", "prompt", "honest"):
            if not isinstance(record.get(name), str) or not record[name].strip():
                raise ValueError(f"{where}: '{name}' must be a non-empty string")
        # The row's other fields (id, criteria, a rubric...) are what a method's reward fn reads.
        truth = {**{k: v for k, v in record.items() if k not in NOT_TRUTH}, "target": [record["honest"]]}
        info = dict(record.get("extra_info") or {})
        rows.append(
            ProbeRow(
                f"shipped {record['id']}",
                record["prompt"],
                record["honest"],
                truth,
                info,
                wrong_language=record.get("wrong_language") or info.get("src_text"),
            )  # fmt: skip
        )
    return rows


def user_rows(data: str | Path, method: str, responses: str | Path | None, rows_hold_answer: bool) -> list[ProbeRow]:
    """The rows of a training parquet, each with its honest answer (the row's best reference where
    ``rows_hold_answer``); rows ``--responses`` names no answer for are left out."""
    import pyarrow.parquet as pq

    from writing_rl.offline.files import match_responses
    from writing_rl.protocols.pairwise_task import read_writing_rl_task

    table = pq.read_table(data).to_pylist()
    honest: dict[int, str] = {}
    if responses is not None:
        for sample in match_responses(table, responses):
            honest.setdefault(sample.row, sample.response)
    elif not rows_hold_answer:
        raise ValueError(
            f"--method {method}: its rows hold no honest answer; pass --responses FILE (JSONL lines "
            "{'index': <row>, 'response': <a good answer>} or {'id': <ground_truth.id>, ...})"
        )
    rows = []
    for position, row in enumerate(table):
        truth = (row.get("reward_model") or {}).get("ground_truth")
        truth = json.loads(truth) if isinstance(truth, str) else truth
        if not isinstance(truth, dict):
            raise ValueError(f"{data}: row {position}: reward_model.ground_truth must be a dict, got {truth!r:.80}")
        info = dict(row.get("extra_info") or {})
        prompt = _last_user_turn(row.get("prompt"), f"{data}: row {position}")
        if rows_hold_answer and position not in honest:
            task = read_writing_rl_task(truth, info)
            prompt, honest[position] = task.prompt, task.references[-1]
        if position not in honest:
            continue
        truth = {**truth, "target": [honest[position]]} if rows_hold_answer else truth
        rows.append(
            ProbeRow(
                f"row {position}",
                prompt,
                honest[position],
                truth,
                info,
                str(row.get("data_source") or ""),
                wrong_language=info.get("src_text"),
            )  # fmt: skip
        )
    if not rows:
        raise ValueError(f"{responses}: names an answer for none of the {len(table)} rows of {data}")
    return rows


def _last_user_turn(prompt: Any, where: str) -> str:
    if isinstance(prompt, str):
        return prompt
    turns = [m.get("content") for m in prompt or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not turns or not isinstance(turns[-1], str):
        raise ValueError(f"{where}: 'prompt' must be chat messages with a user turn (or text), got {prompt!r:.80}")
    return turns[-1]


def sample_rows(rows: list[ProbeRow], count: int | None, seed: int) -> list[ProbeRow]:
    """``count`` rows drawn with ``seed`` (all of them for None or more than there are), in data order."""
    if count is None or count >= len(rows):
        return rows
    if count < 1:
        raise ValueError(f"--rows must be >= 1, got {count}")
    return [rows[i] for i in sorted(random.Random(seed).sample(range(len(rows)), count))]
