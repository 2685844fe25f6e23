"""An evaluation's judge calls: every kind judges through the offline tools' cache in ``--out`` (or
``--cache``), and a prompt longer than the judge's context fails that call only (reading inputs: ``inputs``;
writing outputs and the failure section: ``report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence, TypeVar

from writing_rl.protocols.prompts import Messages
from writing_rl.tools.shared.errors import judge_error_line
from writing_rl.tools.shared.judge_settings import JudgeSettings
from writing_rl.tools.shared.judged_job import CACHE_FILE
from writing_rl.tools.shared.tool_judge import judge_through_cache
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
