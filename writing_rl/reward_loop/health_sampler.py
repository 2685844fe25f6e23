"""The old path of ``JudgeHealthSampler`` (now reward_loop/health/sampler.py), kept for configs that name it."""

from writing_rl.reward_loop.health.sampler import JudgeHealthSampler  # noqa: F401
