"""A reward worker's shadow judge: the same reward fn run again, with a second judge, on a random share of
the samples whose training call succeeded (docs/trust-your-judge.md#shadow-the-judge-during-a-run).

The shadow's call runs in the background on the worker's event loop, with its own client; it never changes a
reward, and its own failures never stop training. Each sample this worker returns carries the sums of the shadow
results that finished since its previous sample (``SHADOW_KEYS``), so per-step means are sums over sums and a
result never waits for its own sample. Each result feeds the worker's ``DriftWatch`` (watch.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from typing import Any, Awaitable, Callable

from writing_rl.judge import SampleJudge, judge_client
from writing_rl.reward_loop.config import ShadowConfig, worker_concurrency
from writing_rl.reward_loop.results import FAILURE_KEYS
from writing_rl.reward_loop.shadow.keys import SHADOW_KEYS
from writing_rl.reward_loop.shadow.watch import DriftReading, DriftWatch

logger = logging.getLogger("writing_rl")

# (score, extra info) of each sample the fn scored with the shadow's judge, in the order given.
Scored = list[tuple[float, dict]]


class ShadowDrift(RuntimeError):
    """The training judge's reward drifted away from the shadow's and ``shadow.on_drift=stop``."""


def scored_cleanly(info: dict) -> bool:
    """No judge failure, unreadable reply, format error or incomplete group in a sample's extra info."""
    return not any(info.get(key) for key in FAILURE_KEYS)


class ShadowScoring:
    def __init__(self, config: ShadowConfig, num_workers: int = 1, judge=None):
        self.config = config
        share = worker_concurrency(config.judge.max_concurrency, num_workers)
        self.judge = (
            judge
            if judge is not None
            else judge_client(config.judge, concurrency=share, workers=num_workers, upstream_group="shadow")
        )
        self._choose = random.Random(config.seed).random
        self.watch = DriftWatch(config.drift_window, config.drift_min_gain, config.drift_z, config.drift_looks)
        self.reading = DriftReading()
        self.pending: set[asyncio.Task] = set()
        self._carried = dict(SHADOW_KEYS)
        self.failures = 0
        self._warned_failures = 0
        self._warned_drift = False

    def chooses(self) -> bool:
        """Whether the sample (or group) at hand is shadowed: ``fraction`` of them, at random."""
        return self._choose() < self.config.fraction

    def start(self, score_with: Callable[[SampleJudge], Awaitable[Scored]], train_rewards: list[float | None]) -> None:
        """Score again in the background: ``score_with(judge)`` runs the reward fn with the shadow's judge
        and gives one (score, info) per entry of ``train_rewards``, the training judge's rewards (None: a
        member whose training call failed, left out)."""
        if len(self.pending) >= self.config.max_pending:
            self._carried["shadow_skipped"] += sum(r is not None for r in train_rewards)
            return
        task = asyncio.get_running_loop().create_task(self._score(score_with, train_rewards))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _score(self, score_with: Callable[[SampleJudge], Awaitable[Scored]], train_rewards: list[float | None]):
        judge = SampleJudge(self.judge)
        try:
            scored = await score_with(judge)
        except Exception as err:  # a bug or a broken fn: the shadow's alone; training goes on
            self._failed(sum(r is not None for r in train_rewards), f"{type(err).__name__}: {err}")
            return
        finally:
            spent = judge.metrics()
            self._carried["shadow_calls"] += spent["judge_calls"]
            self._carried["shadow_tokens"] += spent["judge_tokens"]
            self._carried["shadow_cost"] += spent.get("judge_cost", 0.0)
        for train_reward, (shadow_reward, info) in zip(train_rewards, scored):
            if train_reward is None:
                continue
            if not scored_cleanly(info):
                self._failed(1, str(judge.errors[-1]) if judge.errors else "an unreadable shadow reply")
            elif not (math.isfinite(train_reward) and math.isfinite(shadow_reward)):
                self._failed(1, f"a reward that is not a finite number ({train_reward}, {shadow_reward})")
            else:
                self._add(train_reward, shadow_reward)

    def _add(self, train_reward: float, shadow_reward: float) -> None:
        carried = self._carried
        carried["shadow_samples"] += 1
        carried["shadow_train_reward_sum"] += train_reward
        carried["shadow_reward_sum"] += shadow_reward
        carried["shadow_agree_sum"] += int(abs(train_reward - shadow_reward) <= self.config.agree_within + 1e-9)
        self.reading = self.watch.add(train_reward, shadow_reward)
        if self.reading.drifting and not self._warned_drift:
            self._warned_drift = True
            action = "the run stops" if self.config.on_drift == "stop" else "training goes on (shadow.on_drift=warn)"
            logger.warning("shadow judge: drift: %s; %s", self.reading.describe(), action)

    def _failed(self, samples: int, why: str) -> None:
        self._carried["shadow_failed"] += samples
        self.failures += samples
        if self.failures >= 2 * self._warned_failures:  # 1, 2, 4, 8 ...: seen, not flooding the log
            self._warned_failures = self.failures
            logger.warning("shadow judge: %d shadowed sample(s) not scored so far; the latest: %s", self.failures, why)

    def check(self) -> None:
        """Raises ``ShadowDrift`` once the watch saw drift, under ``on_drift=stop``."""
        if self.reading.drifting and self.config.on_drift == "stop":
            raise ShadowDrift(
                f"shadow judge: drift: {self.reading.describe()}. The policy may be exploiting the training "
                "judge; stopping (reward.reward_kwargs.shadow.on_drift=stop). See docs/trust-your-judge.md, or set "
                "shadow.on_drift=warn to go on."
            )

    def carry(self, training: bool = True) -> dict[str, Any]:
        """The shadow keys of the sample leaving now: the results finished since the last training sample, and
        the watch. A validation sample carries none (verl's tracker reads training samples only)."""
        if training:
            carried, self._carried = self._carried, dict(SHADOW_KEYS)
        else:
            carried = dict(SHADOW_KEYS)
        reading = self.reading
        carried["shadow_drift"] = int(reading.drifting) if reading.ready else -1
        carried["shadow_train_gain"] = reading.train_gain
        carried["shadow_gain"] = reading.shadow_gain
        return carried
