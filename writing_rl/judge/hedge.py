"""Hedged requests: a request that takes much longer than the judge usually does gets a second copy.

A training step waits for its slowest reward, so one stuck request (a replica that stalls, a GC pause, a
connection that silently died) costs the whole step its latency. When copies go, how many and where, and what
replaces a failed one: docs/judges/concurrency.md ("Hedged requests"). Waiting for the 95th percentile follows
"The Tail at Scale". A second copy goes because a copy can be slow, or refused where it went: a slow request
whose copy failed would otherwise set the pace of the step again.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Awaitable, Callable, TypeVar

E = TypeVar("E")  # an endpoint
A = TypeVar("A")  # what one request got (calls.Answer: ``ok`` when it is the call's answer)

HEDGE_SHARE = 0.1  # of the concurrency limit: hedges in flight at most
MAX_COPIES = 2  # per request: a second copy goes when the first has not answered after another delay
LATENCY_WINDOW = 200  # replies the percentile is taken over
REFRESH_EVERY = 20  # replies between two computations of the percentile
MIN_REPLIES = 100  # no hedging before: a percentile of fewer replies says little
PERCENTILE = 0.95
# Never sooner: a judge that answers in a millisecond (a local test server) is not hedged for a scheduling
# hiccup; an LLM judge's tail is far above it. (At 0.2 s a 50 ms judge's 1.5 s spike cost a step 0.25 s.)
MIN_DELAY_S = 0.05


class Hedger:
    def __init__(self, hedge_after: float):
        self.hedge_after = hedge_after  # 0: never hedge
        self.latency: float | None = None  # the 95th-percentile latency; None before MIN_REPLIES replies
        self.in_flight = 0
        self.sent = 0  # hedges sent so far
        self._recent: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._since_refresh = 0

    def observe(self, latency_s: float) -> None:
        """A reply came back after ``latency_s``."""
        self._recent.append(latency_s)
        self._since_refresh += 1
        if len(self._recent) >= MIN_REPLIES and (self._since_refresh >= REFRESH_EVERY or self.latency is None):
            self._since_refresh = 0
            ordered = sorted(self._recent)
            self.latency = ordered[int(PERCENTILE * (len(ordered) - 1))]

    def delay_s(self, idle: bool = False) -> float | None:
        """How long a request waits before its copy goes; None: no hedging (off, or too few replies yet).
        ``idle``: no request of the client waits for room, so a copy takes room nobody else would: it goes
        as soon as the request is slower than the 95th percentile, not ``hedge_after`` times it."""
        if not self.hedge_after or self.latency is None:
            return None
        return max((1.0 if idle else self.hedge_after) * self.latency, MIN_DELAY_S)

    async def post(
        self,
        send: Callable[[E], Awaitable[A]],  # counts the request against the endpoint when called
        first: E,
        other: Callable[[], E | None],
        drop: Callable[[E, A], None],
        slots: int,
        replace: Callable[[E, A], E | None] | None = None,
        idle: Callable[[], bool] = lambda: False,
    ) -> tuple[E, A]:
        """``send(first)``, hedged: (the endpoint that answered first, its answer). ``other()``: where a hedge
        goes (None: nowhere); ``drop(endpoint, answer)``: a request that ended but is not the answer (its
        endpoint learns how it ended); ``replace(endpoint, answer)``: one that failed while another is in
        flight, settled there: where a request goes in its place (None: none; default: ``drop`` it);
        ``idle()``: whether no request of the client waits for room now (``delay_s``)."""
        request = send(first)  # (counted against ``first`` now, whichever way it is awaited)
        if self.delay_s() is None:
            return first, await request
        loop = asyncio.get_running_loop()
        primary = asyncio.ensure_future(request)
        owners = {primary: first}  # the requests still to settle
        copies, last_sent = 0, loop.time()
        try:
            while True:
                # Between the idle delay and the busy one, looked at every idle delay: a step's last requests
                # find the client idle once the requests behind them have gone. (Past both: no copy may go
                # now; looked at again a busy delay later.)
                waited = loop.time() - last_sent
                short, long = self.delay_s(idle=True), self.delay_s()
                timeout = min(short, long - waited) if waited < long else long
                done, _ = await asyncio.wait(owners, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if done and not copies:
                    return first, primary.result()  # never hedged: the caller settles it
                if done:
                    answer = self._settle(done, owners, send, drop, replace)
                    if answer is not None:
                        return answer
                    last_sent = loop.time()  # (a failure settled, perhaps replaced: a whole delay again)
                elif loop.time() - last_sent < long and not idle():
                    continue  # the idle delay is up, but requests wait for room: the busy one
                elif copies < MAX_COPIES and self.in_flight < max(1, int(slots * HEDGE_SHARE)):
                    endpoint = other()  # (else every copy allowed is out: later)
                    if endpoint is not None:
                        copies += 1
                        self.sent += 1
                        self.in_flight += 1
                        last_sent = loop.time()
                        owners[asyncio.ensure_future(send(endpoint))] = endpoint
        except BaseException:  # cancelled (or worse): no request may leave its endpoint's count behind
            for task, endpoint in owners.items():
                if not task.done():
                    task.cancel()  # (a cancelled request tells its endpoint itself)
                elif not task.cancelled() and task.exception() is None:
                    drop(endpoint, task.result())  # it ended just as we were cancelled
            raise
        finally:
            self.in_flight -= copies

    @staticmethod
    def _settle(done: set, owners: dict, send: Callable, drop: Callable, replace: Callable | None) -> tuple | None:
        """Requests of ``owners`` (task -> endpoint) that ended: the first answer, else the last failure once
        none is left in flight (the others cancelled, or dropped when they already ended); None while one is,
        the failures settled (dropped, or replaced by a new request added to ``owners``)."""
        answered = next((t for t in done if t.result().ok), None)
        if answered is not None or len(done) == len(owners):
            winner = answered or done.pop()
            for task in done - {winner}:
                drop(owners[task], task.result())
            for task in owners.keys() - done:
                task.cancel()
            return owners[winner], winner.result()
        for task in done:  # a failure while another may still answer
            endpoint = owners.pop(task)
            if replace is None:
                drop(endpoint, task.result())
            elif (new := replace(endpoint, task.result())) is not None:
                owners[asyncio.ensure_future(send(new))] = new
        return None
