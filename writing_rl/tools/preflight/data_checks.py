"""Preflight checks of the data: parquet rows against the reward fn, prompt tokens against
``data.max_prompt_length`` (``runner.py`` runs them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from writing_rl.tools.preflight.report import Report

SHOWN_BAD_ROWS = 5


@dataclass(frozen=True)
class Row:
    """One parquet row as the reward path sees it."""

    number: int  # 0-based row of its file
    messages: list
    ground_truth: Any
    extra_info: dict

    @property
    def prompt(self) -> str:
        users = [m.get("content") or "" for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


def read_rows(path: Path, prompt_key: str, max_rows: int, report: Report) -> list[Row] | None:
    """The first ``max_rows`` rows, after the columns verl and the reward path need are checked."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as err:
        report.problem(f"{path}: not a readable parquet file ({err})")
        return None
    columns = set(parquet.schema_arrow.names)
    missing = [c for c in (prompt_key, "reward_model", "data_source") if c not in columns]
    if missing:
        report.problem(
            f"{path}: no column(s) {', '.join(missing)} (has {', '.join(sorted(columns))}); "
            "build it with python data_prep/build_parquet.py"
        )
        return None
    rows: list[Row] = []
    for batch in parquet.iter_batches(batch_size=min(max_rows, 8192)):
        for record in batch.to_pylist():
            reward_model = record.get("reward_model") or {}
            rows.append(
                Row(
                    number=len(rows),
                    messages=record.get(prompt_key) or [],
                    ground_truth=reward_model.get("ground_truth") if isinstance(reward_model, dict) else None,
                    extra_info=record.get("extra_info") or {},
                )
            )
            if len(rows) == max_rows:
                break
        if len(rows) == max_rows:
            break
    total = parquet.metadata.num_rows
    report.ok(f"{path}: {total} rows, columns {prompt_key}/reward_model/data_source present")
    if total > len(rows):
        report.note(f"{path}: rows 0-{len(rows) - 1} of {total} checked (--max-rows)")
    return rows


def message_problem(messages) -> str | None:
    if not isinstance(messages, (list, tuple)) or not messages:
        return "the prompt must be a non-empty list of chat messages {role, content}"
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            return f"each prompt message needs a string 'content', got {message!r:.80}"
    if not any(m.get("role") == "user" and m["content"].strip() for m in messages):
        return "the prompt has no non-empty user message"
    return None


def check_rows(path: Path, rows: list[Row], check_row: Callable | None, where: str, report: Report) -> None:
    bad: list[str] = []
    for row in rows:
        reason = message_problem(row.messages)
        if reason is None and check_row is not None:
            try:
                check_row(row.ground_truth, row.extra_info)
            except ValueError as err:
                reason = str(err)
        if reason is not None:
            bad.append(f"row {row.number}: {reason}")
    if not bad:
        report.ok(f"{path}: {len(rows)} rows hold what {where} needs")
        return
    for line in bad[:SHOWN_BAD_ROWS]:
        report.problem(f"{path} {line}")
    if len(bad) > SHOWN_BAD_ROWS:
        report.problem(
            f"{path}: {len(bad) - SHOWN_BAD_ROWS} more bad rows of {len(rows)} (first {SHOWN_BAD_ROWS} above)"
        )


# ---------------------------------------------------------------- token lengths


def load_tokenizer(path: str, trust_remote_code: bool):
    from transformers import AutoTokenizer

    local = Path(path).expanduser().exists()
    return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, local_files_only=not local)


def prompt_token_lengths(tokenizer, rows: Sequence[Row], template_kwargs: Mapping) -> np.ndarray:
    """Prompt tokens as verl's RLHFDataset counts them (chat template + generation prompt)."""
    texts = [
        tokenizer.apply_chat_template(list(r.messages), add_generation_prompt=True, tokenize=False, **template_kwargs)
        for r in rows
    ]
    return np.array([len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]], dtype=np.int64)


def round_up(value: int, step: int = 1024) -> int:
    return int(-(-value // step) * step)


def check_prompt_lengths(path: Path, lengths: np.ndarray, data, max_drop: float, report: Report) -> None:
    limit = int(data.max_prompt_length)
    over = int((lengths > limit).sum())
    share = over / len(lengths)
    p50, p95, p99 = (int(np.percentile(lengths, q)) for q in (50, 95, 99))
    summary = f"prompt tokens p50 {p50} / p95 {p95} / max {int(lengths.max())} vs data.max_prompt_length={limit}"
    if not over:
        report.ok(f"{path}: {summary}: every row fits")
        return
    keep_99, keep_all = round_up(p99), round_up(int(lengths.max()))
    fit = f"data.max_prompt_length={keep_all} keeps all"
    if keep_99 < keep_all:
        fit = f"data.max_prompt_length={keep_99} keeps 99%, {keep_all} keeps all"
    if data.get("filter_overlong_prompts", True):
        text = f"{path}: {summary}: {over} rows ({share:.1%}) are over and dropped by data.filter_overlong_prompts"
        if share > max_drop:
            report.problem(f"{text}, more than --max-drop {max_drop:.0%}: {fit}")
        else:
            report.note(f"{text} ({fit})")
    else:
        report.problem(
            f"{path}: {summary}: {over} rows ({share:.1%}) are over; with filter_overlong_prompts=false verl's "
            f"agent loop cuts their beginning off (the instruction first): {fit}, or filter them"
        )
