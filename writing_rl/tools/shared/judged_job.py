"""A judged data command's job (``writing-rl select``, ``writing-rl order-references``) and what such a job
writes around its own results: the options of a run (``JudgedJob``, which each command's job extends), the
run section of the summary and of the printed report, the CSV report's text and the output files written
together.

Light on purpose (no judge, no pyarrow): the command parsers read their defaults from the jobs."""

from __future__ import annotations

import csv
import io
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from writing_rl.files import atomic_path

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
