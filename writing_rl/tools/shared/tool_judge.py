"""The offline tools' judge (``writing-rl select``, ``order-references``, ``eval``) and their calls through it.

- the judge itself: ``ToolJudge``, an ``OpenAIJudge`` behind a ``CachedJudge`` (resume after a crash);
- one judgment (verdict or counted failure) and a bounded runner with a progress line (``ProgressLine``);
- the failure policy: judge errors stop a run before it writes anything, unless allowed; a reply that
  every call would get (HTTP 401, 403, 404: key, endpoint or model) stops it at once. Either way the
  answered calls stay cached and the same command resumes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeVar

from writing_rl.judge import Judge, JudgeError, Messages, judge_client
from writing_rl.judge.base import JudgeReply
from writing_rl.judge.cache import CachedJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.errors import JudgeContextLengthError, JudgeHTTPError
from writing_rl.protocols import Unreadable, read_reply
from writing_rl.tools.shared.endpoints import CheckedJudge
from writing_rl.tools.shared.errors import JudgeFailures, judge_error_line
from writing_rl.tools.shared.judge_settings import JudgeSettings
from writing_rl.tools.shared.verdicts import Judgment, verdict_judgment

T = TypeVar("T")
# Statuses every call of a run would get (a bad key, endpoint or model name): stop at the first.
STOP_STATUSES = (401, 403, 404)


class ToolJudge(CachedJudge):
    """The cached judge of an offline tool; it keeps the first failure, which the error line quotes."""

    first_error: JudgeError | None = None

    async def complete(self, messages: Messages) -> JudgeReply:
        try:
            return await super().complete(messages)
        except JudgeError as err:
            self.first_error = self.first_error or err
            raise


def open_judge(settings: JudgeConfig, cache_path: str | Path) -> ToolJudge:
    """The HTTP judge, its endpoints checked before its first call, behind an on-disk cache at ``cache_path``."""
    return ToolJudge.for_config(CheckedJudge(judge_client(settings), settings), settings, cache_path)


def judge_through_cache(
    settings: JudgeSettings,
    jobs: Sequence[T],
    build: Callable[[T], Messages],
    cache_path: str | Path,
    progress: bool = True,
    read: Callable[[str], Judgment] | None = None,
    stop_on_context_length: bool = True,
) -> tuple[list[Judgment], ToolJudge, float]:
    """Judge every job (see ``judge_all``) through the on-disk cache, with a progress line on stderr.
    Returns the judgments, the closed cache (its ``stats`` and ``path`` for reports) and the wall time."""
    judge = open_judge(settings.judge, cache_path)
    start = time.perf_counter()
    bar = ProgressLine(len(jobs), judge, enabled=progress)
    read = read or verdict_judgment

    async def run() -> list[Judgment]:
        try:
            return await judge_all(
                judge, jobs, build, settings.judge.max_concurrency, bar, read, stop_on_context_length
            )
        finally:
            bar.end_line()
            close = getattr(judge.judge, "close", None)  # the HTTP session, in the loop that used it
            if close is not None:
                await close()

    try:
        judgments = asyncio.run(run())
    except JudgeHTTPError as err:  # a STOP_STATUSES reply (see judge_once)
        cached = len(judge)
        kept = f". {cached} judge replies are cached in {judge.path}: the same command resumes" if cached else ""
        raise JudgeFailures(f"{judge_error_line(err)}; stopped at the first such reply{kept}") from err
    finally:
        judge.close()
    return judgments, judge, time.perf_counter() - start


async def judge_once(
    judge: Judge,
    messages: Messages,
    read: Callable[[str], Judgment] = verdict_judgment,
    stop_on_context_length: bool = True,
) -> Judgment:
    """A truncated or refused reply, or one with no final verdict, counts as a parse failure, as in the
    reward. A failure is counted, but one that every call would meet (``STOP_STATUSES``) is raised, and
    so is a prompt longer than the judge's context unless ``stop_on_context_length`` is false (the
    evaluations: prompts differ in length, so such a call is counted as ``Judgment(error="context_length")``
    and the others go on)."""
    try:
        reply = await judge.complete(messages)
    except JudgeContextLengthError as err:
        if stop_on_context_length:
            raise
        return Judgment(error=err.kind)
    except JudgeHTTPError as err:
        if err.status in STOP_STATUSES:
            raise
        return Judgment(error=err.kind)
    except JudgeError as err:
        return Judgment(error=err.kind)
    judgment = read_reply(reply, read)  # a truncated or refused reply is unreadable, as in the reward
    return Judgment() if isinstance(judgment, Unreadable) else judgment


async def judge_all(
    judge: Judge,
    jobs: Sequence[T],
    build: Callable[[T], Messages],
    concurrency: int,
    on_done: Callable[[int], None] = lambda n: None,
    read: Callable[[str], Judgment] = verdict_judgment,
    stop_on_context_length: bool = True,
) -> list[Judgment]:
    """``build(job)`` judged for every job, at most ``concurrency`` at a time, results in job order;
    ``read`` turns a reply into a judgment; ``stop_on_context_length``: see ``judge_once``.

    Messages are built when a job starts, so memory holds ``concurrency`` requests, not all of them.
    """
    results: list[Judgment | None] = [None] * len(jobs)
    next_job = iter(range(len(jobs)))

    async def worker() -> None:
        for index in next_job:
            results[index] = await judge_once(judge, build(jobs[index]), read, stop_on_context_length)
            on_done(1)

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(jobs))))]
    try:
        await asyncio.gather(*workers)
    except BaseException:  # a call that stops the run (judge_once): the other workers stop before it returns
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    return results  # type: ignore[return-value]


class ProgressLine:
    """``judged 1200/4000 calls, 95/s, cache hits 800, failures 0``, on stderr at most once a second."""

    def __init__(self, total: int, judge: CachedJudge | None = None, enabled: bool = True, every_s: float = 1.0):
        self.total, self.judge, self.enabled, self.every_s = total, judge, enabled, every_s
        self.done = 0
        self.start = self._last = time.perf_counter()
        self._line_open = False  # a progress line without its newline is on screen

    def __call__(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if self.enabled and (now - self._last >= self.every_s or self.done == self.total):
            self._last = now
            self._line_open = self.done < self.total
            print(f"\r{self.line()}", end="" if self._line_open else "\n", file=sys.stderr, flush=True)

    def end_line(self) -> None:
        """End an unfinished progress line, so that an error starts on a line of its own."""
        if self._line_open:
            print(file=sys.stderr, flush=True)
            self._line_open = False

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        text = f"judged {self.done}/{self.total} calls, {self.done / elapsed:.1f}/s"
        if self.judge is not None:
            stats = self.judge.stats
            text += f", cache hits {stats.hits}, failures {stats.failures}"
        return text


def failure_message(errors: dict[str, int], calls: int, cache: CachedJudge) -> str:
    failed = sum(errors.values())
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(errors.items()))
    first_error = getattr(cache, "first_error", None)
    first = f" The first failure: {judge_error_line(first_error)}" if first_error is not None else ""
    if failed == calls:
        return (
            f"all {calls} judge calls failed after retries ({kinds}); nothing written. Check that the endpoint is "
            f"up, the model name is one it serves and the API key variable is right.{first}"
        )
    return (
        f"{failed} of {calls} judge calls failed after retries ({kinds}); nothing written; the successful calls "
        f"are cached in {cache.path}: rerun the same command to retry only the failed ones. Pass "
        f"--allow-judge-errors to write results from what was judged (failed calls are counted, never scored).{first}"
    )


def stop_on_failures(errors: Mapping[str, int], calls: int, cache: CachedJudge, allowed: bool) -> None:
    """Raise ``JudgeFailures`` (before anything is written) when some of ``calls`` failed, unless ``allowed``."""
    if errors and not allowed:
        raise JudgeFailures(failure_message(dict(errors), calls, cache))
