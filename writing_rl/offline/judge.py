"""The judge of the offline commands (``score``, ``select``, ``order-references``, ``eval``, ``probe-judge``)
and their calls through it.

- ``JudgeSettings``: the judge and pairwise template of a training config (``reward.reward_kwargs.judge``
  and the fn's ``template``), so that a command judges exactly as the reward does;
- ``ToolJudge``: an ``OpenAIJudge`` behind a ``CachedJudge`` (a rerun resumes after a crash), its endpoints
  checked before its first call; ``Judgment``: one call's verdict, value or counted failure;
- a bounded runner with a progress line, and the failure policy: judge errors stop a run before it writes
  anything, unless allowed; a reply that every call would get (HTTP 401, 403, 404: key, endpoint or model)
  stops it at once. Either way the answered calls stay cached and the same command resumes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

from hydra_configs import DEFAULT_OVERLAY
from writing_rl.judge import Judge, JudgeError, Messages, judge_client
from writing_rl.judge.base import JudgeReply
from writing_rl.judge.cache import CachedJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.errors import JudgeContextLengthError, JudgeHTTPError
from writing_rl.offline.endpoints import CheckedJudge
from writing_rl.offline.errors import JudgeFailures, judge_error_line
from writing_rl.offline.files import CACHE_FILE
from writing_rl.protocols import Unreadable, read_reply, verdict_or_none
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.settings import ConfigError


@dataclass(frozen=True)
class JudgeSettings:
    """The judge an offline tool calls, and the pairwise template it renders."""

    judge: JudgeConfig
    template: str | None = None  # pairwise template file; None = the built-in one


def load_judge_settings(
    config_name: str = DEFAULT_OVERLAY, overrides: Sequence[str] = (), config_dir: str | None = None
) -> JudgeSettings:
    """The judge of a training config (composed as ``main_ppo`` would), for use outside training."""
    from writing_rl.offline.compose import compose

    config = compose(config_name, overrides, config_dir)
    judge_raw = config.reward.reward_kwargs.get("judge") or {}
    if not judge_raw.get("base_url"):
        raise ConfigError(
            "no judge endpoint: pass --judge-url URL (or reward.reward_kwargs.judge.base_url=URL). Offline tools "
            "do not start verl's GenRM; serve one with `writing-rl serve-judge` or `vllm serve`"
        )
    judge = ManagerConfig.from_verl(config).judge
    fn_kwargs = config.reward.get("custom_reward_function", {}).get("reward_kwargs") or {}
    return JudgeSettings(judge=judge, template=fn_kwargs.get("template"))


@dataclass(frozen=True)
class Judgment:
    """One judge call's result: a verdict "A"/"B"/"C" (or another reader's ``value``), nothing read (a
    parse failure) or a failure kind."""

    verdict: str | None = None
    error: str | None = None  # JudgeError kind: timeout, connection, http, context_length, bad_response
    scores: tuple[int, int] | None = None  # (A, B) when the judge was asked for a score pair
    value: Any = None  # what a reader other than a verdict reader read (e.g. a critic's score and reason)

    @property
    def parse_failure(self) -> bool:
        return self.verdict is None and self.value is None and self.error is None


def verdict_judgment(text: str) -> Judgment:
    """The reply's verdict as a ``Judgment``; ``Judgment()`` (a parse failure) when it has none."""
    return Judgment(verdict=verdict_or_none(text))


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


def judge_jobs(
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
