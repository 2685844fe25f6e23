"""How many judge requests go to one endpoint at once: an AIMD limit (one per endpoint, shared by the
clients of an event loop: ``upstream.py``), and the asyncio gate that holds a client to its own share.

The rules (start, bounds, clean rounds, decrease, the climb back to ``peak``) and why the reward workers need no
shared counter: docs/judges/concurrency.md ("Adaptive concurrency"). The whys it leaves out:

- a decrease takes at least one slot away: else a small limit (3 x 0.9 = 2.7) would keep its slots, and the
  request over capacity would be refused again at once;
- a signal from a request sent before the last decrease is ignored: its round was already paid for;
- the climb back takes at most a quarter of the limit at a time, so a limit far below its peak after a long
  overload does not leap back into it;
- a refused request keeps its slot while it waits to be sent again (``http.py``): otherwise the next queued
  request would take the place just refused and be refused at once, a storm of 429s.

``AimdLimit`` is pure and clock-free; ``Gate`` is its asyncio side, first come first served, retries first.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class AimdLimit:
    """The limit itself: ``slots`` requests may be in flight. ``adaptive=False``: always ``max_limit``."""

    max_limit: int
    min_limit: int = 1
    decrease: float = 0.9
    latency_tolerance: float = 2.0
    adaptive: bool = True
    short_alpha: float = 0.2  # recent latency: about the last 10 replies
    long_alpha: float = 0.02  # long-run latency: about the last 100 replies
    limit: float = field(init=False)
    # Bumped at each decrease; a request remembers the epoch it was sent in.
    epoch: int = field(default=0, init=False)
    decreases: int = field(default=0, init=False)
    clean: int = field(default=0, init=False)  # replies since the last change or rate-limit signal
    peak: float = field(init=False)  # the limit to climb back to fast after a decrease
    decreased_at: float | None = field(default=None, init=False)
    grown: bool = field(default=False, init=False)  # the limit grew since the last decrease
    refusing: set = field(default_factory=set, init=False)  # sources that refused since they last answered
    short_latency: float | None = field(default=None, init=False)
    long_latency: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.max_limit = max(1, self.max_limit)
        self.min_limit = max(1, min(self.min_limit, self.max_limit))
        self.limit = self.peak = float(self.max_limit)

    @property
    def slots(self) -> int:
        return max(self.min_limit, min(self.max_limit, math.floor(self.limit)))

    def raise_ceiling(self, max_limit: int) -> None:
        """A client asking for more concurrency shares this limit: it may grow up to ``max_limit`` (at once
        if it was never lowered)."""
        self.max_limit = max(self.max_limit, max_limit)
        if not self.decreases:
            self.limit = self.peak = float(self.max_limit)

    def latency_holds(self) -> bool:
        if self.short_latency is None or self.long_latency is None:
            return True
        return self.short_latency <= self.latency_tolerance * self.long_latency

    def on_success(self, latency_s: float, saturated: bool = True, source: object = None) -> None:
        """A reply came back (any answer that is not a rate-limit signal) from ``source`` (the endpoint);
        ``saturated``: its request was sent with every slot taken."""
        if not self.adaptive:
            return
        self.refusing.discard(source)
        self.short_latency = _ewma(self.short_latency, latency_s, self.short_alpha)
        self.long_latency = _ewma(self.long_latency, latency_s, self.long_alpha)
        if not (saturated and self.latency_holds()):
            return
        self.clean += 1
        if self.clean >= self.slots:
            step = max(1.0, min((self.peak - self.limit) / 2, self.limit / 4))  # (a quarter at most: no overshoot)
            self.limit = min(float(self.max_limit), self.limit + step)
            self.clean = 0
            self.grown = True

    def on_overload(self, sent_epoch: int, now: float | None = None, source: object = None) -> bool:
        """A rate-limit signal from ``source`` (None: unnamed) for a request sent in ``sent_epoch``, arriving
        at ``now`` (seconds, any monotonic clock; None: no time rule); True when the limit went down."""
        self.clean = 0  # any signal, even one from an earlier round: no growth this round
        if not self.adaptive or sent_epoch < self.epoch:
            return False
        if source is not None:
            if source in self.refusing:
                return False
            self.refusing.add(source)
        if now is not None and self.decreased_at is not None and self.long_latency is not None:
            if now - self.decreased_at < self.long_latency:
                return False
        if self.limit >= self.peak:
            self.peak = self.limit
        elif self.grown:  # refused again on the way back up: the capacity lies below the peak
            self.peak = (self.peak + self.limit) / 2
        self.grown = False
        self.limit = max(float(self.min_limit), min(self.limit * self.decrease, self.slots - 1.0))
        self.decreased_at = now
        self.epoch += 1
        self.decreases += 1
        return True


def _ewma(average: float | None, value: float, alpha: float) -> float:
    return value if average is None else average + alpha * (value - average)


@dataclass(frozen=True)
class Ticket:
    """A slot held: the epoch and limit at the time it was granted, and whether that took the last slot
    (or others were still waiting)."""

    epoch: int
    limit: int
    saturated: bool


class Room:
    """At most ``limit.slots`` holders at once; requests waiting for room (futures) are let in first come,
    first served, the ``urgent`` ones (retries) before the others. Belongs to one event loop."""

    def __init__(self, limit: AimdLimit):
        self.limit = limit
        self.occupied = 0
        self.waiters: deque[asyncio.Future] = deque()
        self.urgent: deque[asyncio.Future] = deque()

    def queue(self, urgent: bool) -> deque[asyncio.Future]:
        return self.urgent if urgent else self.waiters

    def forget(self, waiter: asyncio.Future) -> None:
        """``waiter`` leaves the line it was in, if still there."""
        for line in (self.urgent, self.waiters):
            if waiter in line:
                line.remove(waiter)

    def has_room(self) -> bool:
        return self.occupied < self.limit.slots and not self.waiters and not self.urgent

    def take(self) -> Ticket:
        self.occupied += 1
        return self.ticket()

    def ticket(self) -> Ticket:
        """For room already taken (``take``, or let in by ``wake``): whether it took the last room (or others
        were waiting), so that its reply tests the limit."""
        slots = self.limit.slots
        return Ticket(self.limit.epoch, slots, self.occupied >= slots or bool(self.waiters or self.urgent))

    def release(self) -> None:
        self.occupied -= 1
        self.wake()

    def wake(self) -> None:
        """Let waiting requests into the room now free (after a release, or once the limit grew); a waiter's
        result is the room that let it in."""
        while (self.urgent or self.waiters) and self.occupied < self.limit.slots:
            waiter = (self.urgent or self.waiters).popleft()
            if not waiter.done():
                self.occupied += 1
                waiter.set_result(self)


class Gate(Room):
    """A room a request awaits: one client's own concurrency."""

    async def acquire(self, urgent: bool = False) -> Ticket:
        if self.has_room():
            return self.take()
        waiter = asyncio.get_running_loop().create_future()
        self.queue(urgent).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # let in just as we were cancelled
                self.release()
            else:
                # Never let in, so it holds no room. wake() may have dropped it from the queue already (a
                # release ran between the cancel and this task resuming).
                self.forget(waiter)
                self.wake()  # room it might have been next for goes to the next waiter (as Semaphore)
            raise
        return self.ticket()

    def on_success(self, ticket: Ticket, latency_s: float, source: object = None) -> None:
        self.limit.on_success(latency_s, ticket.saturated, source)
        self.wake()

    def on_overload(self, ticket: Ticket, source: object = None) -> bool:
        return self.limit.on_overload(ticket.epoch, time.monotonic(), source)
