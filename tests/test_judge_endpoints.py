"""Several judge endpoints (writing_rl/judge/endpoints.py): least-loaded choice and the circuit breaker on a
fake clock, then the client against two scripted judges, one of which is killed mid-run."""

import asyncio
import socket

import pytest

from writing_rl.judge import JudgeConnectionError, JudgeHTTPError, JudgeUnavailable, OpenAIJudge, SampleJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.endpoints import BUSY, CLOSED, ERROR, FAILED, HALF_OPEN, OK, OPEN, Endpoint, EndpointPool

from judge_server import Reply
from waiting import until

MESSAGES = [{"role": "user", "content": "Compare. [[A]] or [[B]]?"}]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_pool(n=2, max_failures=3, cooldown_s=10.0):
    clock = Clock()
    endpoints = [Endpoint(f"http://e{i}/v1/chat/completions", f"http://e{i}/v1", i) for i in range(n)]
    return EndpointPool(endpoints, max_failures, cooldown_s, clock), clock


def send(pool, outcome=OK, avoid=(), **kwargs):
    endpoint = pool.choose(avoid).endpoint
    pool.started(endpoint)
    pool.finished(endpoint, outcome, **kwargs)
    return endpoint.index


def test_least_loaded_endpoint_first_ties_by_requests_sent():
    pool, _ = make_pool(3)
    a = pool.choose().endpoint
    pool.started(a)  # e0 busy
    b = pool.choose().endpoint
    pool.started(b)  # e1 busy
    c = pool.choose().endpoint
    assert (a.index, b.index, c.index) == (0, 1, 2)
    pool.started(c)
    pool.finished(b, OK)
    assert pool.choose().endpoint is b  # the only one with nothing in flight
    pool.finished(a, OK)
    pool.finished(c, OK)
    assert [send(pool) for _ in range(6)] == [0, 1, 2, 0, 1, 2]  # idle: round robin by requests sent


def test_the_endpoint_a_call_just_failed_on_is_avoided_while_another_takes_requests():
    pool, clock = make_pool(2)
    e0 = pool.endpoints[0]
    assert pool.choose(avoid={e0}).endpoint.index == 1
    pool.endpoints[1].state, pool.endpoints[1].opened_at = OPEN, clock.now
    assert pool.choose(avoid={e0}).endpoint is e0  # nowhere else to go


def test_a_call_avoids_every_endpoint_it_tried_while_an_untried_one_takes_requests():
    pool, _ = make_pool(3)
    e0, e1, e2 = pool.endpoints
    pool.started(e2)  # e2 the most loaded: still the one left untried
    assert pool.choose(avoid={e0, e1}).endpoint is e2
    assert pool.choose(avoid={e0, e1, e2}).endpoint is e0  # all tried: the least loaded


@pytest.mark.parametrize(
    "outcomes, state",
    [
        ([FAILED, FAILED], CLOSED),
        ([FAILED, FAILED, FAILED], OPEN),
        ([FAILED, FAILED, OK, FAILED, FAILED], CLOSED),  # a reply resets the count
        ([FAILED, FAILED, BUSY, FAILED, FAILED], CLOSED),  # a 429 is busy, not dead
        ([FAILED] * 5, OPEN),
    ],
)
def test_consecutive_failures_open_the_breaker(outcomes, state):
    pool, _ = make_pool(2)
    e0 = pool.endpoints[0]
    for outcome in outcomes:
        pool.started(e0)
        pool.finished(e0, outcome, error="ConnectionRefused")
    assert e0.state == state


@pytest.mark.parametrize(
    "outcomes, state",
    [
        ([ERROR] * 3, OPEN),  # a server answering only 5xx: as fast as one that does not answer
        ([OK] * 17 + [ERROR] * 3, CLOSED),  # 3 of 20: sporadic, retried elsewhere
        ([OK, OK, ERROR] * 20, CLOSED),  # a third of the replies: the server mostly answers
        ([OK, ERROR, ERROR] * 2, OPEN),  # two thirds, and max_failures of them: failing
        ([ERROR, ERROR, FAILED], CLOSED),  # an error reply and a missing reply are counted apart
    ],
)
def test_error_replies_open_the_breaker_only_when_they_are_most_replies(outcomes, state):
    pool, _ = make_pool(2)
    e0 = pool.endpoints[0]
    for outcome in outcomes:
        pool.started(e0)
        pool.finished(e0, outcome, error="HTTP 500")
    assert e0.state == state


def test_a_sporadic_500_does_not_cost_an_endpoint_its_share_of_requests():
    pool, _ = make_pool(2)
    sent = [send(pool, ERROR if n % 10 == 0 else OK, error="HTTP 500") for n in range(200)]
    assert pool.endpoints[0].state == pool.endpoints[1].state == CLOSED
    assert sent.count(0) == sent.count(1) == 100


def test_breaker_open_then_half_open_probe_then_closed_or_open_again():
    pool, clock = make_pool(2, max_failures=2, cooldown_s=10.0)
    e0, e1 = pool.endpoints
    for _ in range(2):
        pool.started(e0)
        pool.finished(e0, FAILED, error="HTTP 502")
    assert e0.state == OPEN
    assert [send(pool) for _ in range(3)] == [1, 1, 1]  # left out while open
    clock.now += 9.9
    assert pool.choose().endpoint is e1
    clock.now += 0.1  # cool-down over: one probe
    probe = pool.choose().endpoint
    assert probe is e0 and e0.state == HALF_OPEN
    pool.started(e0)
    assert pool.choose().endpoint is e1  # one probe at a time
    pool.finished(e0, FAILED, error="HTTP 502")
    assert e0.state == OPEN and e0.opened_at == clock.now  # open again for another cool-down
    clock.now += 10
    assert pool.choose().endpoint is e0
    pool.started(e0)
    pool.finished(e0, OK)
    assert e0.state == CLOSED and e0.failures == 0
    assert sorted(send(pool) for _ in range(4)) == [0, 0, 1, 1]


def test_all_down_says_when_the_first_probe_may_go():
    pool, clock = make_pool(2, max_failures=1, cooldown_s=10.0)
    e0, e1 = pool.endpoints
    for endpoint, error in ((e0, "HTTP 500"), (e1, "ClientConnectorError")):
        pool.started(endpoint)
        pool.finished(endpoint, FAILED, error=error)
        clock.now += 4
    choice = pool.choose()
    assert choice.endpoint is None and choice.down and choice.wait_s == pytest.approx(2.0)
    message = pool.down_message()
    assert "http://e0/v1 open after 1 failure(s) in a row (HTTP 500)" in message and "ClientConnectorError" in message
    clock.now += 2
    probe = pool.choose().endpoint
    pool.started(probe)
    choice = pool.choose()  # e0 probing, e1 still cooling down
    assert choice.endpoint is None and choice.down and choice.wait_s == pytest.approx(4.0)


def test_a_single_endpoint_never_opens():
    pool, _ = make_pool(1, max_failures=None)
    for _ in range(20):
        send(pool, FAILED, error="HTTP 500")
    assert pool.endpoints[0].state == CLOSED and pool.choose().endpoint is pool.endpoints[0]


def test_retry_after_rests_an_endpoint_while_another_takes_requests():
    pool, clock = make_pool(2)
    e0, e1 = pool.endpoints
    pool.started(e0)
    pool.finished(e0, BUSY, rest_s=5.0)
    assert [send(pool) for _ in range(3)] == [1, 1, 1]
    pool.started(e1)
    pool.finished(e1, BUSY, rest_s=2.0)
    choice = pool.choose()
    assert choice.endpoint is None and not choice.down and choice.wait_s == pytest.approx(2.0)
    clock.now += 5
    assert pool.choose().endpoint is not None


def test_an_untried_endpoint_takes_requests_unless_open_or_resting():
    pool, clock = make_pool(3)
    e0, e1, e2 = pool.endpoints
    assert pool.another_takes_requests({e0}) and pool.another_takes_requests({e0, e1})
    assert not pool.another_takes_requests({e0, e1, e2})
    e1.state, e1.opened_at = OPEN, clock.now
    e2.rest_until = clock.now + 1
    assert not pool.another_takes_requests({e0}) and pool.another_takes_requests({e1})
    clock.now += 1
    assert pool.another_takes_requests({e0}) and not pool.another_takes_requests({e0, e2})


def trip(pool, endpoint, stale_requests=0):
    """Open ``endpoint``'s breaker while ``stale_requests`` other requests to it are still in flight; returns
    what ``started`` gave each of those."""
    stale = [pool.started(endpoint) for _ in range(stale_requests)]
    for _ in range(pool.max_failures):
        sent_in = pool.started(endpoint)
        pool.finished(endpoint, FAILED, error="HTTP 502", sent_in=sent_in)
    assert endpoint.state == OPEN
    return stale


def test_requests_sent_before_the_breaker_opened_do_not_hold_back_the_probe():
    pool, clock = make_pool(2, max_failures=2, cooldown_s=10.0)
    e0, e1 = pool.endpoints
    stale = trip(pool, e0, stale_requests=2)
    clock.now += 10
    assert pool.choose().endpoint is e0 and e0.state == HALF_OPEN and e0.in_flight == 2
    probe = pool.started(e0)
    assert pool.choose().endpoint is e1  # one probe at a time, stale requests aside
    pool.finished(e0, FAILED, error="timeout", sent_in=stale[0])
    assert e0.state == HALF_OPEN and e0.opened_at == 100.0  # a stale failure: no new cool-down
    pool.finished(e0, OK, sent_in=probe)
    assert e0.state == CLOSED and e0.failures == 0
    pool.finished(e0, FAILED, error="timeout", sent_in=stale[1])
    assert e0.state == CLOSED and e0.failures == 0 and e0.in_flight == 0  # counted before it opened


def test_a_failed_probe_opens_again_and_a_stale_reply_closes_the_breaker():
    pool, clock = make_pool(2, max_failures=2, cooldown_s=10.0)
    e0, _ = pool.endpoints
    stale = trip(pool, e0, stale_requests=1)
    clock.now += 10
    assert pool.choose().endpoint is e0
    pool.finished(e0, FAILED, error="HTTP 502", sent_in=pool.started(e0))  # the probe fails
    assert e0.state == OPEN and e0.opened_at == clock.now and not e0.probing
    pool.finished(e0, OK, sent_in=stale[0])  # a reply, however late: the server is alive
    assert e0.state == CLOSED and e0.failures == 0


def test_a_cancelled_probe_lets_the_next_one_go():
    pool, clock = make_pool(2, max_failures=1, cooldown_s=10.0)
    e0, _ = pool.endpoints
    trip(pool, e0)
    clock.now += 10
    probe = pool.started(pool.choose().endpoint)
    pool.finished(e0, None, sent_in=probe)
    assert e0.state == HALF_OPEN and pool.choose().endpoint is e0


def test_a_cancelled_request_only_frees_its_slot():
    pool, _ = make_pool(2, max_failures=1)
    e0 = pool.endpoints[0]
    pool.started(e0)
    pool.finished(e0, None)
    assert e0.in_flight == 0 and e0.state == CLOSED and e0.failures == 0


def two_endpoint_judge(urls, concurrency=8, **overrides) -> OpenAIJudge:
    settings = {"base_url": urls, "model": "m", "backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 2}
    return OpenAIJudge(JudgeConfig(**{**settings, **overrides}), concurrency=concurrency)


def test_requests_spread_over_both_endpoints(judge_server):
    first, second = judge_server(latency_s=0.02), judge_server(latency_s=0.02)
    judge = two_endpoint_judge([first.base_url, second.base_url])

    async def run():
        await asyncio.gather(*(judge.complete(MESSAGES) for _ in range(40)))
        await judge.close()

    asyncio.run(run())
    assert len(first.requests) + len(second.requests) == 40
    assert len(first.requests) >= 10 and len(second.requests) >= 10


def test_one_endpoint_killed_mid_run_no_sample_fails(judge_server):
    first = judge_server(latency_s=0.02)
    second = judge_server(latency_s=0.02)
    judge = two_endpoint_judge([first.base_url, second.base_url], endpoint_cooldown_s=600)

    async def run():
        samples = [SampleJudge(judge) for _ in range(200)]
        tasks = [asyncio.create_task(s.complete(MESSAGES)) for s in samples]
        await until(lambda: len(first.requests) >= 20 and first.in_flight >= 2)
        await asyncio.to_thread(first.kill)  # the requests in flight there lose their connection
        replies = await asyncio.gather(*tasks)
        await judge.close()
        return samples, replies

    samples, replies = asyncio.run(run())
    assert len(replies) == 200 and all(s.metrics()["judge_error"] == 0 for s in samples)
    dead = judge.pool.endpoints[0]
    assert dead.state == "open" and dead.failures >= 3 and judge.stats.failures == {}
    assert len(second.requests) > 100 and judge.stats.retries >= 3
    assert sum(s.metrics()["judge_retries"] for s in samples) == judge.stats.retries


def free_port_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return f"http://user:secret@127.0.0.1:{s.getsockname()[1]}/v1"


def test_all_endpoints_down_fails_with_a_typed_error_naming_them_after_all_down_timeout_s():
    urls = [free_port_url(), free_port_url()]
    judge = two_endpoint_judge(urls, max_retries=10, endpoint_max_failures=1, all_down_timeout_s=0.3)

    async def run():
        try:
            await judge.complete(MESSAGES)
        finally:
            await judge.close()

    with pytest.raises(JudgeUnavailable) as info:
        asyncio.run(run())
    message = str(info.value)
    assert info.value.kind == "all_endpoints_down" and "all_down_timeout_s=0.3" in message
    for url in urls:
        assert url.replace("user:secret@", "") in message
    assert "secret" not in message and "ClientConnectorError" in message
    assert info.value.attempts == 3  # two failed, then none left: well within max_retries


def test_a_dead_endpoint_comes_back_through_the_half_open_probe(judge_server):
    good = judge_server()
    down = judge_server(
        script=lambda body, i: Reply(status=502, body=b"bad gateway") if i < 3 else Reply(content="[[A]]")
    )
    judge = two_endpoint_judge([down.base_url, good.base_url], concurrency=1, endpoint_cooldown_s=0.2)

    async def run():
        while judge.pool.endpoints[0].state != "open":
            await judge.complete(MESSAGES)
        await until(lambda: judge.pool.choose().endpoint is judge.pool.endpoints[0])  # cool-down over
        await judge.complete(MESSAGES)  # the probe: answered, the endpoint is back
        await judge.close()

    asyncio.run(run())
    assert judge.pool.endpoints[0].state == "closed" and len(down.requests) == 4


def test_two_dead_endpoints_each_get_a_try_then_the_call_backs_off():
    """A joint outage: the call fails over at once only to an endpoint it has not tried since it last backed
    off, so it waits out the backoff schedule instead of burning its retries in a burst (A, B, A, B, A)."""
    waits = []

    async def record(seconds):  # the waits the client asks for; returns at once
        waits.append(seconds)

    settings = {"model": "m", "max_retries": 4, "backoff_base_s": 1.0, "backoff_max_s": 100.0}
    judge = OpenAIJudge(JudgeConfig(base_url=[free_port_url(), free_port_url()], **settings), sleep=record)
    with pytest.raises(JudgeConnectionError) as info:
        asyncio.run(complete_and_close(judge))
    assert info.value.attempts == 5 and [e.sent for e in judge.pool.endpoints] == [3, 2]
    # after A: B untried, at once; after B: each had its try, back off (attempt 1: 1-2 s); again (attempt 3)
    assert waits[0] == 0.0 and 1.0 <= waits[1] <= 2.0 and waits[2] == 0.0 and 4.0 <= waits[3] <= 8.0
    assert len(waits) == 4

    waits.clear()  # one dead endpoint: the same retries, each after a backoff
    judge = OpenAIJudge(JudgeConfig(base_url=free_port_url(), **settings), sleep=record)
    with pytest.raises(JudgeConnectionError):
        asyncio.run(complete_and_close(judge))
    assert len(waits) == 4 and all(2.0**n / 2 <= wait <= 2.0**n for n, wait in enumerate(waits))


def test_each_outage_of_every_endpoint_gets_its_own_all_down_timeout_s():
    """Both endpoints dead, a short cool-down: the call waits out one outage, probes, fails, and meets a new
    outage. Each outage gets the full all_down_timeout_s; the call ends when its retries run out."""
    settings = {"endpoint_max_failures": 1, "endpoint_cooldown_s": 0.05, "all_down_timeout_s": 0.5}
    backoff = {"backoff_base_s": 0.005, "backoff_max_s": 0.01}  # shorter than the cool-down: outages happen
    judge = two_endpoint_judge([free_port_url(), free_port_url()], max_retries=40, **settings, **backoff)
    with pytest.raises(JudgeConnectionError) as info:  # not JudgeUnavailable: no single outage lasted 0.5 s
        asyncio.run(complete_and_close(judge))
    assert info.value.attempts == 41
    assert all(e.trips >= 15 for e in judge.pool.endpoints)  # a score of outages, each ended by a probe


async def complete_and_close(judge):
    try:
        return await judge.complete(MESSAGES)
    finally:
        await judge.close()


def test_a_sporadic_error_reply_is_retried_at_once_a_failing_server_after_a_backoff(judge_server):
    """A step waits for its slowest sample: a 500 from servers whose replies are mostly fine goes round the
    endpoints again at once, however many the call met (max_retries bounds them); servers that mostly fail
    get the backoff schedule."""
    waits = []

    async def record(seconds):
        waits.append(seconds)

    def sporadic(body, index):  # every 10th reply a 500; the test's call gets two of them
        return Reply(status=500, body=b"oops") if index % 10 == 9 else Reply(content="[[A]]")

    servers = [judge_server(script=sporadic), judge_server(script=sporadic)]
    settings = {"model": "m", "max_retries": 4, "backoff_base_s": 1.0}
    judge = OpenAIJudge(JudgeConfig(base_url=[s.base_url for s in servers], **settings), sleep=record)

    async def run():
        for _ in range(18):  # each server: 9 replies, all fine
            await judge.complete(MESSAGES)
        reply = await judge.complete(MESSAGES)  # A's 10th: 500, B's 10th: 500, then A again
        await judge.close()
        return reply

    reply = asyncio.run(run())
    assert reply.text == "[[A]]" and reply.attempts == 3 and waits == [0.0, 0.0]

    waits.clear()  # four in a row from servers mostly fine: each retry at once

    def twice(body, index):
        return Reply(status=500, body=b"oops") if index in (9, 10) else Reply(content="[[A]]")

    servers = [judge_server(script=twice), judge_server(script=twice)]
    judge = OpenAIJudge(JudgeConfig(base_url=[s.base_url for s in servers], **settings), sleep=record)

    async def third():
        for _ in range(18):
            await judge.complete(MESSAGES)
        reply = await judge.complete(MESSAGES)  # A, B, A, B: 500s; then A answers
        await judge.close()
        return reply

    assert asyncio.run(third()).attempts == 5
    assert waits == [0.0, 0.0, 0.0, 0.0]

    waits.clear()
    failing = [judge_server(script=lambda body, index: Reply(status=503, body=b"down")) for _ in range(2)]
    judge = OpenAIJudge(JudgeConfig(base_url=[s.base_url for s in failing], **settings), sleep=record)
    with pytest.raises(JudgeHTTPError):
        asyncio.run(complete_and_close(judge))
    assert waits[0] == 0.0 and 1.0 <= waits[1] <= 2.0  # after each had its try: backed off
