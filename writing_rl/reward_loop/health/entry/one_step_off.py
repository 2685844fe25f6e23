"""``python -m verl.experimental.one_step_off_policy.main_ppo`` reporting judge health: the same config and trainer,
plus ``judge/...`` in the tracker every step.

verl's ``OneStepTaskRunner.run`` (verl/experimental/one_step_off_policy/main_ppo.py) names ``OneStepOffRayTrainer``
itself; ``run`` below is that method with ``JudgeHealthOneStepOffTrainer`` in its place.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import hydra
import ray
import verl.experimental.one_step_off_policy.main_ppo as verl_entry
from omegaconf import OmegaConf
from verl.experimental.one_step_off_policy.main_ppo import OneStepTaskRunner
from verl.experimental.one_step_off_policy.ray_trainer import OneStepOffRayTrainer
from verl.experimental.separation.utils import create_resource_pool_manager, create_role_worker_mapping
from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler, need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from writing_rl.reward_loop.health.entry.trainers import JudgeHealthSteps


class JudgeHealthOneStepOffTrainer(JudgeHealthSteps, OneStepOffRayTrainer):
    """verl's one-step-off trainer with the step's ``judge/...`` among its metrics."""


class _JudgeHealthOneStepTaskRunner(OneStepTaskRunner.__ray_actor_class__):
    def run(self, config):
        from pprint import pprint

        from verl.utils import hf_processor, hf_tokenizer
        from verl.utils.dataset.rl_dataset import collate_fn
        from verl.utils.fs import copy_to_local

        print(f"TaskRunner hostname: {socket.gethostname()}, PID: {os.getpid()}")
        pprint(OmegaConf.to_container(config, resolve=True))
        OmegaConf.resolve(config)
        role_worker_mapping, ray_worker_group_cls = create_role_worker_mapping(config)
        validate_config(
            config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
        )
        model = config.actor_rollout_ref.model
        local_path = copy_to_local(model.path, use_shm=model.get("use_shm", False))
        trust_remote_code = config.data.get("trust_remote_code", False)
        tokenizer = hf_tokenizer(local_path, trust_remote_code=trust_remote_code)
        processor = hf_processor(local_path, trust_remote_code=trust_remote_code, use_fast=True)
        data = config.data
        train_dataset = create_rl_dataset(
            data.train_files, data, tokenizer, processor, max_samples=data.get("train_max_samples", -1)
        )
        val_dataset = create_rl_dataset(
            data.val_files, data, tokenizer, processor, max_samples=data.get("val_max_samples", -1)
        )
        trainer = JudgeHealthOneStepOffTrainer(
            config=config,
            tokenizer=tokenizer,
            processor=processor,
            role_worker_mapping=role_worker_mapping,
            resource_pool_manager=create_resource_pool_manager(config, role_worker_mapping.keys()),
            ray_worker_group_cls=ray_worker_group_cls,
            train_dataset=train_dataset,
            val_dataset=val_dataset,
            collate_fn=collate_fn,
            train_sampler=create_rl_sampler(data, train_dataset),
            device_name=config.trainer.device,
        )
        trainer.init_workers()
        asyncio.run(trainer.fit())


# verl's options for its task runner: it must not be scheduled on the head.
JudgeHealthOneStepTaskRunner = ray.remote(num_cpus=10, max_concurrency=100)(_JudgeHealthOneStepTaskRunner)


@hydra.main(
    config_path=str(Path(verl_entry.__file__).parent / "config"),  # verl's own, beside its entry point
    config_name="one_step_off_ppo_trainer",
    version_base=None,
)
def main(config):
    from verl.trainer.main_ppo import run_ppo

    auto_set_device(config)
    config.actor_rollout_ref.rollout.nnodes = config.rollout.nnodes
    config.actor_rollout_ref.rollout.n_gpus_per_node = config.rollout.n_gpus_per_node
    run_ppo(config, task_runner_class=JudgeHealthOneStepTaskRunner)


if __name__ == "__main__":
    main()
