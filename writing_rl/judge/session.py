"""What a judge client talks over: one aiohttp session (connection pool) per event loop, the endpoints its
requests go to (``endpoints.py``, each with an adaptive limit, ``limiter.py``, shared by the loop's clients:
``upstream.py``), its own concurrency (its ``Gate``) and the request body. What one call does with them: ``http.py``.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp

from writing_rl.judge.base import Messages
from writing_rl.judge.calls import Answer, Call
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.endpoints import OPEN, Choice, Endpoint, EndpointPool, redact_url
from writing_rl.judge.limiter import AimdLimit, Gate, Ticket
from writing_rl.judge.upstream import LoopShared, Upstream, loop_shared, upstream_for, wait_for_room


class JudgeSession:
    """A client's session and endpoints. ``upstream_group``: clients of different groups share no endpoint
    limit (upstream.py)."""

    def __init__(self, config: JudgeConfig, concurrency: int | None = None, upstream_group: str = ""):
        self.config = config.validate()
        self._upstream_group = upstream_group
        self.concurrency = concurrency or config.max_concurrency
        urls = config.endpoints
        self.endpoint = ", ".join(map(redact_url, urls))
        self.url = urls[0].rstrip("/") + "/chat/completions"
        self._targets = [(u.rstrip("/") + "/chat/completions", redact_url(u)) for u in urls]
        # One endpoint: nowhere else to go, so no breaker (a call fails after its retries as always).
        self._max_failures = config.endpoint_max_failures if len(urls) > 1 else None
        # Replaced by the endpoints every client of the running loop shares, once a loop runs (_ensure_session).
        endpoints = [Endpoint(url, shown, i) for i, (url, shown) in enumerate(self._targets)]
        self.pool = EndpointPool(endpoints, self._max_failures, config.endpoint_cooldown_s)
        self.upstreams: dict[Endpoint, Upstream] = {}
        self._headers = {"Content-Type": "application/json"}
        self._api_key = config.api_key()
        if self._api_key:
            self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._sampling = {"temperature": config.temperature, "top_p": config.top_p}
        if config.max_tokens is not None:
            self._sampling["max_tokens"] = config.max_tokens
        self._session: aiohttp.ClientSession | None = None
        self._gate: Gate | None = None  # this client's own concurrency
        self._shared: LoopShared | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def concurrency_limit(self) -> int:
        """Requests this client may have in flight now: its own concurrency, or less where the endpoints'
        adaptive limits together allow less."""
        if not self.upstreams:
            return self.concurrency
        return min(self.concurrency, sum(u.limit.slots for u in self.upstreams.values()))

    def _new_limit(self) -> AimdLimit:
        config = self.config
        return AimdLimit(
            self.concurrency,
            config.min_concurrency,
            config.concurrency_decrease,
            config.latency_tolerance,
            adaptive=config.adaptive_concurrency,
        )

    def _request_body(self, messages: Messages) -> bytes:
        payload = {"model": self.config.model, "messages": messages, **self._sampling, **self.config.extra_body}
        return json.dumps(payload, ensure_ascii=False).encode()

    def _ensure_session(self) -> aiohttp.ClientSession:
        # aiohttp sessions and asyncio futures belong to one event loop: make them in the running one.
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            # (room for the hedges beyond the limit's slots: a copy must not queue for a connection)
            connector = aiohttp.TCPConnector(limit=self.concurrency + max(1, self.concurrency // 10), ttl_dns_cache=300)
            timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
            self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, headers=self._headers)
            self._gate = Gate(AimdLimit(self.concurrency, adaptive=False))
            self._shared = loop_shared()
            upstreams = [
                upstream_for(self._shared, *target, self._api_key, self._new_limit(), self._upstream_group)
                for target in self._targets
            ]
            self.upstreams = {u.endpoint: u for u in upstreams}
            self.pool = EndpointPool(list(self.upstreams), self._max_failures, self.config.endpoint_cooldown_s)
            self._loop = loop
        return self._session

    async def _take_room(self, call: Call) -> tuple[Upstream, Ticket] | Choice:
        """Room on the endpoint for the call's next request; the pool's choice when no endpoint takes one."""
        while True:
            choice = self.pool.choose(avoid=call.avoid, room=lambda e: self.upstreams[e].has_room())
            if choice.endpoint is not None:
                upstream = self.upstreams[choice.endpoint]
                return upstream, upstream.take()
            if not choice.full:
                return choice
            upstream = await wait_for_room((self.upstreams[e] for e in choice.full), call.urgent)
            if upstream is not None and self.pool.takes_now(upstream.endpoint):
                return upstream, upstream.ticket()
            if upstream is not None:
                upstream.release()  # it stopped taking requests while we waited: choose again

    def _finished(
        self, endpoint: Endpoint, answer: Answer, outcome: str | None, error: str | None = None, rest_s=None
    ) -> None:
        """Tell the pool how ``answer``'s request ended, and wake the calls waiting for an endpoint."""
        was_open, rest_until = endpoint.state == OPEN, endpoint.rest_until
        self.pool.finished(endpoint, outcome, error, rest_s, answer.sent_in)
        if (endpoint.state == OPEN and not was_open) or endpoint.rest_until > rest_until:
            self.upstreams[endpoint].turn_away()  # those waiting for room there choose again
        self._shared.notify()

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
