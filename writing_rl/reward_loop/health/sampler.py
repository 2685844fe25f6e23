"""Judge health in the tracker under verl's v1 trainer (``trainer.use_v1=true``, verl's default).

verl's v1 trainer adds the metrics its replay buffer's ``sample()`` returns to the step's metrics (trainer_base.py
``_step_once``: ``metrics.update(off_policy_metrics)``) and takes a user's replay buffer from
``trainer.v1.sampler.custom_sampler.{path,name}``. ``JudgeHealthSampler`` is verl's own buffer for the trainer
mode that also reads the sampled trajectories' reward extra info, rewards and response lengths back from the
TransferQueue (as verl's own DAPO filter and rollout dump do), and reads the groups verl evicts untrained before
verl clears them. Streaming rewards only: there the agent loop scores each sample before it enters the
TransferQueue; with a colocated GenRM verl scores after sampling (``_compute_reward_colocate``). The setting, the
metrics and the limits: docs/judges/health.md.
"""

from __future__ import annotations

import logging
from typing import Any

import ray
import transfer_queue as tq
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

from writing_rl.reward_loop.dropped_groups import listeners
from writing_rl.reward_loop.health.metrics import (
    cumulative_cost,
    dropped_spend,
    judge_health,
)

logger = logging.getLogger("writing_rl")

TRAIN_PARTITION = "train"


def trajectory_health(keys: list[str], partition_id: str) -> dict[str, float]:
    """``judge/...`` of the trajectories ``keys``, read from the TransferQueue."""
    if not keys:
        return {}
    data = tq.kv_batch_get(
        keys=keys, partition_id=partition_id, select_fields=["extra_fields", "rm_scores", "responses"]
    )
    rows = [_reward_extra_info(value) for value in data["extra_fields"]]
    scores = data["rm_scores"].sum(dim=1).tolist()
    lengths = data["responses"].offsets().diff().tolist()
    return judge_health(rows, scores, lengths)


def _reward_extra_info(value: Any) -> dict:
    extra_fields = getattr(value, "data", value)  # a NonTensorData on some TransferQueue backends
    info = extra_fields.get("reward_extra_info") if isinstance(extra_fields, dict) else None
    return info if isinstance(info, dict) else {}


def dropped_cost(keys: list[str], partition_id: str) -> dict[str, float]:
    """What the judge spent on the trajectories ``keys``, read from the TransferQueue before verl clears them."""
    if not keys:
        return {}
    data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["extra_fields"])
    return dropped_spend([_reward_extra_info(value) for value in data["extra_fields"]])


class _JudgeHealth:
    """Judge health of each trained sample, and what verl evicted untrained: the judge calls it cost
    (``judge/dropped_*_total``) and, for stale and failed groups, the curriculum moves they made, taken
    back (not for DAPO-filtered groups: a group whose every rollout beat its reference is filtered for
    having no signal, and is exactly the group that should move its prompt on)."""

    _dropped: dict[str, float] | None = None
    _withdrawals: list | None = None  # the scheduler's answers still to come
    _cost_so_far: dict | None = None  # each judge's cost over the steps sampled so far (<prefix>cost_cumulative)

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        batch, metrics = super().sample(global_steps=global_steps, partition_id=partition_id, batch_size=batch_size)
        if partition_id == TRAIN_PARTITION:
            try:
                metrics = {**metrics, **trajectory_health(list(batch.keys), batch.partition_id)}
            except Exception as err:  # a health report must never stop a training step
                logger.warning("judge health: no judge/ metrics this step (%s: %s)", type(err).__name__, err)
            metrics = {**metrics, **(self._dropped or {}), **self.withdrawn()}
            metrics.update(self._cumulative_cost(metrics))
            self._dropped = None
        return batch, metrics

    def _cumulative_cost(self, metrics: dict) -> dict[str, float]:
        self._cost_so_far = self._cost_so_far or {}
        return cumulative_cost(self._cost_so_far, metrics)

    def _clear_groups(self, partition_id: str, uids: set[str]) -> None:
        """verl's eviction (staleness, a failed or filtered group, a surplus): every group ends up here."""
        if partition_id == TRAIN_PARTITION and uids:
            keys = [key for key in self.partitions[partition_id] if key.split("_")[0] in uids]
            try:
                counts = dropped_cost(keys, partition_id)
            except Exception as err:  # a report must never stop a training step
                logger.warning("judge health: dropped samples not counted (%s: %s)", type(err).__name__, err)
                counts = {}
            self._dropped = self._dropped or {}
            for name, value in counts.items():
                self._dropped[name] = self._dropped.get(name, 0.0) + value
        super()._clear_groups(partition_id, uids)

    def _evict_terminal_groups(self, global_steps: int, partition_id: str, eviction_reasons: tuple):
        stale, _filtered, failed, _counts = eviction_reasons
        if partition_id == TRAIN_PARTITION and (stale or failed):
            self._withdraw(sorted(stale | failed))
        return super()._evict_terminal_groups(global_steps, partition_id, eviction_reasons)

    def _withdraw(self, uids: list[str]) -> None:
        """Tells each of the run's dropped-groups listeners (reward_loop/dropped_groups.py: the reference
        scheduler, when the method has a curriculum) that groups ``uids`` will not be trained on, without
        waiting: the step must not stall while Ray restarts a listener."""
        answers = []
        for name in listeners():
            try:
                answers.append(ray.get_actor(name).dropped.remote(uids))
            except ValueError:  # gone since it was listed
                continue
        self._withdrawals = [*(self._withdrawals or []), *answers]

    def withdrawn(self) -> dict[str, float]:
        """The totals the listeners' answers that have come back report (e.g. ``curriculum/withdrawn_advances_total``)."""
        if not self._withdrawals:
            return {}
        done, self._withdrawals = ray.wait(self._withdrawals, num_returns=len(self._withdrawals), timeout=0)
        totals: dict[str, float] = {}
        for answer in done:
            try:
                for key, value in ray.get(answer).items():
                    totals[key] = totals.get(key, 0.0) + float(value)
            except Exception as err:  # a report must never stop a training step
                logger.warning("dropped groups: a listener's answer failed (%s: %s)", type(err).__name__, err)
        return totals


class RewardFailedError(RuntimeError):
    """Some rollouts of a synchronous step could not be scored: the step stops instead of training without them."""


class JudgeHealthReplayBuffer(_JudgeHealth, ReplayBuffer):
    """verl's sync replay buffer, reporting judge health per training sample, and stopping a step whose
    rollouts were not all scored.

    A rollout whose reward raised (the failure guard's ``FailureRateExceeded``, ``on_judge_error=raise``,
    ``on_parse_error=raise``, a configuration error) fails its agent-loop session, and verl marks its group
    ``failure``. verl's sync buffer would then train on the group's other rollouts, or raise a message about
    "materializable trajectories" once no rollout is left: a step trained on a silently smaller batch, or
    an error that hides its cause. Here the step stops, naming the cause's place in the log."""

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        try:
            batch, metrics = super().sample(global_steps=global_steps, partition_id=partition_id, batch_size=batch_size)
        except RuntimeError as err:
            if partition_id != TRAIN_PARTITION or "materializable" not in str(err):
                raise
            raise RewardFailedError(_failed_message(len(self.failure_keys[partition_id]), batch_size)) from err
        failed = self.failure_keys[partition_id] if partition_id == TRAIN_PARTITION else ()
        if failed:
            raise RewardFailedError(_failed_message(len(failed), batch_size))
        return batch, metrics


def _failed_message(failed: int, batch_size: int) -> str:
    return (
        f"{failed} of the {batch_size} prompt groups of this step have rollouts that could not be scored: their "
        "rewards raised in verl's reward loop (the cause is above in the log, from a RewardLoopWorker: e.g. "
        "FailureRateExceeded, or a judge failure under on_judge_error=raise). Stopping instead of training on "
        "the rest of the batch (writing_rl's JudgeHealthSampler, verl's v1 sync trainer)."
    )


class JudgeHealthReplayBufferAsync(_JudgeHealth, ReplayBufferAsync):
    """verl's async replay buffer, reporting judge health per training sample."""


def JudgeHealthSampler(**kwargs) -> ReplayBuffer:  # noqa: N802 - verl calls it as the sampler class
    """What verl builds from ``custom_sampler``: the replay buffer its trainer mode would use, with health."""
    if kwargs.get("trainer_mode") == "sync":
        return JudgeHealthReplayBuffer(**kwargs)
    return JudgeHealthReplayBufferAsync(**kwargs)
