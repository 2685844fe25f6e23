"""The adaptive concurrency limit (writing_rl/judge/limiter.py): the AIMD rules by tables, the gate in a loop,
and the client against a judge that refuses what it cannot serve with an immediate 429."""

import asyncio

import pytest

from writing_rl.judge import JudgeRateLimited, OpenAIJudge, SampleJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.limiter import AimdLimit, Gate

from judge_server import Reply
from waiting import until

MESSAGES = [{"role": "user", "content": "Compare. [[A]] or [[B]]?"}]


def replay(limit: AimdLimit, events: str) -> list[int]:
    """Apply events ('s': a reply at latency 1, 'S': one at latency 10, 'u': a reply to a request sent
    with slots to spare, 'o': an overload signal sent in the current epoch, 'x': one sent before the last
    decrease); the slots after each."""
    slots = []
    for event in events:
        if event in "sSu":
            limit.on_success(10.0 if event == "S" else 1.0, saturated=event != "u")
        else:
            limit.on_overload(limit.epoch - (event == "x"))
        slots.append(limit.slots)
    return slots


@pytest.mark.parametrize(
    "settings, events, slots",
    [
        # starts at the configured limit and never goes above it
        ({"max_limit": 8}, "sss", [8, 8, 8]),
        # multiplicative decrease by 0.9 per signal of the current round; floor of the fractional limit
        ({"max_limit": 10}, "ooo", [9, 8, 7]),
        # a signal from a request sent before the last decrease is ignored (one decrease per round)
        ({"max_limit": 10}, "oxxx", [9, 9, 9, 9]),
        # never below min_limit (nor 1)
        ({"max_limit": 4, "min_limit": 2}, "oooooooo", [3, 2, 2, 2, 2, 2, 2, 2]),
        # a decrease always takes at least one slot: 3 x 0.9 = 2.7 would keep 3
        ({"max_limit": 3}, "oo", [2, 1]),
        ({"max_limit": 2}, "oooooooooo", [1] * 10),
        # after a decrease, back towards the peak per clean round of `limit` replies: half the way, a
        # quarter of the limit at most (5 -> 6.25)
        ({"max_limit": 10, "decrease": 0.5}, "o" + "s" * 6, [5, 5, 5, 5, 5, 6, 6]),
        # any rate-limit signal, even an ignored one, starts the round again
        ({"max_limit": 10, "decrease": 0.5}, "o" + "ssss" + "x" + "sssss", [5] * 10 + [6]),
        # a signal after the limit grew but before it is back lowers the peak halfway (10 -> 8.125) and
        # the climb starts again from the cut: 6.25 -> 3.125, +1 per round, then a quarter
        (
            {"max_limit": 10, "decrease": 0.5},
            "o" + "s" * 5 + "o" + "s" * 3 + "s" * 4 + "s" * 5 + "s" * 5,
            [5] * 5 + [6] + [3] * 3 + [4] * 4 + [5] * 5 + [6] * 6,
        ),
        # grows back to the configured limit and stops there
        ({"max_limit": 3, "decrease": 0.5}, "o" + "s" * 6, [1, 2, 2, 3, 3, 3, 3]),
        # no growth while the client does not use its limit
        ({"max_limit": 10, "decrease": 0.5}, "o" + "u" * 8, [5] * 9),
        # adaptive off: a fixed limit whatever happens
        ({"max_limit": 6, "adaptive": False}, "ooosss", [6] * 6),
        # min_limit above max_limit is clipped to it
        ({"max_limit": 3, "min_limit": 5}, "ooo", [3, 3, 3]),
    ],
)
def test_aimd_rules(settings, events, slots):
    assert replay(AimdLimit(**settings), events) == slots


def test_signals_within_one_latency_of_a_decrease_are_one_signal():
    """429s come back at once: a burst of them within the time one request is served is one decrease."""
    limit = AimdLimit(max_limit=20)
    replay(limit, "s" * 5)  # the judge's latency: 1 s
    assert limit.on_overload(limit.epoch, now=100.0) and limit.slots == 18
    assert not limit.on_overload(limit.epoch, now=100.9)  # a request sent after it, refused at once
    assert limit.on_overload(limit.epoch, now=101.1) and limit.slots == 16
    assert limit.on_overload(limit.epoch) and limit.slots == 14  # no clock given: the round rule alone


def test_a_passing_burst_of_429s_costs_a_few_rounds_not_thousands_of_replies():
    limit = AimdLimit(max_limit=64)
    for _ in range(6):
        limit.on_overload(limit.epoch)
    assert limit.slots == 34
    replies = 0
    while limit.slots < 64:
        limit.on_success(1.0)
        replies += 1
    assert replies < 400  # one slot per round from 34 would take 1,455


def test_growth_waits_while_latency_rises_and_resumes_once_it_holds():
    limit = AimdLimit(max_limit=20, decrease=0.5, latency_tolerance=2.0)
    replay(limit, "s" * 50 + "o")  # a long-run latency of 1, then down to 10
    assert limit.slots == 10
    replay(limit, "S" * 5)  # recent latency 10x the long-run average: no growth
    assert limit.slots == 10 and not limit.latency_holds()
    replay(limit, "s" * 40)  # latency back to normal: the limit grows again
    assert limit.latency_holds() and limit.slots > 10


def test_aimd_clients_sharing_a_capacity_converge_to_it():
    """Two AIMD limits against one capacity: each round the requests over it get a 429 (the worker with
    more in flight gets it), the others a reply. They settle near the capacity, never far below it."""
    capacity = 16
    a, b = AimdLimit(max_limit=32), AimdLimit(max_limit=32)
    totals = []
    for _ in range(400):
        total = a.slots + b.slots
        totals.append(total)
        for limit in (a, b):
            share = limit.slots / total
            served = round(min(capacity, total) * share)
            for _ in range(served):
                limit.on_success(1.0)
            if total > capacity:
                limit.on_overload(limit.epoch)
    settled = totals[100:]
    assert min(settled) >= 0.8 * capacity and max(settled) <= 1.3 * capacity
    assert sum(min(t, capacity) for t in settled) / (capacity * len(settled)) >= 0.9
    assert abs(a.slots - b.slots) <= 3  # a fair split


def test_gate_grants_in_order_and_follows_the_limit():
    async def scenario():
        limit = AimdLimit(max_limit=2, decrease=0.5)
        gate = Gate(limit)
        first, second = await gate.acquire(), await gate.acquire()
        assert gate.occupied == 2 and first.limit == 2
        assert not first.saturated and second.saturated  # the second took the last slot
        order = []

        async def queued(name):
            await gate.acquire()
            order.append(name)

        tasks = [asyncio.create_task(queued(name)) for name in "abc"]
        await until(lambda: len(gate.waiters) == 3)
        assert gate.on_overload(first)  # limit 2 -> 1
        assert not gate.on_overload(second)  # same round: ignored
        gate.release()
        gate.release()  # 0 in flight, limit 1: one waiter goes
        await until(lambda: order == ["a"])
        assert gate.occupied == 1
        gate.on_success(second, 1.0)  # limit 1 -> 2: the next waiter goes at once
        await until(lambda: order == ["a", "b"])
        tasks[2].cancel()  # a cancelled waiter leaves the queue and holds nothing
        await asyncio.gather(tasks[2], return_exceptions=True)
        assert gate.waiters == type(gate.waiters)() and gate.occupied == 2

    asyncio.run(scenario())


def test_a_waiter_cancelled_before_a_release_raises_cancelled_and_the_next_waiter_gets_the_slot():
    """Task.cancel() cancels the waiter's future at once; a release() before the task resumes drops it from
    the queue. The task must still end with CancelledError (not a ValueError from the queue), holding nothing."""

    async def scenario():
        gate = Gate(AimdLimit(max_limit=1))
        await gate.acquire()  # the one slot is held
        cancelled = asyncio.create_task(gate.acquire())
        await until(lambda: len(gate.waiters) == 1)
        behind = asyncio.create_task(gate.acquire())
        await until(lambda: len(gate.waiters) == 2)
        cancelled.cancel()
        gate.release()  # before `cancelled` runs again: wake() skips it and grants `behind`
        (outcome,) = await asyncio.gather(cancelled, return_exceptions=True)
        ticket = await behind
        return outcome, ticket, gate

    outcome, ticket, gate = asyncio.run(scenario())
    assert isinstance(outcome, asyncio.CancelledError)
    assert ticket.limit == 1 and gate.occupied == 1 and not gate.waiters


def test_a_cancelled_waiter_alone_in_the_queue_leaves_the_gate_free():
    async def scenario():
        gate = Gate(AimdLimit(max_limit=1))
        await gate.acquire()
        cancelled = asyncio.create_task(gate.acquire())
        await until(lambda: len(gate.waiters) == 1)
        cancelled.cancel()
        gate.release()
        (outcome,) = await asyncio.gather(cancelled, return_exceptions=True)
        again = await asyncio.wait_for(gate.acquire(), timeout=30)  # the slot is free, not leaked
        return outcome, again, gate

    outcome, again, gate = asyncio.run(scenario())
    assert isinstance(outcome, asyncio.CancelledError) and again.limit == 1 and gate.occupied == 1


def rate_limited_judge(server, concurrency, **overrides) -> OpenAIJudge:
    settings = {"base_url": server.base_url, "model": "m", "backoff_base_s": 0.01, "backoff_max_s": 0.05}
    return OpenAIJudge(JudgeConfig(**{**settings, **overrides}), concurrency=concurrency)


def test_immediate_429s_shrink_the_limit_and_no_sample_fails(judge_server, steady_hedge_floor):
    """A judge serving 4 at once and refusing the rest with an immediate 429 (no Retry-After); the client
    allowed 32 in flight. The 429s never use up a sample's retries (max_retries=0 here)."""
    server = judge_server(latency_s=0.05, capacity=4, refuse_over_capacity=True)
    judge = rate_limited_judge(server, 32, max_retries=0)

    async def score_all():
        samples = [SampleJudge(judge) for _ in range(120)]
        replies = await asyncio.gather(*(s.complete(MESSAGES) for s in samples))
        await judge.close()
        return samples, replies

    samples, replies = asyncio.run(score_all())
    assert len(replies) == 120 and all(r.text.endswith("]]") for r in replies)
    assert server.refused > 0 and judge.stats.rate_limited == server.refused
    assert judge.stats.failures == {} and judge.stats.retries == 0
    assert judge.concurrency_limit < 32 and judge.stats.limit_decreases > 0
    metrics = [s.metrics() for s in samples]
    assert sum(m["judge_rate_limited"] for m in metrics) == server.refused
    assert all(m["judge_error"] == 0 and m["judge_retries"] == 0 and m["judge_tokens"] == 2 for m in metrics)
    assert all(1 <= m["judge_concurrency_limit"] <= 32 for m in metrics)
    assert min(m["judge_concurrency_limit"] for m in metrics) < 32


def test_the_adaptive_limit_off_keeps_the_configured_concurrency(judge_server):
    server = judge_server(latency_s=0.02, capacity=2, refuse_over_capacity=True)
    judge = rate_limited_judge(server, 8, adaptive_concurrency=False)

    async def score_all():
        await asyncio.gather(*(judge.complete(MESSAGES) for _ in range(30)))
        await judge.close()

    asyncio.run(score_all())
    assert server.refused > 0 and judge.concurrency_limit == 8 and judge.stats.limit_decreases == 0


def test_a_judge_refusing_past_rate_limit_wait_s_fails_the_call_with_a_typed_error(judge_server):
    server = judge_server(script=lambda body, i: Reply(status=429, body=b'{"error": "quota exceeded"}'))
    judge = rate_limited_judge(server, 4, rate_limit_wait_s=0.3)
    sample = SampleJudge(judge)

    async def call():
        try:
            await sample.complete(MESSAGES)
        finally:
            await judge.close()

    with pytest.raises(JudgeRateLimited) as info:
        asyncio.run(call())
    message = str(info.value)
    assert "rate_limit_wait_s=0.3" in message and "quota exceeded" in message and server.base_url in message
    assert info.value.kind == "rate_limited" and info.value.attempts == 1
    assert info.value.rate_limited == len(server.requests) >= 2
    metrics = sample.metrics()
    assert metrics["judge_error"] == 1 and metrics["judge_rate_limited"] == len(server.requests)
    assert judge.stats.failures == {"rate_limited": 1}


def test_rate_limit_wait_s_zero_fails_at_the_first_429(judge_server):
    server = judge_server(script=lambda body, i: Reply(status=429, body=b"no"))
    judge = rate_limited_judge(server, 4, rate_limit_wait_s=0)

    async def call():
        try:
            await judge.complete(MESSAGES)
        finally:
            await judge.close()

    with pytest.raises(JudgeRateLimited):
        asyncio.run(call())
    assert len(server.requests) == 1


def test_retry_after_pauses_the_whole_client(judge_server):
    """After a 429 with Retry-After, requests of other calls wait for the pause too instead of
    hitting the endpoint."""

    def script(body, index):
        return Reply(status=429, body=b"wait", headers={"Retry-After": "0.5"}) if index == 0 else Reply(content="[[A]]")

    server = judge_server(script=script)
    judge = rate_limited_judge(server, 4)

    async def calls():
        first = asyncio.create_task(judge.complete(MESSAGES))
        await until(lambda: judge.stats.rate_limited == 1)
        second = await judge.complete(MESSAGES)  # sent during the pause: waits for it, gets no 429
        await first
        await judge.close()
        return second

    second = asyncio.run(calls())
    assert second.rate_limited == 0 and len(server.requests) == 3 and judge.stats.rate_limited == 1
