"""``python -m verl.trainer.main_ppo`` with the legacy trainer reporting judge health (``trainer.use_v1=false``):
verl's own ``main`` and ``TaskRunner``, whose trainer is ``JudgeHealthPPOTrainer``. With ``trainer.use_v1=true``
it is verl's v1 run unchanged (the v1 trainers report through JudgeHealthSampler).
"""

from __future__ import annotations

import ray
import verl.trainer.main_ppo as verl_entry
import verl.trainer.main_ppo_v0 as verl_v0

from writing_rl.reward_loop.health.entry.swap import replace, replace_in
from writing_rl.reward_loop.health.entry.trainers import JudgeHealthPPOTrainer


@ray.remote  # verl's options for its TaskRunner
class JudgeHealthTaskRunner(verl_v0.TaskRunner.__ray_actor_class__):
    def run(self, config):
        replace_in(super().run, "RayPPOTrainer", JudgeHealthPPOTrainer)
        return super().run(config)


def main() -> None:
    replace(verl_v0, "TaskRunner", JudgeHealthTaskRunner)  # verl's main imports it from there when use_v1=false
    verl_entry.main()


if __name__ == "__main__":
    main()
