"""Hedged requests: a request that takes much longer than the judge usually does gets a second copy.

A training step waits for its slowest reward, so one stuck request (a replica that stalls, a GC pause, a
connection that silently died) costs the whole step its latency. When a request has been in flight
``hedge_after`` times the judge's average latency, a copy goes to another endpoint (the same one when
there is only one); the first reply wins and the other request is cancelled. At most a tenth of the
client's concurrency limit (at least one) are hedges at a time, so a judge that slows down as a whole
is not sent twice the load.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

E = TypeVar("E")  # an endpoint
A = TypeVar("A")  # what one request got (http._Answer: its ``status``)

HEDGE_SHARE = 0.1  # of the concurrency limit: hedges in flight at most
LATENCY_ALPHA = 0.02  # the average latency follows about the last 100 replies


class Hedger:
    def __init__(self, hedge_after: float):
        self.hedge_after = hedge_after  # 0: never hedge
        self.latency: float | None = None
        self.in_flight = 0
        self.sent = 0  # hedges sent so far

    def observe(self, latency_s: float) -> None:
        """A reply came back after ``latency_s``."""
        self.latency = latency_s if self.latency is None else self.latency + LATENCY_ALPHA * (latency_s - self.latency)

    async def post(
        self,
        send: Callable[[E], Awaitable[A]],  # counts the request against the endpoint when called
        first: E,
        other: Callable[[], E | None],
        drop: Callable[[E, A], None],
        slots: int,
    ) -> tuple[E, A]:
        """``send(first)``, hedged: (the endpoint that answered first, its answer). ``other()``: where a hedge
        goes (None: nowhere); ``drop(endpoint, answer)``: a losing request that did end (its endpoint's
        count goes down)."""
        request = send(first)  # (counted against ``first`` now, whichever way it is awaited)
        budget = max(1, int(slots * HEDGE_SHARE))
        if not self.hedge_after or self.latency is None or self.in_flight >= budget:
            return first, await request
        primary = asyncio.ensure_future(request)
        done, _ = await asyncio.wait({primary}, timeout=self.hedge_after * self.latency)
        second_endpoint = None if done or self.in_flight >= budget else other()
        if second_endpoint is None:
            return first, await primary
        self.sent += 1
        self.in_flight += 1
        try:
            owners = {primary: first, asyncio.ensure_future(send(second_endpoint)): second_endpoint}
            pending = set(owners)
            while True:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                answered = next((t for t in done if t.result().status == 200), None)
                if answered is not None or not pending:
                    winner = answered or done.pop()
                    for task in done - {winner}:
                        drop(owners[task], task.result())
                    for task in pending:
                        task.cancel()  # (a cancelled request tells its endpoint itself)
                    return owners[winner], winner.result()
                for task in done:  # a failure while the other may still answer
                    drop(owners[task], task.result())
        except BaseException:
            for task in owners:
                task.cancel()
            raise
        finally:
            self.in_flight -= 1
