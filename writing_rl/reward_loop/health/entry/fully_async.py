"""``python -m verl.experimental.fully_async_policy.fully_async_main`` reporting judge health, each step's metrics
filed under its own step: the same config, rollouter and trainer otherwise.

verl's ``FullyAsyncTaskRunner._create_trainer`` names ``FullyAsyncTrainer`` itself; ``_create_trainer`` below is that
method with ``JudgeHealthFullyAsyncTrainer`` in its place (verl's recipes replace a task runner the same way).

Step accounting: verl's trainer adds a step's metrics to its sync cycle's aggregate at the end of the step
(``_fit_postprocess_step``) but logs the aggregate earlier in the step that ends the cycle
(``_fit_log_aggregated_training_metrics``, right after the weight update): what it logs at version v is the cycle
before, and the last cycle is logged only by the extra weight update at the end of ``fit``, which it makes only
when the last version is not a multiple of ``trainer.test_freq``. Ours logs each cycle once its last step is in the
aggregate, under the version that cycle's update made: with ``async_training.trigger_parameter_sync_step=1``, each
step under its own number.
"""

from __future__ import annotations

from pathlib import Path

import hydra
import ray
import verl.experimental.fully_async_policy.fully_async_main as verl_entry
from verl.experimental.fully_async_policy.fully_async_main import FullyAsyncTaskRunner
from verl.experimental.fully_async_policy.fully_async_trainer import FullyAsyncTrainer
from verl.experimental.reward_loop import migrate_legacy_reward_impl
from verl.experimental.separation.utils import create_resource_pool_manager
from verl.trainer.ppo.utils import Role
from verl.utils.device import auto_set_device

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


class _JudgeHealthFullyAsyncTaskRunner(FullyAsyncTaskRunner.__ray_actor_class__):
    def _create_trainer(self, config) -> None:
        mapping = {role: cls for role, cls in self.components["role_worker_mapping"].items() if role != Role.Rollout}
        trainer = JudgeHealthFullyAsyncTrainer.remote(
            config=config,
            tokenizer=self.components["tokenizer"],
            role_worker_mapping=mapping,
            resource_pool_manager=create_resource_pool_manager(config, roles=list(mapping.keys())),
            ray_worker_group_cls=self.components["ray_worker_group_cls"],
            device_name=config.trainer.device,
        )
        ray.get(trainer.init_workers.remote())
        self.components["trainer"] = trainer


JudgeHealthFullyAsyncTaskRunner = ray.remote(num_cpus=1)(_JudgeHealthFullyAsyncTaskRunner)


@hydra.main(
    config_path=str(Path(verl_entry.__file__).parent / "config"),  # verl's own, beside its entry point
    config_name="fully_async_ppo_trainer",
    version_base=None,
)
def main(config):
    from verl.trainer.main_ppo import run_ppo

    if not hasattr(config, "async_training"):
        raise RuntimeError("must set async_training config")
    auto_set_device(config)
    config.actor_rollout_ref.rollout.nnodes = config.rollout.nnodes
    config.actor_rollout_ref.rollout.n_gpus_per_node = config.rollout.n_gpus_per_node
    config = migrate_legacy_reward_impl(config)
    run_ppo(config, task_runner_class=JudgeHealthFullyAsyncTaskRunner)


if __name__ == "__main__":
    main()
