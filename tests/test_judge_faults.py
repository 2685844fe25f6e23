"""A sample's faults must not set its step's pace (issue 46): the soak's fault mix (judge_server.chaos_script),
then the client's answers to it. A retry waits for room before every fresh request; a hedged request whose
copy fails (an error, a body that is not a completion, a 429) is replaced at once; a 429 goes at once to an
endpoint that has not refused the call. Each failure stays counted on the call."""

import asyncio

import pytest
from test_judge_hedge import Answer, Endpoints, warm

from writing_rl.judge import OpenAIJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.hedge import Hedger
from writing_rl.judge.limiter import AimdLimit, Gate

from judge_server import CHAOS_FAULTS, Reply, chaos_script
from waiting import until

LATENCY_S = 0.05


def chaos_request(index: int) -> dict:
    return {"messages": [{"role": "user", "content": f"request {index}"}]}


def test_chaos_spreads_every_reply_from_one_to_four_times_the_latency_reproducibly_and_spikes_last_1_5_s():
    script = chaos_script(seed=7, latency_s=LATENCY_S)
    replies = [script(chaos_request(i), i) for i in range(4000)]
    # the server sleeps its base latency, then the reply's delay_s
    totals = [LATENCY_S + reply.delay_s for reply in replies]
    spikes = [t for t in totals if t > 4 * LATENCY_S + 1e-9]
    spread = [t for t in totals if t <= 4 * LATENCY_S + 1e-9]
    assert spikes and all(t == pytest.approx(1.5) for t in spikes)
    assert 0.01 <= len(spikes) / len(replies) <= 0.03  # 2% of replies
    assert min(spread) >= LATENCY_S and max(spread) <= 4 * LATENCY_S
    quarters = [sum(LATENCY_S * (1 + q) <= t < LATENCY_S * (2 + q) for t in spread) for q in range(3)]
    assert min(quarters) > 0.25 * len(spread)  # spread over the whole range, not bunched
    statuses = [reply.status for reply in replies]
    assert statuses.count(500) > 0.05 * len(replies) and statuses.count(429) == 4 * 60  # other faults kept

    again = chaos_script(seed=7, latency_s=LATENCY_S)
    assert [again(chaos_request(i), i).delay_s for i in range(200)] == [r.delay_s for r in replies[:200]]
    other = chaos_script(seed=8, latency_s=LATENCY_S)
    assert [other(chaos_request(i), i).delay_s for i in range(200)] != [r.delay_s for r in replies[:200]]


def test_chaos_without_the_spread_keeps_the_base_latency_and_when_off_answers_cleanly():
    assert "spread" in CHAOS_FAULTS and "spike" in CHAOS_FAULTS
    no_spread = chaos_script(seed=7, latency_s=LATENCY_S, faults=tuple(f for f in CHAOS_FAULTS if f != "spread"))
    delays = {round(no_spread(chaos_request(i), i).delay_s, 9) for i in range(2000)}
    assert delays == {0.0, round(1.5 - LATENCY_S, 9)}
    off = chaos_script(seed=7, enabled=lambda: False, latency_s=LATENCY_S)
    assert all(off(chaos_request(i), i).delay_s == 0.0 and off(chaos_request(i), i).status == 200 for i in range(100))


def test_a_retry_waits_for_room_before_every_fresh_request():
    async def scenario():
        gate = Gate(AimdLimit(max_limit=1, adaptive=False))
        await gate.acquire()
        order = []

        async def queued(name, urgent=False):
            await gate.acquire(urgent)
            order.append(name)

        tasks = [asyncio.create_task(queued("fresh 1")), asyncio.create_task(queued("fresh 2"))]
        await until(lambda: len(gate.waiters) == 2)
        tasks.append(asyncio.create_task(queued("retry", urgent=True)))
        await until(lambda: len(gate.urgent) == 1)
        assert not gate.has_room() and gate.ticket().saturated
        for n in range(1, 4):
            gate.release()
            await until(lambda n=n: len(order) == n)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["retry", "fresh 1", "fresh 2"]


def test_a_failed_copy_is_replaced_at_once_while_the_stuck_request_is_still_out():
    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a"}, status={"b": 500})
    warm(hedger, 0.001)
    replaced = []

    def replace(endpoint, answer):
        replaced.append((endpoint, answer.status))
        return "c"

    async def run():
        return await hedger.post(endpoints.send, "a", lambda: "b", endpoints.drop, 10, replace)

    assert asyncio.run(run()) == ("c", Answer(200))
    assert endpoints.sent == ["a", "b", "c"] and replaced == [("b", 500)]
    assert endpoints.cancelled == ["a"] and endpoints.dropped == [] and hedger.in_flight == 0

    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a"}, status={"b": 500})
    warm(hedger, 0.001)

    async def nowhere():  # no replacement: the call waits for the stuck request, as before
        call = asyncio.ensure_future(hedger.post(endpoints.send, "a", lambda: "b", endpoints.drop, 10, replace_none))
        await until(lambda: len(endpoints.sent) == 2 and not endpoints.gates["a"].is_set())
        await until(lambda: endpoints.dropped == [] and len(replaced_none) == 1)
        assert not call.done()
        endpoints.gates["a"].set()
        return await call

    replaced_none = []

    def replace_none(endpoint, answer):
        replaced_none.append(endpoint)
        return None

    assert asyncio.run(nowhere()) == ("a", Answer(200)) and endpoints.sent == ["a", "b"]


def test_a_request_whose_copy_is_slow_too_gets_a_second_copy():
    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a", "b"})
    warm(hedger, 0.001)
    targets = iter(["b", "c"])

    async def run():
        return await hedger.post(endpoints.send, "a", lambda: next(targets), endpoints.drop, 20)  # 2 copies at once

    assert asyncio.run(run()) == ("c", Answer(200))
    assert endpoints.sent == ["a", "b", "c"] and sorted(endpoints.cancelled) == ["a", "b"]
    assert hedger.sent == 2 and hedger.in_flight == 0


@pytest.mark.parametrize(
    "failure, attempts, rate_limited",
    [
        (Reply(status=500, body=b'{"error": {"message": "internal error"}}'), 2, 0),
        (Reply(status=200, body=b"<html>502 Bad Gateway</html>"), 2, 0),  # a 200 that is no completion
        (Reply(status=429, body=b'{"error": {"message": "rate limited"}}'), 1, 1),  # a 429 uses no retry
    ],
    ids=["500", "html", "429"],
)
def test_the_client_replaces_a_hedge_that_failed_and_counts_the_failure(
    judge_server, steady_hedge_floor, failure, attempts, rate_limited
):
    """A request stuck at its endpoint, its copy failing at the other: the call does not wait for the stuck one
    (a spike that sets the step's pace) but sends again at once, and answers with the new request's reply."""
    stuck = {"index": None}
    flaky = {"on": False}
    slow = judge_server(script=lambda request, index: Reply(content="[[A]]", hold=index == stuck["index"]))
    other = judge_server(script=lambda request, index: failure if flaky["on"] else Reply(content="[[A]]"))
    config = JudgeConfig(base_url=[slow.base_url, other.base_url], model="m", hedge_after=3.0)
    judge = OpenAIJudge(config, concurrency=8)

    async def run():
        for _ in range(100):  # the judge's usual latency
            await judge.complete([{"role": "user", "content": "warm-up"}])
        while judge.pool.choose().endpoint is not judge.pool.endpoints[0]:
            await judge.complete([{"role": "user", "content": "warm-up"}])  # until the slow server is next
        stuck["index"], flaky["on"] = slow.count, True
        sent = slow.count, other.count
        call = asyncio.ensure_future(judge.complete([{"role": "user", "content": "the call"}]))
        await until(call.done, timeout_s=60)  # never, if the call waited for the stuck request
        reply = call.result()
        await until(lambda: judge.pool.endpoints[0].in_flight == 0)  # the stuck request was cancelled
        await judge.close()
        return reply, (slow.count - sent[0], other.count - sent[1])

    retries = judge.stats.retries
    reply, (to_slow, to_other) = asyncio.run(run())
    assert reply.text == "[[A]]" and reply.hedges == 1 and (to_slow, to_other) == (2, 1)
    assert reply.attempts == attempts and reply.rate_limited == rate_limited  # the failure counted on the call
    assert judge.stats.retries - retries == attempts - 1


def test_a_429_goes_at_once_to_an_endpoint_that_has_not_refused_the_call(judge_server):
    waits = []

    async def record(seconds):  # the waits the client asks for; returns at once
        waits.append(seconds)

    busy = judge_server(script=lambda request, index: Reply(status=429, body=b"busy"))
    free = judge_server(script=lambda request, index: Reply(content="[[B]]"))
    config = JudgeConfig(base_url=[busy.base_url, free.base_url], model="m")
    judge = OpenAIJudge(config, concurrency=4, sleep=record)

    async def run(j):
        try:
            return await j.complete([{"role": "user", "content": "judge this"}])
        finally:
            await j.close()

    reply = asyncio.run(run(judge))
    assert busy.count == 1 and reply.text == "[[B]]" and reply.rate_limited == 1 and waits == []

    # Refused by both: the call waits once (holding its place), then goes round again.
    both = [judge_server(script=lambda request, index: Reply(status=429, body=b"busy") if index == 0 else
                         Reply(content="[[A]]")) for _ in range(2)]  # fmt: skip
    judge = OpenAIJudge(JudgeConfig(base_url=[s.base_url for s in both], model="m"), concurrency=4, sleep=record)
    reply = asyncio.run(run(judge))
    assert reply.text == "[[A]]" and reply.rate_limited == 2 and len(waits) == 1 and waits[0] > 0
    assert [s.count for s in both] in ([2, 1], [1, 2])


def test_a_retry_goes_before_the_fresh_requests_queued_in_the_client(judge_server):
    """One slot: a call's request fails while two fresh calls wait for the slot. The first fresh call already
    took the freed slot; the retry goes next, before the second."""
    held = {"index": None}

    def script(request, index):
        if index == held["index"]:
            return Reply(status=500, body=b"oops", hold=True)
        return Reply(content="[[A]]")

    server = judge_server(script=script)
    judge = OpenAIJudge(JudgeConfig(base_url=server.base_url, model="m"), concurrency=1)

    async def ask(name):
        return await judge.complete([{"role": "user", "content": name}])

    async def run():
        for _ in range(3):  # a server whose replies are mostly fine: its 500 is retried at once
            await ask("warm-up")
        held["index"] = server.count
        first = asyncio.ensure_future(ask("retried"))
        await until(lambda: server.in_flight == 1)
        fresh = [asyncio.ensure_future(ask("fresh 1")), asyncio.ensure_future(ask("fresh 2"))]
        await until(lambda: len(judge._gate.waiters) == 2)
        server.release()
        replies = await asyncio.gather(first, *fresh)
        await judge.close()
        return replies

    replies = asyncio.run(run())
    assert [r.attempts for r in replies] == [2, 1, 1]
    order = [r["messages"][-1]["content"] for r in server.requests[3:]]
    assert order == ["retried", "fresh 1", "retried", "fresh 2"]


def test_a_scaled_fault_comes_that_much_more_often_and_the_429_kinds_burst_apart():
    def share(script, status=None, finish=None, n=8000):
        replies = [script(chaos_request(i), i) for i in range(n)]
        if status is not None:
            return sum(r.status == status for r in replies) / n
        return sum(r.finish_reason == finish for r in replies) / n

    once = chaos_script(seed=3, faults=("500",))
    twice = chaos_script(seed=3, faults=("500",), scale={"500": 2.0})
    assert 0.06 <= share(once, 500) <= 0.08 and 0.12 <= share(twice, 500) <= 0.16
    assert share(chaos_script(seed=3, faults=("cut",), scale={"cut": 2.0}), finish="length") == pytest.approx(
        0.06, abs=0.01
    )
    plain = chaos_script(seed=3, faults=("429",))
    told = chaos_script(seed=3, faults=("429_retry_after",), scale={"429_retry_after": 2.0})
    plain_429 = [i for i in range(4000) if plain(chaos_request(i), i).status == 429]
    told_429 = [i for i in range(4000) if told(chaos_request(i), i).status == 429]
    assert len(plain_429) == 2 * 60 and len(told_429) == 4 * 60  # 60 every 2,000, twice as often
    assert not any(plain(chaos_request(i), i).headers for i in plain_429)
    assert all(told(chaos_request(i), i).headers == {"Retry-After": "0.2"} for i in told_429)
    wide = chaos_script(seed=3, latency_s=LATENCY_S, faults=("spread",), scale={"spread": 2.0})
    assert max(wide(chaos_request(i), i).delay_s for i in range(2000)) > 4 * LATENCY_S  # up to 7x the latency
    with pytest.raises(ValueError, match="more than every request"):
        chaos_script(seed=3, faults=("500",), scale={"500": 15.0})


def test_with_a_clock_a_429_burst_is_a_window_of_time_however_many_requests_come():
    """bench/faults.py's judges: 0.3 s of 429s every 10 s (a quarter period in), the Retry-After kind half a
    period later, twice as often at scale 2; the requests sent meanwhile do not move the window."""
    now = {"t": 0.0}
    script = chaos_script(seed=3, faults=("429", "429_retry_after"), scale={"429_retry_after": 2.0},
                          clock=lambda: now["t"])  # fmt: skip

    def refused_at(t: float, requests: int = 50) -> list:
        now["t"] = t
        replies = [script(chaos_request(i), i) for i in range(requests)]
        return sorted({(r.status, r.headers.get("Retry-After")) for r in replies})

    assert refused_at(0.0) == refused_at(2.4) == refused_at(2.81) == [(200, None)]
    assert refused_at(2.5) == refused_at(2.79, requests=5000) == [(429, None)]  # however many come
    assert refused_at(12.6) == [(429, None)] and refused_at(12.81) == [(200, None)]
    # every 5 s from 3.75 s (a quarter plus half of its own period):
    assert refused_at(3.75) == refused_at(8.9) == [(429, "0.2")] and refused_at(4.1) == [(200, None)]
