"""Hedged judge requests (writing_rl/judge/hedge.py): a request stuck far past the judge's usual latency
gets a copy on another endpoint, within a budget; then the client against a judge that holds a reply."""

import asyncio
from dataclasses import dataclass

import pytest

from writing_rl.judge import OpenAIJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.hedge import MIN_DELAY_S, Hedger

from judge_server import Reply
from waiting import until

MESSAGES = [{"role": "user", "content": "Compare. [[A]] or [[B]]?"}]


@dataclass
class Answer:
    status: int

    @property
    def ok(self) -> bool:
        return self.status == 200


class Endpoints:
    """Requests by endpoint name. A request to an endpoint in ``gates`` waits until its event is set (never,
    unless the test sets it); ``status`` maps an endpoint to the status it answers (else 200)."""

    def __init__(self, gated=(), status=None):
        self.gates = {name: asyncio.Event() for name in gated}
        self.status = status or {}
        self.sent, self.cancelled, self.dropped = [], [], []
        self.on_return = None  # called with the endpoint as its request ends

    def send(self, endpoint):
        self.sent.append(endpoint)  # counted when called, as the client counts it
        return self._exchange(endpoint)

    async def _exchange(self, endpoint):
        try:
            if endpoint in self.gates:
                await self.gates[endpoint].wait()
            await asyncio.sleep(0)
            if self.on_return is not None:
                self.on_return(endpoint)
            return Answer(self.status.get(endpoint, 200))
        except asyncio.CancelledError:
            self.cancelled.append(endpoint)
            raise

    def drop(self, endpoint, answer):
        self.dropped.append((endpoint, answer.status))


def warm(hedger, latency_s):
    for _ in range(100):  # no hedging before 100 replies
        hedger.observe(latency_s)


def hedged(hedger, endpoints, slots=10, other="b"):
    return hedger.post(endpoints.send, "a", lambda: other, endpoints.drop, slots)


def test_a_stuck_request_is_answered_by_its_hedge_and_then_cancelled():
    hedger, endpoints = Hedger(hedge_after=2.0), Endpoints(gated={"a"})
    warm(hedger, 0.005)

    async def run():
        return await hedged(hedger, endpoints)

    assert asyncio.run(run()) == ("b", Answer(200))
    assert endpoints.sent == ["a", "b"] and endpoints.cancelled == ["a"] and hedger.sent == 1
    assert hedger.in_flight == 0


def test_no_hedge_before_100_replies_when_off_or_when_the_request_answers_in_time():
    hedger = Hedger(hedge_after=1.0)
    for _ in range(99):
        hedger.observe(0.001)
    assert hedger.latency is None
    for hedge_after, latency in ((2.0, None), (0.0, 0.005), (1000.0, 0.005)):
        hedger, endpoints = Hedger(hedge_after), Endpoints()
        if latency is not None:
            warm(hedger, latency)
        assert asyncio.run(hedged(hedger, endpoints)) == ("a", Answer(200))
        assert endpoints.sent == ["a"] and hedger.sent == 0


def test_a_judge_answering_in_milliseconds_is_not_hedged_sooner_than_the_floor():
    """1.5 x a 1 ms percentile would hedge every scheduling hiccup; an LLM judge's tail is far above the floor."""
    fast, slow = Hedger(hedge_after=1.5), Hedger(hedge_after=1.5)
    warm(fast, 0.001)
    warm(slow, 2.0)
    assert fast.delay_s() == MIN_DELAY_S and slow.delay_s() == pytest.approx(3.0)
    assert (
        Hedger(hedge_after=0.0).delay_s() is None and Hedger(hedge_after=1.5).delay_s() is None
    )  # off; no replies yet


def test_hedges_in_flight_stay_within_a_tenth_of_the_concurrency_limit():
    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a", "b"})
    warm(hedger, 0.001)

    async def run():
        calls = [asyncio.ensure_future(hedged(hedger, endpoints, slots=20)) for _ in range(6)]
        await until(lambda: endpoints.sent.count("b") == 2)
        await until(lambda: all(not c.done() for c in calls) and endpoints.sent.count("a") == 6)
        in_flight = hedger.in_flight
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        return in_flight

    assert asyncio.run(run()) == 2 and hedger.sent == 2  # 20 slots: 2 hedges at most
    assert sorted(endpoints.cancelled) == ["a"] * 6 + ["b"] * 2  # cancelling a call cancels its copies
    assert hedger.in_flight == 0


def test_a_failed_copy_waits_for_the_other_and_both_failing_gives_a_failure():
    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a"}, status={"b": 500})
    warm(hedger, 0.001)

    async def run():
        call = asyncio.ensure_future(hedged(hedger, endpoints))
        await until(lambda: endpoints.dropped)  # the copy failed: the call goes on waiting for a
        assert not call.done()
        endpoints.gates["a"].set()
        return await call

    # (a copy may go again after another delay: each failed the same way)
    assert asyncio.run(run()) == ("a", Answer(200)) and set(endpoints.dropped) == {("b", 500)}

    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a"}, status={"a": 503, "b": 502})
    warm(hedger, 0.001)

    async def both_fail():
        call = asyncio.ensure_future(hedged(hedger, endpoints))
        await until(lambda: endpoints.dropped)
        endpoints.gates["a"].set()
        return await call

    assert asyncio.run(both_fail()) == ("a", Answer(503))  # the last failure is the call's to handle
    assert set(endpoints.dropped) == {("b", 502)} and endpoints.cancelled == [] and hedger.in_flight == 0


def slow_and_fast(judge_server, hedge_after: float, concurrency: int):
    """A client of two judges, ``slow`` holding its replies once ``hold()`` is awaited (after the 100 replies
    that give the client the judge's usual latency, and until ``slow`` is next in line)."""
    held = {"on": False}
    slow = judge_server(script=lambda request, index: Reply(content="slow", hold=held["on"]))
    fast = judge_server(script=lambda request, index: Reply(content="fast"))
    settings = {"base_url": [slow.base_url, fast.base_url], "model": "m", "hedge_after": hedge_after}
    judge = OpenAIJudge(JudgeConfig(**settings), concurrency=concurrency)

    async def hold():
        for _ in range(100):
            await judge.complete(MESSAGES)
        held["on"] = True
        while judge.pool.choose().endpoint is not judge.pool.endpoints[0]:
            await judge.complete(MESSAGES)

    return slow, fast, judge, hold


def test_the_client_hedges_a_held_request_to_the_other_endpoint(judge_server, steady_hedge_floor):
    slow, fast, judge, hold = slow_and_fast(judge_server, hedge_after=3.0, concurrency=8)

    async def run():
        await hold()
        before = len(fast.requests)
        reply = await judge.complete(MESSAGES)
        await until(lambda: judge.pool.endpoints[0].in_flight == 0)  # the held request was cancelled
        await judge.close()
        return reply, len(fast.requests) - before

    reply, to_fast = asyncio.run(run())
    slow.release()
    assert reply.text == "fast" and judge.hedger.sent == 1 and to_fast >= 1
    assert reply.hedges == 1  # the copy is counted on the call it was sent for (judge_hedges: a paid request)
    assert judge.pool.endpoints[0].state == "closed"  # a cancelled request says nothing of its health


def test_a_held_request_is_hedged_once_no_request_waits_for_room(judge_server, steady_hedge_floor):
    """hedge_after=1e5 puts the busy delay beyond any deadline here: the copy that goes is the idle rule's."""
    slow, _, judge, hold = slow_and_fast(judge_server, hedge_after=1e5, concurrency=1)

    async def run():
        await hold()
        first = asyncio.ensure_future(judge.complete(MESSAGES))  # (sent first: it takes the only room)
        second = asyncio.ensure_future(judge.complete(MESSAGES))  # no room: it waits, the client is busy
        await until(lambda: judge.pool.endpoints[0].in_flight == 1 and judge._gate.waiters)
        busy = judge._idle()
        second.cancel()
        await until(judge._idle)  # it left the line
        reply = await asyncio.wait_for(first, timeout=30)
        await judge.close()
        return busy, reply

    busy, reply = asyncio.run(run())
    slow.release()
    assert not busy
    assert reply.text == "fast" and judge.hedger.sent == 1


def test_a_request_waiting_for_room_at_a_shared_endpoint_makes_both_clients_busy(judge_server):
    """Two clients of one loop share the endpoint's room (its limit: 1 here); the second one's request waits there,
    past its own client's limit: neither client is idle, so neither sends a copy early into that endpoint."""
    held = judge_server(script=lambda request, index: Reply(content="held", hold=True))
    config = JudgeConfig(base_url=held.base_url, model="m")
    first_client, second_client = OpenAIJudge(config, concurrency=1), OpenAIJudge(config, concurrency=1)

    async def run():
        first = asyncio.ensure_future(first_client.complete(MESSAGES))
        await until(lambda: held.requests)
        second = asyncio.ensure_future(second_client.complete(MESSAGES))
        await until(lambda: any(upstream.waiters for upstream in second_client.upstreams.values()))
        busy = first_client._idle(), second_client._idle(), bool(first_client._gate.waiters)
        for call in (first, second):
            call.cancel()
        await asyncio.gather(first, second, return_exceptions=True)
        await first_client.close()
        await second_client.close()
        return busy

    busy = asyncio.run(run())
    held.release()
    assert busy == (False, False, False)


def test_hedge_after_is_validated():
    for bad in (-1.0, 0.5):
        with pytest.raises(ValueError, match=r"hedge_after=.*: expected a number >= 1, or 0 \(off\)"):
            JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", hedge_after=bad).validate()


def test_the_threshold_is_the_95th_percentile_of_recent_replies():
    hedger = Hedger(hedge_after=1.5)
    for n in range(200):
        hedger.observe(1.0 if n % 50 == 0 else 0.01)  # 2% slow: the threshold ignores them
    assert hedger.latency == 0.01
    for n in range(200):
        hedger.observe(1.0 if n % 10 == 0 else 0.01)  # 10% slow: that is how this judge answers
    assert hedger.latency == 1.0


def test_a_call_cancelled_just_as_its_request_ends_still_tells_the_endpoint():
    hedger, endpoints = Hedger(hedge_after=1.0), Endpoints(gated={"a", "b"})
    warm(hedger, 0.001)

    async def run():
        call = asyncio.ensure_future(hedged(hedger, endpoints))
        await until(lambda: endpoints.sent == ["a", "b"])
        endpoints.on_return = lambda endpoint: call.cancel()  # cancelled in the step its request ends
        endpoints.gates["a"].set()
        await asyncio.gather(call, return_exceptions=True)
        return call

    assert asyncio.run(run()).cancelled()
    assert endpoints.dropped == [("a", 200)] and endpoints.cancelled == ["b"] and hedger.in_flight == 0


def test_a_losing_copys_error_reply_reaches_its_endpoints_breaker(judge_server, steady_hedge_floor):
    held = {"on": False}
    slow = judge_server(script=lambda request, index: Reply(content="slow", hold=held["on"]))
    failing = judge_server(
        script=lambda request, index: Reply(status=500, body=b"oops") if held["on"] else Reply(content="ok")
    )
    settings = {"base_url": [slow.base_url, failing.base_url], "model": "m", "hedge_after": 3.0}
    judge = OpenAIJudge(JudgeConfig(**settings), concurrency=8)

    async def run():
        for _ in range(100):
            await judge.complete(MESSAGES)
        held["on"] = True
        while judge.pool.choose().endpoint is not judge.pool.endpoints[0]:
            await judge.complete(MESSAGES)  # (may fail over; until the held server is next in line)
        call = asyncio.ensure_future(judge.complete(MESSAGES))
        await until(lambda: judge.hedger.sent >= 1 and judge.pool.endpoints[1].in_flight == 0)
        errors = list(judge.pool.endpoints[1].replies).count(True)
        slow.release()
        reply = await call
        await judge.close()
        return reply, errors

    reply, errors = asyncio.run(run())
    assert reply.text == "slow" and errors >= 1  # the copy's 500 was counted, not taken for a cancel


@pytest.mark.parametrize("first", ["copy", "request"])
def test_both_copies_answer_the_first_reply_is_the_reward_and_the_other_is_never_read(
    judge_server, steady_hedge_floor, tmp_path, first
):
    """A request held at its endpoint, and its copy held at the other; then both answer, with opposite verdicts,
    ``first`` the first. hedge.py's rule: the first reply wins, the other request is cancelled. The later
    verdict reaches neither the reward nor the judge cache, even once its endpoint has sent it."""
    from reward_fns.pairwise import compute_score
    from writing_rl.judge import SampleJudge
    from writing_rl.judge.cache import CachedJudge

    held = {"on": False}
    asked = judge_server(script=lambda request, index: Reply(content="A is better.\n[[A]]", hold=held["on"]))
    copied = judge_server(script=lambda request, index: Reply(content="B is better.\n[[B]]", hold=held["on"]))
    config = JudgeConfig(base_url=[asked.base_url, copied.base_url], model="m", hedge_after=3.0)
    judge = OpenAIJudge(config, concurrency=8)
    cache = CachedJudge.for_config(judge, config, tmp_path / "cache.sqlite")
    winner, loser = (copied, asked) if first == "copy" else (asked, copied)
    ground_truth = {"prompt": "Write a haiku.", "target": ["a reference"], "criteria": None, "id": 1}

    async def reward() -> float:
        result = await compute_score("writing", "a response", ground_truth, {}, judge=SampleJudge(cache),
                                     strategy="position-advantage")  # fmt: skip
        return result["score"]

    async def run():
        for i in range(100):  # the judge's usual latency (requests the cache never sees)
            await judge.complete([{"role": "user", "content": f"warm-up {i}"}])
        while judge.pool.choose().endpoint is not judge.pool.endpoints[0]:
            await judge.complete(MESSAGES)  # (until the held server is next in line)
        held["on"] = True
        call = asyncio.ensure_future(reward())
        await until(lambda: asked.in_flight == copied.in_flight == 1)  # the request and its copy, both held
        winner.release()
        await until(call.done)
        loser.release()  # its verdict is sent now, to a request cancelled
        await until(lambda: loser.in_flight == 0)
        requests = asked.count + copied.count
        again = await reward()  # answered by the cache
        assert asked.count + copied.count == requests and cache.stats.hits == 1
        await judge.close()
        return call.result(), again

    score, again = asyncio.run(run())
    assert len(cache) == 1 and judge.hedger.sent == 1
    cache.close()
    assert score == again == (0.0 if first == "copy" else 1.0)  # the response stands at A: [[A]] wins, [[B]] loses
