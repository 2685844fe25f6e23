"""verl's trainers with the step's judge health among the step's metrics (reward_loop/health/batch.py).

- ``legacy``: ``RayPPOTrainer.fit`` gathers a step's metrics in a local dict that no method it calls receives; it
  adds the actor update's output metrics to it as they are (``reduce_metrics(actor_output.meta_info["metrics"])``),
  and by then the batch holds every sample's reward extra info: the judge's numbers ride there.
- ``fully-async``, ``one-step-off``: both trainers build on verl's ``SeparateRayPPOTrainer``, whose step is a
  template of ``_fit_*`` methods; ``_fit_collect_metrics(batch)`` adds to the step's ``self.metrics``.
"""

from __future__ import annotations

from verl.trainer.ppo.ray_trainer import RayPPOTrainer

from writing_rl.reward_loop.health.batch import StepHealth


class JudgeHealthPPOTrainer(RayPPOTrainer):
    """verl's legacy trainer; each actor update's metrics also carry the step's ``judge/...``. (A step that does not
    update the actor, during ``trainer.critic_warmup``, has none.)"""

    _step_health: StepHealth | None = None

    def _update_actor(self, batch):
        output = super()._update_actor(batch)
        self._step_health = self._step_health or StepHealth()
        output.meta_info["metrics"].update(self._step_health(batch))
        return output


class JudgeHealthSteps:
    """Mixed into a ``SeparateRayPPOTrainer`` subclass: the step's ``judge/...`` among its metrics."""

    _step_health: StepHealth | None = None

    def _fit_collect_metrics(self, batch):
        super()._fit_collect_metrics(batch)
        self._step_health = self._step_health or StepHealth()
        self.metrics.update(self._step_health(batch))
