"""Writing-RL's reference curriculum: which reference each prompt is currently judged against.

``extra`` (``CURRICULUM``: the service Writing-RL's method asks for, started in each reward worker) over
``scheduler`` (the ``ReferenceScheduler`` Ray actor: levels, checkpoint cuts), ``log`` (its write-ahead log,
snapshots and replay) and ``start`` (what a (re)started scheduler recovers); ``groups`` (a group's pinned
level and advance, one rollout at a time, and the batched calls that carry them); ``handle`` (``Curriculum``,
what a reward fn holds); ``report`` (what ``writing-rl curriculum show`` prints).

The generic reward loop (writing_rl/reward_loop/) does not import this package: a method asks for it.
Importing this package loads no Ray (only ``scheduler`` does, once a worker starts the curriculum).
"""

from writing_rl.curriculum.extra import CURRICULUM
from writing_rl.curriculum.handle import Curriculum

__all__ = ["CURRICULUM", "Curriculum"]
