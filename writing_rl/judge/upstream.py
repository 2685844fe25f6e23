"""What every judge client in one event loop shares about one judge endpoint: its breaker and in-flight count
(``endpoints.Endpoint``), its adaptive limit (``limiter.AimdLimit``) and its queue of requests waiting for room
(``limiter.Room``); who shares what, and how: docs/judges/concurrency.md ("One limit per endpoint, shared").

Why: two reward fns, two judges or a judge and its health checks pointing at one server from one reward worker
must not overrun it, nor learn twice that it is down. An endpoint is its URL with its API key, since a
provider's rate limit is per key. State lives as long as the loop: a new loop (each ``asyncio.run``) starts
fresh, so nothing learned about a server outlives the process that talked to it.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Iterable
from weakref import WeakKeyDictionary

from writing_rl.judge.endpoints import Endpoint
from writing_rl.judge.limiter import AimdLimit, Room


class Upstream(Room):
    """One endpoint's room (requests in flight there, or waiting after a 429 in their place) and breaker."""

    def __init__(self, endpoint: Endpoint, limit: AimdLimit):
        super().__init__(limit)
        self.endpoint = endpoint

    def turn_away(self) -> None:
        """The endpoint stopped taking requests (its breaker opened, it asked for a pause): those waiting
        for room here go and choose again."""
        for line in (self.urgent, self.waiters):
            for waiter in line:
                if not waiter.done():
                    waiter.set_result(None)
            line.clear()


async def wait_for_room(upstreams: Iterable[Upstream], urgent: bool = False) -> Upstream | None:
    """Queue behind the requests already waiting on each of ``upstreams`` (``urgent``: only behind the other
    urgent ones); the one whose room came first (room already taken for the caller), or None when one turned
    its queue away."""
    upstreams = list(upstreams)
    waiter = asyncio.get_running_loop().create_future()
    for upstream in upstreams:
        upstream.queue(urgent).append(waiter)
    try:
        return await waiter
    except asyncio.CancelledError:
        if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
            waiter.result().release()  # room handed over just as we were cancelled
        raise
    finally:
        for upstream in upstreams:
            upstream.forget(waiter)
            upstream.wake()  # room we might have been next for goes to the next in line


@dataclass
class LoopShared:
    """The upstreams of one event loop, and a future set whenever a request to any of them ends (a call
    waiting for an endpoint to come back wakes at it, whichever client's request it was)."""

    upstreams: dict = field(default_factory=dict)
    changed: asyncio.Future | None = None

    def notify(self) -> None:
        if self.changed is not None and not self.changed.done():
            self.changed.set_result(None)
        self.changed = None

    def next_change(self) -> asyncio.Future:
        if self.changed is None:
            self.changed = asyncio.get_running_loop().create_future()
        return self.changed


_BY_LOOP: WeakKeyDictionary = WeakKeyDictionary()


def loop_shared() -> LoopShared:
    """The shared state of the running loop."""
    loop = asyncio.get_running_loop()
    shared = _BY_LOOP.get(loop)
    if shared is None:
        shared = _BY_LOOP[loop] = LoopShared()
    return shared


def upstream_for(
    shared: LoopShared, url: str, shown: str, api_key: str | None, limit: AimdLimit, group: str = ""
) -> Upstream:
    """The loop's upstream for ``url`` reached with ``api_key``; ``limit``: the settings a new one starts
    with, and the concurrency this client asks for (the shared ceiling rises to the largest asked).
    ``group``: clients of another group never share one (a shadow judge on the training judge's URL must not
    take the training judge's room, nor shrink its limit with its own 429s or Retry-After pauses)."""
    key = (group, url, hashlib.sha256((api_key or "").encode()).hexdigest())
    upstream = shared.upstreams.get(key)
    if upstream is None:
        upstream = shared.upstreams[key] = Upstream(Endpoint(url, shown), limit)
    elif limit.max_limit > upstream.limit.max_limit:
        upstream.limit.raise_ceiling(limit.max_limit)
        upstream.wake()
    return upstream
