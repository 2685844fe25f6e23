"""What a reward worker does around any reward fn, for both managers (per-sample and group).

One ``WorkerScoring`` per verl ``RewardLoopWorker``: the run's settings (read once), the worker's pooled
judge client, the judge-failure policy (reward_loop/failures.py), the result schema
(writing_rl/reward_loop/results.py), the failure guard, and what follows each sample: reward terms, watches,
the shadow judge, the sample log and the per-batch log line. Decoding a sample is reward_loop/sample.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Iterator

from writing_rl.judge import SampleJudge, judge_client
from writing_rl.reward_loop import results
from writing_rl.reward_loop.config import ManagerConfig, worker_concurrency
from writing_rl.reward_loop.contract import is_validation
from writing_rl.reward_loop.failure_guard import FailureGuard
from writing_rl.reward_loop.failures import FailurePolicy
from writing_rl.reward_loop.health.batch_summary import BatchSummary
from writing_rl.reward_loop.health.metrics import reports_health
from writing_rl.reward_loop.reward_fn import load_reward_fn
from writing_rl.reward_loop.sample import ResponseReader, Sample
from writing_rl.reward_loop.sample_log import SampleLog
from writing_rl.reward_loop.shadow.scoring import ShadowScoring, scored_cleanly
from writing_rl.settings import ConfigError

logger = logging.getLogger("writing_rl")


class WorkerScoring:
    def __init__(self, config, tokenizer, reward_router_address: str | None = None):
        if not config.reward.custom_reward_function.get("path"):
            raise ConfigError(
                "writing-rl's reward managers score with a judge-based reward fn: set "
                "reward.custom_reward_function.path to a method's fn (docs/methods/)"
            )
        self.reward_fn = load_reward_fn(config)  # first: a method loaded from a file registers its extras here
        self.settings = ManagerConfig.from_verl(config, reward_router_address)
        self.reward_fn.check_options(self.settings.on_parse_error)  # stops the worker at start, not at a sample
        reports_health(config)  # a config error (DAPO with the health sampler) stops the run at start
        num_workers = int(config.reward.get("num_workers") or 1)
        self.judge = judge_client(
            self.settings.judge,
            concurrency=worker_concurrency(self.settings.judge.max_concurrency, num_workers),
            workers=num_workers,  # each worker's share of judge.budget
        )
        self.reader = ResponseReader(tokenizer)  # a sample of verl's batch, decoded
        self.summary = BatchSummary(self.judge)
        settings = self.settings
        limits = {
            "judge_error": settings.max_judge_error_rate,
            "parse_error": settings.max_parse_error_rate,
            "group_incomplete": settings.max_group_incomplete_rate,
            "term_error": settings.max_term_error_rate,
        }
        self.guard = FailureGuard(limits, settings.failure_window, settings.failure_min_samples)
        loss = self.reward_fn.failure_score(settings.failure_score)
        self.failure = FailurePolicy(settings.on_judge_error, settings.on_parse_error, loss)
        self.keys = results.SameKeys()
        self.sample_log = SampleLog(settings.sample_log_dir) if settings.sample_log_dir else None
        self.shadow = self._shadow(num_workers)
        self.watch_failed = False  # a watch's failure was logged (once)
        self.in_flight = 0
        self.batches_started = 0  # a batch starts when a sample arrives at an idle worker
        _ensure_log_handler()

    def _shadow(self, num_workers: int) -> ShadowScoring | None:
        shadow = self.settings.shadow
        if not shadow.on:
            return None
        if "judge" not in self.reward_fn.parameters:
            raise ConfigError(
                f"reward.reward_kwargs.shadow.fraction={shadow.fraction:g}, but the reward fn {self.reward_fn.where} "
                "makes no judge calls (it declares no `judge` parameter): there is nothing to shadow; set it to 0"
            )
        return ShadowScoring(shadow, num_workers)

    def shadows(self, extra_info: dict | None, infos: list[dict]) -> bool:
        """Whether the shadow judge scores this sample (or group) too: training rows with a member whose
        training call succeeded (``infos``: the members' extra info), chosen at random."""
        if self.shadow is None or is_validation(extra_info) or not any(map(scored_cleanly, infos)):
            return False
        return self.shadow.chooses()

    @contextlib.contextmanager
    def sample_in_flight(self) -> Iterator[None]:
        """Around each ``run_single``: counts batches, and logs a batch's summary once the worker is idle."""
        if self.in_flight == 0:
            self.batches_started += 1
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0 and self.settings.log_summary:
                asyncio.get_running_loop().call_later(self.settings.summary_idle_s, self._log_if_idle)

    def new_judge(self, judge=None) -> SampleJudge:
        """A fresh record of one sample's (or group's) calls through ``judge`` (default: the worker's client)."""
        return SampleJudge(judge or self.judge, keep_transcripts=self.settings.keep_transcripts, client=self.judge)

    def apply_judge_policy(self, judge: SampleJudge) -> None:
        """The failure policy on a sample's (or group's) judge calls (it may stop the step); unreadable replies
        and failed calls go to the guard."""
        self.guard.remember(judge.unreadable)
        if judge.errors:
            self.guard.example("judge_error", str(judge.errors[-1]))
        self.failure.check_calls(judge)

    def complete(self, result: Any, defaults: dict | None = None, measured: dict | None = None) -> tuple[float, dict]:
        """``results.merge_info``, the check that this sample has the keys the worker's first had, and what the
        failure policy pays it."""
        score, info = results.merge_info(result, defaults, measured)
        self.keys.check(info)
        return self.failure.pay(score, info), info

    async def finish(
        self, sample: Sample, score: float, info: dict, latencies: list[float], transcripts: list[dict]
    ) -> dict:
        """Adds the reward terms (``reward.reward_kwargs.terms``) and the watches' measures (``watch``), counts
        the sample in the failure guard (which may stop the run) and the batch summary, adds the shadow judge's keys (``shadow.on_drift=stop``
        may stop the run), and returns verl's result for it."""
        if self.shadow is not None:
            self.shadow.check()
        if self.settings.terms:
            failed = any(info.get(key) for key in results.FAILURE_KEYS)
            score, info, error = await self.settings.terms.shape(
                score, info, sample.for_terms(), self.failure.loss, failed
            )
            if error is not None:
                self.guard.example("term_error", error)
        if self.settings.watch:
            measured, error = await self.settings.watch.measure(sample.for_terms())
            info = {**info, **measured}
            if error is not None and not self.watch_failed:  # once: watch_error counts the rest
                self.watch_failed = True
                logger.warning("%s (watch_error counts every failed measure; the reward is unchanged)", error)
        if self.shadow is not None:
            info = {**info, **self.shadow.carry(training=not is_validation(sample.fields.get("extra_info")))}
        self.guard.add(info)
        if self.sample_log is not None:
            self.sample_log.write(sample.fields.get("uid"), sample.prompt, sample.response, score, info)
        if self.settings.log_summary:  # only a logged summary is ever flushed
            self.summary.add(score, info, latencies)
            if self.summary.overdue():  # a worker that is never idle still logs
                logger.info(self.summary.flush())
        return results.verl_output(score, info, transcripts if self.settings.keep_transcripts else None)

    def _log_if_idle(self) -> None:
        if self.in_flight == 0 and self.summary.count:
            logger.info(self.summary.flush())


def _ensure_log_handler() -> None:
    # Ray workers start with no logging config; without a handler our INFO summary would be dropped.
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[writing-rl] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
