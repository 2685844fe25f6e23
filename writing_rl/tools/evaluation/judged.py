"""What the evaluation kinds share: judging through the cache in ``--out`` (or ``--cache``), JSONL outputs
written whole, and the report's failure section (reading inputs: ``inputs``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from writing_rl.files import atomic_write_text
from writing_rl.protocols.prompts import Messages
from writing_rl.tools.shared.errors import judge_error_line
from writing_rl.tools.shared.judge_runner import judge_through_cache
from writing_rl.tools.shared.judge_settings import JudgeSettings
from writing_rl.tools.shared.judged_run import CACHE_FILE
from writing_rl.tools.shared.verdicts import Judgment

T = TypeVar("T")


def judge(
    settings: JudgeSettings,
    jobs: Sequence[T],
    build: Callable[[T], Messages],
    read: Callable[[str], Judgment],
    out_dir: str | Path,
    cache: str | Path | None = None,
    progress: bool = True,
) -> tuple[list[Judgment], dict]:
    """The judgments of every job (the cache at ``cache``, default ``OUT/judge_cache.sqlite``, answers
    what it holds) and the report's ``judge`` section (calls, cache hits, wall time: the only part of a
    report that a rerun changes).

    A prompt longer than the judge's context fails that call only (``Judgment(error="context_length")``,
    counted as a judge error like any other): an evaluation's prompts differ in length, so one long
    prompt must not stop the run. Statuses every call would get (401, 403, 404) still stop it."""
    cache_path = Path(cache) if cache else Path(out_dir) / CACHE_FILE
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    judgments, judge_cache, wall_s = judge_through_cache(
        settings, jobs, build, cache_path, progress, read, stop_on_context_length=False
    )
    section = {"calls": len(jobs), "cache_hits": judge_cache.stats.hits, "wall_s": round(wall_s, 3)}
    if judge_cache.first_error is not None:  # the URL and the cause, for the error line
        section["first_failure"] = judge_error_line(judge_cache.first_error)
    return judgments, section


def write_jsonl(path: str | Path, records: Sequence[dict]) -> None:
    """One JSON object per line (judgments.jsonl), written whole or not at all."""
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def failures(judge_errors: int, unreadable: int, calls: int) -> dict[str, float]:
    """Judge calls that failed and replies nothing could be read from, counted and as shares of the
    calls; both are left out of every score."""
    return {
        "judge_error": judge_errors,
        "unreadable": unreadable,
        "judge_error_rate": share(judge_errors, calls),
        "unreadable_rate": share(unreadable, calls),
    }


def failures_line(section: dict[str, float]) -> str:
    return (
        f"judge errors {section['judge_error']} ({rate(section['judge_error_rate'])}), unreadable "
        f"{section['unreadable']} ({rate(section['unreadable_rate'])}): counted, never scored"
    )


def share(count: float, total: float) -> float:
    return count / total if total else float("nan")


def rate(value: float) -> str:
    """``0.750``, or ``–`` for a share of nothing."""
    return "–" if math.isnan(value) else f"{value:.3f}"
