"""Writing-RL's groups as the reference scheduler sees them, one rollout at a time: neither the level a group is
judged at nor its advance needs the rollouts together (docs/methods/writing-rl.md, "Curriculum"). The first
rollout of a group (verl's ``uid``) to reach the scheduler pins the level for all (``GroupTally``); the last
report decides the advance.

Reward workers send these requests through ``Batched`` (the reports of one group in a call go as one:
``merge_reports``); a worker asks for a group's level once (``GroupPins``).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

FINISHED_GROUPS = 65536  # pinned levels kept for rollouts that report after their group finished


@dataclass
class GroupTally:
    key: str  # the prompt's id (the curriculum's key)
    level: int  # pinned for every rollout of the group
    expected: int
    deadline: float  # time.monotonic()
    wins: int = 0
    reported: int = 0

    def pin(self) -> list:
        """What the WAL keeps of the group (log.py), the deadline as a Unix time: a restarted scheduler
        judges the group's rollouts at its level until then."""
        return [self.key, self.level, self.expected, time.time() + self.deadline - time.monotonic()]

    def add(self, wins: int, reports: int = 1) -> bool:
        """``reports`` rollouts' outcomes, ``wins`` of them won; True once every expected rollout has reported."""
        self.wins += int(wins)
        self.reported += reports
        return self.reported >= self.expected

    def qualifies(self, threshold: float) -> bool:
        """At least one win, and a win rate of at least ``threshold`` (Writing-RL: any win)."""
        return self.wins > 0 and self.wins / self.reported >= threshold


@dataclass
class OpenGroups:
    """The groups being judged (by uid, oldest first) and the levels of finished ones."""

    open: OrderedDict[str, GroupTally] = field(default_factory=OrderedDict)
    finished: OrderedDict[str, int] = field(default_factory=OrderedDict)
    advanced: OrderedDict[str, tuple[str, int]] = field(default_factory=OrderedDict)  # uid -> (key, level it set)
    dropped: int = 0  # groups that never completed
    withdrawn: int = 0  # groups verl dropped untrained (ReferenceScheduler.withdraw)
    on_close: Callable[[str], None] | None = None  # told of each group that leaves ``open``

    def restore(self, uid: str, pin: list) -> None:
        """An open group from before a restart (``GroupTally.pin``): open again until its deadline; its
        reports from before are gone, so it can move its level only if all of them come after."""
        key, level, expected, deadline = pin
        left = float(deadline) - time.time()
        if left > 0:
            self.open[uid] = GroupTally(str(key), int(level), int(expected), time.monotonic() + left)

    def get(self, uid: str) -> GroupTally | None:
        return self.open.get(uid)

    def start(self, uid: str, key: str, level: int, expected: int, timeout_s: float) -> GroupTally:
        self.expire()
        tally = self.open.get(uid)
        if tally is None:
            tally = self.open[uid] = GroupTally(key, level, max(1, expected), time.monotonic() + timeout_s)
        return tally

    def finish(self, uid: str) -> GroupTally:
        tally = self.open.pop(uid)
        self._closed(uid, tally.level)
        return tally

    def _closed(self, uid: str, level: int) -> None:
        self.finished[uid] = level  # -1: a report arriving now moves nothing, a rollout pins afresh
        while len(self.finished) > FINISHED_GROUPS:
            self.finished.popitem(last=False)
        if self.on_close is not None:
            self.on_close(uid)

    def moved(self, uid: str, key: str, level: int) -> None:
        """Group ``uid`` moved ``key`` up to ``level`` (taken back if verl drops the group untrained)."""
        self.advanced[uid] = (key, level)
        while len(self.advanced) > FINISHED_GROUPS:
            self.advanced.popitem(last=False)

    def withdraw(self, uid: str) -> tuple[str, int] | None:
        """Group ``uid`` will not be trained on: it can no longer move a level; returns the move it made."""
        if uid in self.open:
            del self.open[uid]
            self._closed(uid, -1)
        self.withdrawn += 1
        return self.advanced.pop(uid, None)

    def expire(self) -> None:
        now = time.monotonic()
        while self.open and next(iter(self.open.values())).deadline < now:
            uid, _ = self.open.popitem(last=False)
            self._closed(uid, -1)
            self.dropped += 1


class GroupPins:
    """The level each group was pinned at, as this worker learnt it: a group's level never changes while
    the group is open, so only its first rollout on this worker asks the scheduler; rollouts arriving
    while that question is out wait for its answer. An answer is reused until the group's ``timeout_s``
    has passed (the scheduler has dropped the group by then; then it is forgotten) and forgotten when the
    question failed. What is kept of an answer is the level alone: its finished task held far more."""

    def __init__(self, size: int = FINISHED_GROUPS):
        self.size = size
        # uid -> (the level, or the question still out for it; until when it holds), the oldest first
        self.pinned: OrderedDict[str, tuple[int | asyncio.Future, float]] = OrderedDict()

    async def level(self, uid: str, ask: Callable[[], Awaitable[int]], timeout_s: float) -> int:
        now = time.monotonic()
        while self.pinned and next(iter(self.pinned.values()))[1] < now:
            self.pinned.popitem(last=False)  # (one timeout for all: the oldest expires first)
        known = self.pinned.get(uid)
        if known is None or known[1] < now:
            known = self.pinned[uid] = (asyncio.ensure_future(ask()), now + timeout_s)
            self.pinned.move_to_end(uid)
            known[0].add_done_callback(lambda answer: self._settled(uid, answer))
            while len(self.pinned) > self.size:
                self.pinned.popitem(last=False)
        level = known[0]
        return await asyncio.shield(level) if isinstance(level, asyncio.Future) else level

    def _settled(self, uid: str, answer: asyncio.Future) -> None:
        known = self.pinned.get(uid)
        if known is None or known[0] is not answer:
            return
        if answer.cancelled() or answer.exception() is not None:
            del self.pinned[uid]
        else:
            self.pinned[uid] = (answer.result(), known[1])


def merge_reports(requests: list[tuple]) -> tuple[list[tuple], list[int]]:
    """One batch's requests with the reports of each group (uid, threshold) merged into one
    ``("report", uid, wins, threshold, reports)``; and for each request, the position of its answer."""
    merged: list[tuple] = []
    positions: list[int] = []
    reports: dict[tuple, int] = {}
    for request in requests:
        if request[0] != "report":
            positions.append(len(merged))
            merged.append(request)
            continue
        _, uid, won, threshold, *count = request
        at = reports.setdefault((uid, threshold), len(merged))
        if at == len(merged):
            merged.append(("report", uid, 0, threshold, 0))
        _, _, wins, _, reported = merged[at]
        merged[at] = ("report", uid, wins + int(won), threshold, reported + (count[0] if count else 1))
        positions.append(at)
    return merged, positions


class Batched:
    """Requests to one actor method, one call in flight: the requests that arrive while it is out go
    together in the next (after ``window_s`` more, when above 0).

    ``send(requests) -> answers`` makes the call (one answer per request, in order)."""

    def __init__(self, send: Callable[[list], Awaitable[list]], window_s: float):
        self.send = send
        self.window_s = window_s
        self.queue: list[tuple[Any, asyncio.Future]] = []
        self.busy = False  # a call in flight, or one due at the end of the window
        self._calls: set[asyncio.Task] = set()

    async def __call__(self, request: Any) -> Any:
        answer = asyncio.get_running_loop().create_future()
        self.queue.append((request, answer))
        self._flush()
        return await answer

    def _flush(self) -> None:
        if self.busy or not self.queue:
            return
        self.busy = True
        asyncio.get_running_loop().call_later(self.window_s, self._go)

    def _go(self) -> None:
        batch, self.queue = self.queue, []
        task = asyncio.ensure_future(self.send([request for request, _ in batch]))
        self._calls.add(task)
        task.add_done_callback(lambda done: self._answer(done, batch))

    def _answer(self, done: asyncio.Future, batch: list) -> None:
        self._calls.discard(done)
        self.busy = False
        error = asyncio.CancelledError() if done.cancelled() else done.exception()
        for position, (_, answer) in enumerate(batch):
            if answer.done():
                continue
            if error is not None:
                answer.set_exception(error)
            else:
                result = done.result()[position]
                if isinstance(result, BaseException):
                    answer.set_exception(result)
                else:
                    answer.set_result(result)
        self._flush()
