"""A watch (reward.reward_kwargs.watch) for tests/test_ray_job.py: a number from a variable of the reward
worker's environment, so the tracker shows whether a variable forwarded to a Ray job reached the workers."""

from __future__ import annotations

import os


def from_environment(data_source=None, solution_str: str = "", ground_truth=None, extra_info=None, name: str = ""):
    return float(os.environ[name])
