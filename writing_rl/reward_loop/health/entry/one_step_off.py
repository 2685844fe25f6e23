"""``python -m verl.experimental.one_step_off_policy.main_ppo`` reporting judge health: verl's own ``main`` and
``OneStepTaskRunner``, whose trainer is ``JudgeHealthOneStepOffTrainer``, plus ``judge/...`` in the tracker every
step.
"""

from __future__ import annotations

import ray
import verl.experimental.one_step_off_policy.main_ppo as verl_entry
from verl.experimental.one_step_off_policy.ray_trainer import OneStepOffRayTrainer

from writing_rl.reward_loop.health.entry.swap import replace, replace_in
from writing_rl.reward_loop.health.entry.trainers import JudgeHealthSteps


class JudgeHealthOneStepOffTrainer(JudgeHealthSteps, OneStepOffRayTrainer):
    """verl's one-step-off trainer with the step's ``judge/...`` among its metrics."""


@ray.remote(num_cpus=10, max_concurrency=100)  # verl's options for its task runner
class JudgeHealthOneStepTaskRunner(verl_entry.OneStepTaskRunner.__ray_actor_class__):
    def run(self, config):
        replace_in(super().run, "OneStepOffRayTrainer", JudgeHealthOneStepOffTrainer)
        return super().run(config)


def main() -> None:
    replace(verl_entry, "OneStepTaskRunner", JudgeHealthOneStepTaskRunner)
    verl_entry.main()


if __name__ == "__main__":
    main()
