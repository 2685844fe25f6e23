"""What a method's service hears of the groups verl dropped untrained (stale or failed: evicted from its replay
buffer before a step trained on them), so it can take back what they did (Writing-RL's curriculum moves a
prompt's level back down). A listener's contract: docs/methods/your-own.md; ``JudgeHealthSampler``
(reward_loop/health/sampler.py) tells every listener it finds, without knowing what they are.
"""

from __future__ import annotations

import ray

PREFIX = "writing_rl_dropped_groups_"


def listener_name(kind: str) -> str:
    return f"{PREFIX}{kind}_{ray.get_runtime_context().get_job_id()}"


def listeners() -> list[str]:
    """The names of this run's listeners (one GCS call: made only when groups were dropped)."""
    job = ray.get_runtime_context().get_job_id()
    return [name for name in ray.util.list_named_actors() if name.startswith(PREFIX) and name.endswith(f"_{job}")]
