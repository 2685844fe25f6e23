"""Entry points that put ``judge/...`` in verl's tracker under the trainers without a replay buffer (``legacy``,
``fully-async``, ``one-step-off``): verl's own entry point, its trainer subclassed to add the step's judge health
(reward_loop/health/batch.py) where it gathers the step's metrics, nothing else changed. Why this route, and the
commands: docs/judges/health.md#legacy-fully-async-one-step-off-our-entry-points.
"""
