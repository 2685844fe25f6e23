"""``Curriculum``: what a reward fn holds of the reference scheduler (curriculum/scheduler.py).

No Ray at import: the handle only calls methods of the actor handle it is given, so the reward-fn
contract (reward_loop/contract.py) can name it without bringing Ray into a reward fn's import.
"""

from __future__ import annotations

from typing import Callable

from writing_rl.curriculum.groups import Batched, GroupPins


class Curriculum:
    """What a reward fn holds: the run's scheduler actor, through this worker's batched calls.

    ``pin``/``advance``: a whole group's (GroupRewardManager). ``pin_group``/``report``: one rollout at a
    time (curriculum/groups.py). ``can_advance=False`` for a late member scored on its own after its
    group: its group already had its one chance to move the level.
    """

    def __init__(
        self,
        handle,
        can_advance: bool = True,
        batched: Batched | None = None,
        timeout_s: float = 1800.0,
        failed: Callable[[Exception], None] | None = None,
        pins: GroupPins | None = None,
        reports: Batched | None = None,
    ):
        self.handle = handle
        self.can_advance = can_advance
        self.batched = batched
        self.timeout_s = timeout_s
        self.failed = failed  # told of a call's error (the worker then looks the actor up again)
        self.pins = pins  # the levels this worker already knows, by group
        self.reports = reports or batched

    async def pin(self, key: str, references: int) -> int:
        return await self._call("pin", key, references)

    async def advance(self, key: str, pinned: int, uid: str | None = None) -> bool:
        """Moves ``key`` up one from ``pinned``; ``uid`` names the group, so the move is taken back if verl
        drops the group without training on it."""
        if not self.can_advance:
            return False
        return await self._call("advance", key, pinned, uid)

    async def _call(self, method: str, *args):
        try:
            return await getattr(self.handle, method).remote(*args)
        except Exception as err:
            if self.failed is not None:
                self.failed(err)
            raise

    async def pin_group(self, key: str, references: int, uid: str, expected: int) -> int:
        """The level every rollout of group ``uid`` is judged at (pinned by the first to ask)."""

        def ask():
            return self.batched(("pin", key, references, uid, expected, self.timeout_s))

        return await (ask() if self.pins is None else self.pins.level(uid, ask, self.timeout_s))

    async def report(self, uid: str, won: bool, threshold: float) -> bool:
        """One rollout's outcome; the group's last report moves the level (durably) when it qualifies."""
        return await self.reports(("report", uid, won, threshold))


class PinnedCurriculum(Curriculum):
    """The curriculum as a shadow judge's call of the fn sees it: every pin answers the level the training
    judge's call was judged at, and nothing moves (a second judge must never advance a prompt)."""

    def __init__(self, level: int):
        super().__init__(handle=None, can_advance=False)
        self.level = int(level)

    async def pin(self, key: str, references: int) -> int:
        return min(self.level, references - 1)

    async def pin_group(self, key: str, references: int, uid: str, expected: int) -> int:
        return min(self.level, references - 1)

    async def advance(self, key: str, pinned: int, uid: str | None = None) -> bool:
        return False

    async def report(self, uid: str, won: bool, threshold: float) -> bool:
        return False
