"""``python -m verl.trainer.main_ppo`` with the legacy trainer reporting judge health (``trainer.use_v1=false``):
the same config, the same trainer, plus ``judge/...`` in the tracker every step. With ``trainer.use_v1=true`` it
runs verl's v1 task runner unchanged (the v1 trainers report through JudgeHealthSampler).

verl's legacy ``TaskRunner.run`` (verl/trainer/main_ppo_v0.py) names ``RayPPOTrainer`` itself; ``run`` below is
that method with ``JudgeHealthPPOTrainer`` in its place (verl's recipes replace a task runner the same way).
"""

from __future__ import annotations

import os
import socket

import hydra
import ray
from omegaconf import OmegaConf
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
from verl.trainer.main_ppo_v0 import TaskRunner
from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler, need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from writing_rl.reward_loop.health.entry.trainers import JudgeHealthPPOTrainer


class _JudgeHealthTaskRunner(TaskRunner.__ray_actor_class__):
    def run(self, config):
        from pprint import pprint

        from verl.utils.config import omega_conf_to_dataclass
        from verl.utils.dataset.rl_dataset import collate_fn
        from verl.workers.config import HFModelConfig

        print(f"TaskRunner hostname: {socket.gethostname()}, PID: {os.getpid()}")
        pprint(OmegaConf.to_container(config, resolve=True))
        OmegaConf.resolve(config)

        actor_rollout_cls, ray_worker_group_cls = self.add_actor_rollout_worker(config)
        self.add_critic_worker(config)
        self.add_reward_model_resource_pool(config)
        self.add_teacher_model_resource_pool(config)
        self.add_ref_policy_worker(config, actor_rollout_cls)
        validate_config(
            config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
        )
        model_config: HFModelConfig = omega_conf_to_dataclass(config.actor_rollout_ref.model)
        tokenizer, processor = model_config.tokenizer, model_config.processor
        resource_pool_manager = self.init_resource_pool_mgr(config)
        train_dataset = create_rl_dataset(
            config.data.train_files, config.data, tokenizer, processor, is_train=True,
            max_samples=config.data.get("train_max_samples", -1),
        )  # fmt: skip
        val_dataset = create_rl_dataset(
            config.data.val_files, config.data, tokenizer, processor, is_train=False,
            max_samples=config.data.get("val_max_samples", -1),
        )  # fmt: skip
        trainer = JudgeHealthPPOTrainer(
            config=config,
            tokenizer=tokenizer,
            processor=processor,
            role_worker_mapping=self.role_worker_mapping,
            resource_pool_manager=resource_pool_manager,
            ray_worker_group_cls=ray_worker_group_cls,
            train_dataset=train_dataset,
            val_dataset=val_dataset,
            collate_fn=collate_fn,
            train_sampler=create_rl_sampler(config.data, train_dataset),
        )
        trainer.init_workers()
        trainer.fit()


JudgeHealthTaskRunner = ray.remote(_JudgeHealthTaskRunner)


@hydra.main(config_path="pkg://verl.trainer.config", config_name="ppo_trainer", version_base=None)
def main(config):
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=TaskRunnerV1 if config.trainer.use_v1 else JudgeHealthTaskRunner)


if __name__ == "__main__":
    main()
