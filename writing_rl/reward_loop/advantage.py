"""Advantage estimators a method adds to stock verl (``RewardMethod.advantage_estimators``), registered in every
process that computes advantages.

verl 0.9.1 looks estimators up by name in ``core_algos.ADV_ESTIMATOR_REGISTRY``, in whichever process computes
advantages (the driver; fully-async's trainer actor, which never loads the reward manager). Our verl plugin
(writing_rl/plugin.py) calls ``register_estimators`` in every process once verl imports ``core_algos``, so
``algorithm.adv_estimator=<name>`` works with stock verl. An estimator no config names is never used.
"""

from __future__ import annotations


def reward_as_advantage(token_level_rewards, response_mask, **unused):
    """(advantages, returns): each response's summed reward on every one of its tokens. For a method whose reward
    already compares the rollout with a baseline (Writing-Zero's BRPO: +1 / 0 / -1 against a bootstrap reference,
    0 for the reference), where verl's ``grpo`` would subtract the group mean a second time."""
    import torch

    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1, keepdim=True)
        advantages = scores * response_mask
    return advantages, advantages


def register_estimators() -> list[str]:
    """Adds every installed method's estimators to verl's registry (once, even when called again); their names."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    from writing_rl.reward_loop.registry import advantage_estimators

    found = advantage_estimators()
    for name, estimator in found.items():
        if name not in ADV_ESTIMATOR_REGISTRY:
            register_adv_est(name)(estimator)
    return sorted(found)
