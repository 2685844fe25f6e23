"""The files of the offline commands: JSONL inputs read with their ``file:line`` (a bad line is an
``InputError`` naming it), policy responses matched to their data rows, and a judged data command's job
(``select``, ``order-references``) with what it writes around its results: the run section of the summary
and of the printed report, the CSV report's text and the output files written together.

Light on purpose (no judge, no pyarrow): the command parsers read their defaults from the jobs."""

from __future__ import annotations

import csv
import io
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from writing_rl.files import atomic_path, read_jsonl


class InputError(ValueError):
    """A line of an input file is not what the command needs; the message names the file and line."""


def lines(path: str | Path) -> Iterable[tuple[str, dict]]:
    """(``file:line``, object) for each line; a line that is not a JSON object is an ``InputError``."""
    try:
        for number, record in read_jsonl(path):
            yield f"{path}:{number}", record
    except ValueError as err:
        raise InputError(str(err)) from err


def field_value(row: Mapping, path: str) -> Any:
    """``row["a"]["b"]`` for ``path="a.b"``; None when any step is missing."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


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


CACHE_FILE = "judge_cache.sqlite"  # in the output directory, unless the job names a cache


@dataclass(frozen=True, kw_only=True)
class JudgedJob:
    """The options of every judged data command: where it writes and how it runs its judge calls."""

    out: str | Path  # output directory
    cache: str | Path | None = None  # judge cache file; None: OUT/judge_cache.sqlite
    allow_judge_errors: bool = False  # write results from what was judged (failed calls counted, never scored)
    progress: bool = True  # a progress line on stderr

    @property
    def cache_path(self) -> str | Path:
        return self.cache or Path(self.out) / CACHE_FILE


def run_section(calls: int, cache_stats: Any, wall_s: float) -> dict[str, Any]:
    """The end of a summary: the cache's hits and misses, the wall time and the calls per second."""
    return {
        "cache": asdict(cache_stats),
        "wall_s": round(wall_s, 3),
        "calls_per_s": round(calls / wall_s, 1) if wall_s > 0 else None,
    }


def run_lines(summary: Mapping[str, Any], outputs: Mapping[str, str]) -> list[str]:
    """The end of a printed report: the cache and speed line, then each output file."""
    cache = summary["cache"]
    lines = [f"cache hits {cache['hits']}, misses {cache['misses']}; {summary['calls_per_s']} calls/s"]
    lines.extend(f"  {name}: {path}" for name, path in outputs.items())
    return lines


def csv_text(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV report (header, then one line per row, ``\\n`` line ends) as text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue()


@contextmanager
def written_together(paths: Mapping[str, Path]) -> Iterator[dict[str, Path]]:
    """A temp path per output (by name); all are renamed to their paths only when all were written. The
    output named last in ``paths`` (the summary) is renamed last: its presence marks a complete set."""
    with ExitStack() as stack:
        yield {name: stack.enter_context(atomic_path(paths[name])) for name in reversed(paths)}
