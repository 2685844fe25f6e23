"""Hedged requests: a request that takes much longer than the judge usually does gets a second copy.

A training step waits for its slowest reward, so one stuck request (a replica that stalls, a GC pause, a
connection that silently died) costs the whole step its latency. When a request has been in flight
``hedge_after`` times the judge's 95th-percentile latency (over its last ``LATENCY_WINDOW`` replies; at
least ``MIN_DELAY_S``), a copy goes to another endpoint (the same one when there is only one); the first
reply wins and the other request is cancelled. Waiting for the 95th percentile keeps the copies to a few percent of requests
however the judge's latency is spread (as "The Tail at Scale" recommends); and at most a tenth of the
client's concurrency limit (at least one) are copies at a time, so a judge that slows down as a whole is
not sent twice the load.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Awaitable, Callable, TypeVar

E = TypeVar("E")  # an endpoint
A = TypeVar("A")  # what one request got (http._Answer: its ``status``)

HEDGE_SHARE = 0.1  # of the concurrency limit: hedges in flight at most
LATENCY_WINDOW = 200  # replies the percentile is taken over
REFRESH_EVERY = 20  # replies between two computations of the percentile
MIN_REPLIES = 100  # no hedging before: a percentile of fewer replies says little
PERCENTILE = 0.95
# Never sooner: a judge that answers in milliseconds (a local test server) is not hedged for a scheduling
# hiccup; an LLM judge's tail is far above it.
MIN_DELAY_S = 0.2


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

    def delay_s(self) -> float | None:
        """How long a request waits before its copy goes; None: no hedging (off, or too few replies yet)."""
        if not self.hedge_after or self.latency is None:
            return None
        return max(self.hedge_after * self.latency, MIN_DELAY_S)

    async def post(
        self,
        send: Callable[[E], Awaitable[A]],  # counts the request against the endpoint when called
        first: E,
        other: Callable[[], E | None],
        drop: Callable[[E, A], None],
        slots: int,
    ) -> tuple[E, A]:
        """``send(first)``, hedged: (the endpoint that answered first, its answer). ``other()``: where a hedge
        goes (None: nowhere); ``drop(endpoint, answer)``: a request that ended but is not the answer (its
        endpoint learns how it ended)."""
        request = send(first)  # (counted against ``first`` now, whichever way it is awaited)
        delay = self.delay_s()
        if delay is None:
            return first, await request
        primary = asyncio.ensure_future(request)
        owners = {primary: first}
        try:
            while not (await asyncio.wait({primary}, timeout=delay))[0]:
                if self.in_flight < max(1, int(slots * HEDGE_SHARE)):  # else every copy allowed is out: later
                    break
            second_endpoint = None if primary.done() else other()
            if second_endpoint is None:
                return first, await primary
            self.sent += 1
            self.in_flight += 1
            hedge = asyncio.ensure_future(send(second_endpoint))
            owners[hedge] = second_endpoint
            try:
                return await self._first_reply(owners, drop)
            finally:
                self.in_flight -= 1
        except BaseException:  # cancelled (or worse): no request may leave its endpoint's count behind
            for task, endpoint in owners.items():
                if not task.done():
                    task.cancel()  # (a cancelled request tells its endpoint itself)
                elif not task.cancelled() and task.exception() is None:
                    drop(endpoint, task.result())  # it ended just as we were cancelled
            raise

    @staticmethod
    async def _first_reply(owners: dict, drop: Callable) -> tuple:
        """The first 200 among the requests in ``owners`` (task -> endpoint), else the last failure; the
        others are cancelled, or dropped when they already ended."""
        pending = set(owners)
        while True:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            answered = next((t for t in done if t.result().status == 200), None)
            if answered is not None or not pending:
                winner = answered or done.pop()
                for task in done - {winner}:
                    drop(owners[task], task.result())
                for task in pending:
                    task.cancel()
                return owners[winner], winner.result()
            for task in done:  # a failure while the other may still answer
                drop(owners[task], task.result())
