"""``python -m verl.experimental.fully_async_policy.fully_async_main`` reporting judge health, each step's metrics
filed under its own step: the same config, rollouter and trainer otherwise (verl's own ``main`` and
``FullyAsyncTaskRunner``, whose trainer is ``JudgeHealthFullyAsyncTrainer``).

Step accounting (docs/judges/health.md, "fully-async's steps"): verl adds a step's metrics to its sync cycle's
aggregate in ``_fit_postprocess_step`` but logs the aggregate earlier, in ``_fit_log_aggregated_training_metrics``
right after the weight update. Ours logs each cycle once its last step is in the aggregate, under the version
that cycle's update made.
"""

from __future__ import annotations

import ray
import verl.experimental.fully_async_policy.fully_async_main as verl_entry
from verl.experimental.fully_async_policy.fully_async_trainer import FullyAsyncTrainer

from writing_rl.reward_loop.health.entry.swap import replace, replace_in
from writing_rl.reward_loop.health.entry.trainers import JudgeHealthSteps
from writing_rl.reward_loop.health.metrics import COST_CUMULATIVE
from writing_rl.reward_loop.health.shadow import PREFIX as SHADOW_PREFIX

RUNNING_TOTALS = (COST_CUMULATIVE, f"{SHADOW_PREFIX}cost_cumulative")


def keep_running_totals(aggregator) -> None:
    """The aggregate of a sync cycle of several steps keeps a running total's last value, not the steps' mean."""
    aggregator.aggregation_rules["last"].extend(RUNNING_TOTALS)


class _JudgeHealthFullyAsyncTrainer(JudgeHealthSteps, FullyAsyncTrainer.__ray_actor_class__):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        keep_running_totals(self.metrics_aggregator)
        self._cycle_end: dict | None = None  # the rollouter's timings of a finished cycle, logged with it

    def _fit_log_aggregated_training_metrics(self, rollout_reset_timing_raw: dict):
        self._cycle_end = rollout_reset_timing_raw  # its last step is not in the aggregate yet

    def _fit_postprocess_step(self):
        super()._fit_postprocess_step()
        self._log_finished_cycle()

    async def fit(self):
        await super().fit()
        self._log_finished_cycle()  # a last, partial cycle, ended by fit's own weight update

    def _log_finished_cycle(self) -> None:
        if self._cycle_end is not None:
            cycle_end, self._cycle_end = self._cycle_end, None
            super()._fit_log_aggregated_training_metrics(cycle_end)


JudgeHealthFullyAsyncTrainer = ray.remote(num_cpus=10)(_JudgeHealthFullyAsyncTrainer)  # verl's options


@ray.remote(num_cpus=1)  # verl's options for its task runner
class JudgeHealthFullyAsyncTaskRunner(verl_entry.FullyAsyncTaskRunner.__ray_actor_class__):
    def run(self, config):
        replace_in(super()._create_trainer, "FullyAsyncTrainer", JudgeHealthFullyAsyncTrainer)
        return super().run(config)


def main() -> None:
    replace(verl_entry, "FullyAsyncTaskRunner", JudgeHealthFullyAsyncTaskRunner)
    verl_entry.main()


if __name__ == "__main__":
    main()
