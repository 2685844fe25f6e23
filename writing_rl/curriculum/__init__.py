"""Writing-RL's reference curriculum: which reference each prompt is currently judged against (its modules:
the map in docs/architecture.md).

The generic reward loop (writing_rl/reward_loop/) does not import this package: a method asks for it.
Importing this package loads no Ray (only ``scheduler`` does, once a worker starts the curriculum).
"""

from writing_rl.curriculum.extra import CURRICULUM
from writing_rl.curriculum.handle import Curriculum

__all__ = ["CURRICULUM", "Curriculum"]
