"""Judge health of a training batch verl's trainer holds as a ``DataProto``: the route to the tracker for the
trainers without a replay buffer (``legacy``, ``fully-async``, ``one-step-off``; entry/ holds their entry points).

verl keeps each sample's reward extra info in the batch (``non_tensor_batch``, one array per key named in
``meta_info["reward_extra_keys"]``), its reward in ``rm_scores`` and its response's tokens in ``response_mask``:
streamed rewards (the agent loop's) and a colocated GenRM's (``RewardLoopManager.compute_rm_score``) alike.
"""

from __future__ import annotations

import logging
from typing import Any

from writing_rl.reward_loop.health.metrics import cumulative_cost, judge_health, rows_from_columns

logger = logging.getLogger("writing_rl")


def batch_health(batch: Any) -> dict[str, float]:
    """``judge/...`` of the samples of ``batch`` (a verl ``DataProto`` with ``rm_scores``)."""
    from verl.trainer.ppo.reward import extract_reward

    reward_tensor, extra = extract_reward(batch)
    size = len(reward_tensor)
    rows = rows_from_columns(extra, size)
    scores = reward_tensor.sum(dim=-1).tolist()
    lengths = batch.batch["response_mask"].sum(dim=-1).tolist() if "response_mask" in batch.batch.keys() else None
    return judge_health(rows, scores, lengths)


class StepHealth:
    """Each training step's ``judge/...``, and the judge's cost over the steps so far (``judge/cost_cumulative``;
    a resumed run starts it from 0 again). A failure to read them is a warning, never a stopped step."""

    def __init__(self) -> None:
        self.cost_so_far: dict[str, float] = {}

    def __call__(self, batch: Any) -> dict[str, float]:
        try:
            metrics = batch_health(batch)
        except Exception as err:  # a health report must never stop a training step
            logger.warning("judge health: no judge/ metrics this step (%s: %s)", type(err).__name__, err)
            return {}
        return {**metrics, **cumulative_cost(self.cost_so_far, metrics)}
