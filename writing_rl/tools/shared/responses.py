"""Policy responses paired with their data rows: a JSONL line names its row by ``id`` (ground_truth.id) or
``index`` (extra_info.index, else the row's position); ``writing-rl score`` and ``select`` read them so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from writing_rl.files import read_jsonl

RESPONSE_KEYS = ("id", "index")


@dataclass(frozen=True)
class MatchedResponse:
    """A policy response line matched to its data row."""

    row: int  # position in the data file
    key: str  # "id=3" or "index=3": what the response line named
    response: str


def match_responses(rows: list[dict], responses_path: str | Path) -> list[MatchedResponse]:
    """Pair each response line with its row: by ``id`` (ground_truth.id) or ``index`` (extra_info.index,
    else the row's position)."""
    by_id, by_index = {}, {}
    for position, row in enumerate(rows):
        truth = (row.get("reward_model") or {}).get("ground_truth")
        if isinstance(truth, dict) and truth.get("id") is not None:
            by_id[str(truth["id"])] = position
        index = (row.get("extra_info") or {}).get("index")
        by_index[str(position if index is None else index)] = position

    samples = []
    try:
        for line_number, record in read_jsonl(responses_path):
            samples.append(_match_line(record, f"{responses_path}:{line_number}", by_id, by_index))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{responses_path}: not a UTF-8 JSONL file ({exc.reason} at byte {exc.start})") from None
    if not samples:
        raise ValueError(f"{responses_path}: no responses")
    return samples


def _match_line(record: dict, where: str, by_id: dict[str, int], by_index: dict[str, int]) -> MatchedResponse:
    if not isinstance(record.get("response"), str):
        raise ValueError(f"{where}: expected a string field 'response'")
    field = next((k for k in RESPONSE_KEYS if record.get(k) is not None), None)
    if field is None:
        raise ValueError(f"{where}: name the row with 'id' (ground_truth.id) or 'index' (extra_info.index)")
    lookup = by_id if field == "id" else by_index
    value = str(record[field])
    if value not in lookup:
        raise ValueError(f"{where}: no row in the data has {field}={value}")
    return MatchedResponse(row=lookup[value], key=f"{field}={value}", response=record["response"])
