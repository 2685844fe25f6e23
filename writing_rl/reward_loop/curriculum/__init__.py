"""Writing-RL's reference curriculum: which reference each prompt is currently judged against.

``scheduler`` (the ``ReferenceScheduler`` Ray actor: levels, checkpoint cuts) over ``log`` (its write-ahead
log, snapshots and replay) and ``start`` (what a (re)started scheduler recovers); ``groups`` (a group's
pinned level and advance, one rollout at a time, and the batched calls that carry them); ``handle``
(``Curriculum``, what a reward fn holds); ``report`` (what ``writing-rl curriculum show`` prints).

Importing this package loads no Ray (only ``scheduler`` does).
"""

from writing_rl.reward_loop.curriculum.handle import Curriculum

__all__ = ["Curriculum"]
