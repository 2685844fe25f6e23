"""Which judge endpoint gets the next request: the least loaded healthy one, behind a circuit breaker.

The breaker's states (closed, open, half-open), what opens and closes it, its probe (sent first) and the requests
sent before it opened (counted already): docs/judges/concurrency.md ("Several endpoints"). An endpoint that
asked for a pause (``Retry-After``) is left out until the pause ends while another can take the request. With a
single endpoint the breaker never opens (``max_failures`` None): a call fails after its own retries. Pure and
clock-injected: tests drive it with a fake clock.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Collection
from urllib.parse import urlsplit, urlunsplit

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"
# How a request to an endpoint ended: a reply; no reply (connection error, timeout); a 429 or a 503 asking
# for a pause; an error reply (5xx).
OK, FAILED, BUSY, ERROR = "ok", "failed", "busy", "error"
ERROR_WINDOW = 20  # replies over which the share of error replies is taken
ERROR_SHARE = 0.5  # the share of error replies among them that opens the breaker


def redact_url(url: str) -> str:
    """The URL without user:password and query string, safe to print."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def reply_outcome(status: int, pause_asked: bool) -> str:
    """How a reply with ``status`` ended for its endpoint: ``BUSY`` for a 429, or a 503 asking for a pause
    (``Retry-After``); ``ERROR`` for another 5xx; else ``OK``."""
    if status == 429 or (status == 503 and pause_asked):
        return BUSY
    return ERROR if status >= 500 else OK


@dataclass(eq=False)  # compared (and hashed) by identity: each is one live endpoint's state
class Endpoint:
    url: str  # the chat-completions URL requests go to
    shown: str  # the redacted base URL errors name
    index: int = 0
    state: str = CLOSED
    in_flight: int = 0
    failures: int = 0  # in a row
    opened_at: float = 0.0
    rest_until: float = 0.0  # Retry-After: no new requests before this time (while another can take them)
    sent: int = 0
    last_error: str | None = None
    trips: int = 0  # times the breaker opened; a request remembers the count it was sent under
    probing: bool = False  # the half-open probe is in flight
    replies: deque = field(default_factory=lambda: deque(maxlen=ERROR_WINDOW))  # True: an error reply


@dataclass(frozen=True)
class Choice:
    """``endpoint`` to send to; else None, and ``wait_s`` until one may be free (None: when a request ends).
    ``down``: every endpoint is left out as failing (not just resting after a Retry-After)."""

    endpoint: Endpoint | None
    wait_s: float | None = None
    down: bool = False
    full: tuple = ()  # endpoints that would take the request but have no room now: wait for room there


@dataclass
class EndpointPool:
    endpoints: list[Endpoint]
    max_failures: int | None = 3  # None: the breaker never opens
    cooldown_s: float = 10.0
    clock: Callable[[], float] = field(default=time.monotonic)

    def choose(self, avoid: Collection[Endpoint] = (), room: Callable[[Endpoint], bool] | None = None) -> Choice:
        """The endpoint for the next request: a half-open one's probe first, else the fewest in flight
        among those taking requests, those in ``avoid`` (the ones this call just failed on) only when no
        other can; ties go to the one sent fewest requests. ``room(endpoint)``: whether its concurrency
        limit lets one more request in (a probe always goes)."""
        now = self.clock()
        for endpoint in self.endpoints:
            if endpoint.state == OPEN and now - endpoint.opened_at >= self.cooldown_s:
                endpoint.state = HALF_OPEN
        healthy = [e for e in self.endpoints if self._takes_requests(e)]
        if not healthy:
            return Choice(None, self._until_half_open(now), down=True)
        awake = [e for e in healthy if e.rest_until <= now]
        if not awake:
            return Choice(None, min(e.rest_until for e in healthy) - now)
        preferred = [e for e in awake if e not in avoid] or awake
        open_now = [e for e in preferred if room is None or e.state == HALF_OPEN or room(e)]
        if not open_now:
            return Choice(None, full=tuple(preferred))
        # A due probe goes first: its endpoint's in-flight count is requests left from before it opened.
        return Choice(min(open_now, key=lambda e: (e.state != HALF_OPEN, e.in_flight, e.sent, e.index)))

    def another_takes_requests(self, tried: Collection[Endpoint]) -> bool:
        """Whether an endpoint not in ``tried`` would take a request now (a retry can go there at once)."""
        now = self.clock()
        return any(e not in tried and self._closed(e) and e.rest_until <= now for e in self.endpoints)

    def takes_now(self, endpoint: Endpoint) -> bool:
        """Whether ``endpoint`` would take a request now (its breaker lets one through, no pause asked)."""
        return self._takes_requests(endpoint) and endpoint.rest_until <= self.clock()

    def mostly_answers(self, endpoint: Endpoint) -> bool:
        """Whether ``endpoint`` is closed and its error replies are under the share that opens the breaker."""
        return self._closed(endpoint) and sum(endpoint.replies) < ERROR_SHARE * max(1, len(endpoint.replies))

    def _closed(self, endpoint: Endpoint) -> bool:
        """Its breaker is closed, or this pool has none (one endpoint: another client's pool may share it
        and open it; this one still sends there)."""
        return endpoint.state == CLOSED or self.max_failures is None

    def _takes_requests(self, endpoint: Endpoint) -> bool:
        if self._closed(endpoint):
            return True
        return endpoint.state == HALF_OPEN and not endpoint.probing  # one probe at a time

    def _until_half_open(self, now: float) -> float | None:
        opened = [e.opened_at + self.cooldown_s - now for e in self.endpoints if e.state == OPEN]
        return max(0.0, min(opened)) if opened else None  # None: a probe is in flight

    def started(self, endpoint: Endpoint) -> int:
        """A request goes to ``endpoint``; returns the trip count to give back to ``finished``."""
        endpoint.in_flight += 1
        endpoint.sent += 1
        if endpoint.state == HALF_OPEN:
            endpoint.probing = True
        return endpoint.trips

    def finished(
        self,
        endpoint: Endpoint,
        outcome: str | None,
        error: str | None = None,
        rest_s: float | None = None,
        sent_in: int | None = None,
    ) -> None:
        """A request to ``endpoint`` ended: ``OK`` (any other reply from a live server), ``BUSY`` (429, or a
        503 asking for a pause), ``ERROR`` (a 5xx reply), ``FAILED`` (no reply: a connection error, a timeout)
        or None (cancelled: says nothing).
        ``sent_in``: what ``started`` returned (None: sent under the current trip)."""
        endpoint.in_flight -= 1
        stale = sent_in is not None and sent_in < endpoint.trips  # sent before the breaker last opened
        if not stale:
            endpoint.probing = False  # in half-open, the only request sent under this trip is the probe
        if outcome is None:
            return
        now = self.clock()
        if rest_s:
            endpoint.rest_until = max(endpoint.rest_until, now + rest_s)
        if outcome == ERROR:
            endpoint.replies.append(True)
            endpoint.last_error = error
            errors = sum(endpoint.replies)
            mostly = errors >= ERROR_SHARE * len(endpoint.replies) and errors >= (self.max_failures or 0)
            if stale or not (mostly or endpoint.state == HALF_OPEN):  # (a probe's error reply opens it again)
                return
        elif outcome != FAILED:  # a reply, even to an old request: the server is alive
            endpoint.replies.append(False)
            endpoint.failures = 0
            endpoint.state = CLOSED
            endpoint.probing = False
            return
        elif stale:
            return  # counted before the breaker opened; must not restart the cool-down
        else:
            endpoint.failures += 1
            endpoint.last_error = error
        tripped = self.max_failures is not None and (outcome == ERROR or endpoint.failures >= self.max_failures)
        if endpoint.state == HALF_OPEN or (endpoint.state == CLOSED and tripped):
            endpoint.state = OPEN
            endpoint.opened_at = now
            endpoint.trips += 1
            endpoint.replies.clear()

    def down_message(self) -> str:
        """Each endpoint, its state and last error, for the error of a call that found none up."""
        return "; ".join(
            f"{e.shown} {e.state} after {e.failures} failure(s) in a row ({e.last_error or 'no error recorded'})"
            for e in self.endpoints
        )
