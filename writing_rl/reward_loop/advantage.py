"""BRPO's advantage as an estimator of stock verl: the reward is the advantage.

Writing-Zero's BRPO already compares each rollout with a reference, so its +1 / 0 / -1 reward is the
advantage, and the bootstrap reference (reward 0) gets none. verl's ``grpo`` would subtract the group
mean again (with rewards [0 (reference), +1, -1, +1] the advantages become [-0.25, 0.75, -1.25,
0.75]), moving the reference and every rollout. verl 0.9.1 looks advantage estimators up by name in
``core_algos.ADV_ESTIMATOR_REGISTRY``, in whichever process computes advantages (the driver; fully-async's
trainer actor); our verl plugin (writing_rl/plugin.py) imports this module in every process once verl imports
``core_algos``. So ``algorithm.adv_estimator=brpo`` works with stock verl (hydra_configs/brpo.yaml).
"""

from __future__ import annotations

import torch
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

ESTIMATOR = "brpo"


def reward_as_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, **unused):
    """(advantages, returns): each response's summed reward on every one of its tokens."""
    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1, keepdim=True)
        advantages = scores * response_mask
    return advantages, advantages


# Registered once, even when verl's loader runs this module a second time under another name.
if ESTIMATOR not in ADV_ESTIMATOR_REGISTRY:
    register_adv_est(ESTIMATOR)(reward_as_advantage)
