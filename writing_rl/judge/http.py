"""A pooled async client for any OpenAI-compatible chat-completions endpoint, or several of them: one
call's life, from its first request to the reply it returns or the error it raises.

One client per reward worker; what it talks over (its session per event loop, its endpoints, the request body):
``session.py``. How a call retries, fails over, backs off and waits out 429s: docs/judges/concurrency.md. The
rule under them: an outage of every endpoint costs the call backoff waits, not a burst of retries that ends it
at once; a sporadic failure is retried at once, since a training step waits for its slowest sample and a
backoff there is paid by the whole step. So a retry also goes before fresh requests (``limiter.Room``), and a
hedged request that fails while its copy is out is replaced at once (``hedge.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import aiohttp

from writing_rl.judge.base import JudgeReply, Messages
from writing_rl.judge.calls import Answer, Call, JudgeStats, RateLimited
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.endpoints import BUSY, FAILED, OK, Choice, Endpoint, reply_outcome
from writing_rl.judge.errors import (
    JudgeConnectionError,
    JudgeContextLengthError,
    JudgeError,
    JudgeRateLimited,
    JudgeResponseError,
    JudgeTimeout,
    JudgeUnavailable,
)
from writing_rl.judge.hedge import Hedger
from writing_rl.judge.limiter import Ticket
from writing_rl.judge.replies import http_error, message_content
from writing_rl.judge.retry import is_retryable_status, parse_retry_after, rate_limit_wait, retry_delay
from writing_rl.judge.session import JudgeSession
from writing_rl.judge.spend import Spend, sharing_clients
from writing_rl.judge.upstream import Upstream

__all__ = ["JudgeStats", "OpenAIJudge", "http_error", "message_content"]


class OpenAIJudge(JudgeSession):
    """``complete(messages) -> JudgeReply``; failures raise typed ``JudgeError``s after retries. ``workers``:
    the clients that split ``config.budget`` (default: ``spend.sharing_clients``)."""

    def __init__(
        self,
        config: JudgeConfig,
        concurrency: int | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,  # tests record the waits asked for
        workers: int | None = None,
        upstream_group: str = "",  # clients of different groups share no endpoint limit (upstream.py)
    ):
        super().__init__(config, concurrency, upstream_group)
        self._sleep = sleep
        self.stats = JudgeStats(concurrency_limit=self.concurrency)
        self.spend = Spend(config, self.stats, workers or sharing_clients(config, self.concurrency))
        self.hedger = Hedger(config.hedge_after)

    async def complete(self, messages: Messages) -> JudgeReply:
        held = self.spend.admit(self.endpoint, messages)  # raises JudgeBudgetExceeded
        try:
            reply = await self._complete(messages)
        except BaseException as err:
            self.spend.failed(getattr(err, "endpoint", self.endpoint), held)
            raise
        return self.spend.settle(reply, messages, held)

    async def _complete(self, messages: Messages) -> JudgeReply:
        session = self._ensure_session()
        body = self._request_body(messages)
        call = Call()
        while True:
            await self._gate.acquire(call.urgent)
            try:
                taken = await self._take_room(call)
                if isinstance(taken, Choice):
                    outcome = taken  # no endpoint takes requests now
                else:
                    upstream, ticket = taken
                    try:
                        outcome = await self._attempt(session, body, call, upstream, ticket)
                        if isinstance(outcome, RateLimited):
                            if self.pool.another_takes_requests(call.refused):
                                continue  # at once, to an endpoint that has not refused it
                            # Refused everywhere: waits in its place (a request taking the room just refused
                            # would be refused at once), then queues again.
                            await self._sleep(outcome.wait_s)
                            call.refused.clear()
                            continue
                    finally:
                        upstream.release()
            finally:
                self._gate.release()
            if isinstance(outcome, JudgeReply):
                return outcome
            if isinstance(outcome, Choice):
                await self._wait_for_endpoint(call, outcome)
            else:
                await self._sleep(outcome)

    async def _attempt(
        self, session: aiohttp.ClientSession, body: bytes, call: Call, upstream: Upstream, ticket: Ticket
    ) -> JudgeReply | float | RateLimited:
        """One request (hedged when slow) to ``upstream``, settled."""
        call.down_deadline = None  # an outage of every endpoint is over; a later one gets its own wait
        call.limit = self.concurrency_limit
        sent_to = upstream.endpoint
        endpoint, answer = await self.hedger.post(
            lambda e: self._post(session, e, body),
            sent_to,
            lambda: self._hedge_target(call, sent_to),
            self._dropped,
            call.limit,
            lambda e, a: self._replace(call, e, a),
            self._idle,
        )
        if answer.status == 200:
            self.hedger.observe(time.perf_counter() - answer.start)
        # (a hedge took no room: its reply says nothing of its endpoint's limit being full)
        outcome = self._settle(call, endpoint, answer, ticket if endpoint is sent_to else None)
        return RateLimited(outcome) if answer.status == 429 else outcome

    def _idle(self) -> bool:
        """No request waits for room, in this client's limit or its endpoints' (those a loop's clients share):
        a copy of a slow request takes room nobody else would."""
        rooms = (self._gate, *self.upstreams.values())
        return not any(room.waiters or room.urgent for room in rooms)

    def _post(self, session: aiohttp.ClientSession, endpoint: Endpoint, body: bytes) -> Awaitable[Answer]:
        """Counts the request against ``endpoint`` at once (so that the calls choosing next see it, before
        the exchange is scheduled) and returns the exchange."""
        answer = Answer(time.perf_counter(), sent_in=self.pool.started(endpoint))  # latency: on the wire
        self.stats.requests += 1
        return self._exchange(session, endpoint, body, answer)

    async def _exchange(
        self, session: aiohttp.ClientSession, endpoint: Endpoint, body: bytes, answer: Answer
    ) -> Answer:
        try:
            async with session.post(endpoint.url, data=body) as resp:
                answer.status, answer.raw = resp.status, await resp.read()
                answer.retry_after = resp.headers.get("Retry-After")
        except asyncio.TimeoutError:
            answer.error, answer.cause = JudgeTimeout, f"no reply within timeout_s={self.config.timeout_s}"
        except aiohttp.ClientError as exc:
            answer.error, answer.cause = JudgeConnectionError, f"{type(exc).__name__}: {exc}"
        except BaseException:  # cancelled: the endpoint's count goes down, its health is unknown
            self._finished(endpoint, answer, None)
            raise
        return answer.read()  # (here: a hedged call takes the first reply it can read)

    def _dropped(self, endpoint: Endpoint, answer: Answer) -> None:
        """A hedged request that ended but is not the call's answer: its endpoint still learns the outcome."""
        if answer.error is not None:
            self._finished(endpoint, answer, FAILED, answer.cause)
        else:
            outcome = reply_outcome(answer.status, answer.retry_after is not None)
            self._finished(endpoint, answer, outcome, f"HTTP {answer.status}")

    def _replace(self, call: Call, endpoint: Endpoint, answer: Answer) -> Endpoint | None:
        """A request that failed while another of the call's is in flight (hedge.py), told to its endpoint:
        where a request goes in its place at once (None: nowhere). A 429: to an endpoint that has not refused
        the call; another failure worth retrying: while the call has a retry left (it uses one)."""
        if answer.status == 429:
            rest_s = parse_retry_after(answer.retry_after, self.config.retry_after_max_s)
            self._finished(endpoint, answer, BUSY, "HTTP 429", rest_s)
            self.stats.rate_limited += 1
            call.refused_by(endpoint)
            elsewhere = self.pool.another_takes_requests(call.refused)
            return self.pool.choose(avoid=call.refused).endpoint if elsewhere else None
        self._dropped(endpoint, answer)
        retryable = answer.error is not None or answer.status == 200 or answer.status >= 500  # (200: unreadable)
        if not retryable or call.failures >= self.config.max_retries:
            return None
        call.failed(endpoint)
        self.stats.retries += 1
        return self.pool.choose(avoid=call.tried).endpoint

    def _settle(self, call: Call, endpoint: Endpoint, answer: Answer, ticket: Ticket | None) -> JudgeReply | float:
        """The reply, or the seconds to wait before the call's next request; raises the call's final error."""
        latency = time.perf_counter() - answer.start
        if answer.error is not None:
            self._finished(endpoint, answer, FAILED, answer.cause)
            if answer.error is JudgeTimeout:
                self._overloaded(ticket, endpoint)
            error = answer.error(endpoint.shown, answer.cause, call.attempt)
            return self._retry_or_raise(call, endpoint, error, None, replied=False)
        status, raw = answer.status, answer.raw
        if status == 200:
            self._finished(endpoint, answer, OK)
            upstream = self.upstreams[endpoint]
            upstream.limit.on_success(latency, ticket is not None and ticket.saturated, endpoint)
            upstream.wake()  # (the limit may have grown)
            self.stats.concurrency_limit = self.concurrency_limit
            if answer.unreadable is not None:
                error = JudgeResponseError(endpoint.shown, answer.unreadable, call.attempt)
                return self._retry_or_raise(call, endpoint, error, None)
            met = {**self._met(call), "endpoint": endpoint.shown}
            return JudgeReply(**answer.completion, latency_s=latency, attempts=call.attempt, **met)
        if status == 400 and b"content_filter" in raw:
            # The endpoint's filter refused the prompt (the responses in it): a refusal the reward
            # counts and pays as a loss, not a judge failure a response could stop training with.
            self._finished(endpoint, answer, OK)
            refusal = f"the judge's input filter refused the request: {raw[:200].decode(errors='replace')}"
            met = {**self._met(call), "endpoint": endpoint.shown}
            return JudgeReply("", "content_filter", latency, call.attempt, refusal=refusal, **met)
        text = raw.decode(errors="replace")
        retry_after = None
        if status in (429, 503):
            retry_after = parse_retry_after(answer.retry_after, self.config.retry_after_max_s)
            self._overloaded(ticket, endpoint)
        if status == 429:
            self._finished(endpoint, answer, BUSY, rest_s=retry_after)
            return self._rate_limited(call, endpoint, text, retry_after)
        outcome = reply_outcome(status, retry_after is not None)  # a 503 asking for a pause: busy, not dead
        self._finished(endpoint, answer, outcome, f"HTTP {status}", retry_after)
        error = http_error(endpoint.shown, status, text, call.attempt)
        if isinstance(error, JudgeContextLengthError) or not is_retryable_status(status):
            raise self._final(call, error)
        return self._retry_or_raise(call, endpoint, error, retry_after)

    def _overloaded(self, ticket: Ticket | None, endpoint: Endpoint) -> None:
        limit = self.upstreams[endpoint].limit
        if limit.on_overload(limit.epoch if ticket is None else ticket.epoch, time.monotonic(), endpoint):
            self.stats.limit_decreases += 1
        self.stats.concurrency_limit = self.concurrency_limit

    def _retry_or_raise(
        self, call: Call, endpoint: Endpoint, error: JudgeError, retry_after: float | None, replied: bool = True
    ) -> float:
        """The wait before the call's next attempt; raises once max_retries are spent. ``replied``: the
        failure was a reply (not a timeout or a dropped connection)."""
        call.failed(endpoint)
        if call.failures > self.config.max_retries:
            raise self._final(call, error)
        self.stats.retries += 1
        if self.pool.another_takes_requests(call.tried):
            return 0.0  # fail over at once to an endpoint this call has not tried since it backed off
        call.tried.clear()  # each endpoint that takes requests had its try: back off, then go round again
        # A sporadic failure (the endpoint's replies are mostly fine): again at once, within max_retries.
        if replied and retry_after is None and self.pool.mostly_answers(endpoint):
            return 0.0
        return retry_delay(call.failures - 1, retry_after, self.config.backoff_base_s, self.config.backoff_max_s)

    def _rate_limited(self, call: Call, endpoint: Endpoint, text: str, retry_after: float | None) -> float:
        """A 429: wait (Retry-After, else backoff) and queue again, until rate_limit_wait_s has passed."""
        self.stats.rate_limited += 1
        call.refused_by(endpoint)  # (a 429 uses no retry)
        now = time.monotonic()
        if call.rate_limit_deadline is None:
            call.rate_limit_deadline = now + self.config.rate_limit_wait_s
        left = call.rate_limit_deadline - now
        latency = self.upstreams[endpoint].limit.long_latency  # the endpoint's usual latency
        if left <= 0:
            cause = (
                f"HTTP 429 (rate limited) {call.rate_limited} time(s) over rate_limit_wait_s="
                f"{self.config.rate_limit_wait_s:g}: {text[:200]}"
            )
            raise self._final(call, JudgeRateLimited(endpoint.shown, cause, call.attempt))
        backoff = self.config.backoff_base_s, self.config.backoff_max_s
        return min(rate_limit_wait(call.rate_limited, retry_after, latency, *backoff), left)

    async def _wait_for_endpoint(self, call: Call, choice: Choice) -> None:
        """No endpoint takes requests now: wait until one may (or one's request ends), within the call's
        all_down_timeout_s (all failing) or rate_limit_wait_s (all resting after a Retry-After)."""
        now = time.monotonic()
        if choice.down:
            if call.down_deadline is None:
                call.down_deadline = now + self.config.all_down_timeout_s
            if now >= call.down_deadline:
                cause = (
                    f"every endpoint is failing; waited all_down_timeout_s={self.config.all_down_timeout_s:g} "
                    f"for one to come back: {self.pool.down_message()}"
                )
                raise self._final(call, JudgeUnavailable(self.endpoint, cause, call.attempt))
            deadline = call.down_deadline
        else:
            if call.rate_limit_deadline is None:
                call.rate_limit_deadline = now + self.config.rate_limit_wait_s
            if now >= call.rate_limit_deadline:
                cause = f"every endpoint asked to wait (Retry-After) past rate_limit_wait_s={self.config.rate_limit_wait_s:g}"
                raise self._final(call, JudgeRateLimited(self.endpoint, cause, call.attempt))
            deadline = call.rate_limit_deadline
        wait = deadline - now if choice.wait_s is None else min(choice.wait_s, deadline - now)
        await asyncio.wait([self._shared.next_change()], timeout=max(wait, 0.001))

    def _final(self, call: Call, error: JudgeError) -> JudgeError:
        """The error the call raises, with what it met on the way."""
        error.rate_limited, error.concurrency_limit, error.hedges = call.rate_limited, call.limit, call.hedges
        self.stats.failures[error.kind] += 1
        return error

    def _met(self, call: Call) -> dict:
        return {"rate_limited": call.rate_limited, "concurrency_limit": call.limit, "hedges": call.hedges}

    def _hedge_target(self, call: Call, sent_to: Endpoint) -> Endpoint | None:
        """Where a slow request's copy goes (counted on the call: a paid request)."""
        endpoint = self.pool.choose(avoid={sent_to}).endpoint
        call.hedges += endpoint is not None
        return endpoint
