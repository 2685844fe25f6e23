"""Hedged requests (writing_rl/judge/hedge.py) pinned on a virtual clock: the percentile's window, its refresh
and its index; when copies go, how many, within which budget; which reply wins and what the others become.

The event loop's clock here only moves when nothing is ready to run, and then straight to the next timer: a
hedge delay passes in no wall time, and the time a call ends at is exact."""

from __future__ import annotations

import asyncio
import selectors

import pytest
from test_judge_hedge import Answer  # a reply with its status

from writing_rl.judge.hedge import LATENCY_WINDOW, MAX_COPIES, MIN_DELAY_S, MIN_REPLIES, REFRESH_EVERY, Hedger


class _AdvancingSelector(selectors.DefaultSelector):
    """Never blocks: a wait for the next timer moves the loop's clock to it instead."""

    loop: VirtualClockLoop

    def select(self, timeout=None):
        if timeout is None:
            raise RuntimeError("deadlock: nothing is ready and no timer is set")
        self.loop.now += timeout
        return super().select(0)


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self):
        selector = _AdvancingSelector()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0

    def time(self) -> float:
        return self.now


def run(coro):
    with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
        return runner.run(coro)


class Boom(Exception):
    pass


class Endpoints:
    """Requests by endpoint. One to an endpoint of ``gates`` waits for its event (never, unless the test sets
    it); ``status`` maps an endpoint to its answer's status (else 200), ``raises`` names those whose request
    raises Boom instead. Records when each request was sent (on the loop's clock), cancelled, dropped."""

    def __init__(self, gated=(), status=None, raises=()):
        self.gates = {name: asyncio.Event() for name in gated}
        self.status, self.raises = status or {}, set(raises)
        self.sent, self.cancelled, self.dropped = [], [], []

    def send(self, endpoint):
        self.sent.append((endpoint, asyncio.get_running_loop().time()))
        return self._exchange(endpoint)

    async def _exchange(self, endpoint):
        try:
            if endpoint in self.gates:
                await self.gates[endpoint].wait()
            await asyncio.sleep(0)
            if endpoint in self.raises:
                raise Boom(endpoint)
            return Answer(self.status.get(endpoint, 200))
        except asyncio.CancelledError:
            self.cancelled.append(endpoint)
            raise

    def drop(self, endpoint, answer):
        self.dropped.append((endpoint, answer.status))

    def to(self):
        return [endpoint for endpoint, _ in self.sent]


def warm(latency_s=1.0):
    """A hedger that has seen MIN_REPLIES replies of ``latency_s``: hedging after 1 x it (above the floor)."""
    hedger = Hedger(hedge_after=1.0)
    for _ in range(MIN_REPLIES):
        hedger.observe(latency_s)
    assert hedger.latency == latency_s
    return hedger


def post(hedger, endpoints, slots=10, others=("b", "c", "d", "e"), idle=lambda: False):
    queue = list(others)
    return hedger.post(endpoints.send, "a", lambda: queue.pop(0) if queue else None, endpoints.drop, slots, idle=idle)


# ---------------------------------------------------------------- the percentile


def test_the_percentile_is_the_reply_at_95_percent_of_the_way_through_the_sorted_window():
    hedger = Hedger(hedge_after=1.0)
    for n in range(MIN_REPLIES):
        hedger.observe(float(MIN_REPLIES - n))  # 100, 99, .., 1: sorted, index int(0.95 * 99) = 94 holds 95
    assert hedger.latency == 95.0


def test_the_window_holds_the_last_200_replies_only():
    hedger = Hedger(hedge_after=1.0)
    for _ in range(LATENCY_WINDOW):
        hedger.observe(5.0)  # a judge that was slow
    assert hedger.latency == 5.0
    for _ in range(LATENCY_WINDOW):
        hedger.observe(0.5)  # and is fast now: the slow replies have left the window
    assert hedger.latency == 0.5


def test_the_percentile_is_taken_at_100_replies_then_again_every_20():
    hedger = warm(1.0)
    for _ in range(REFRESH_EVERY - 1):
        hedger.observe(9.0)  # 19 slow of 119: above the 95th percentile already, but not refreshed yet
    assert hedger.latency == 1.0
    hedger.observe(9.0)  # the 20th since: recomputed
    assert hedger.latency == 9.0 and hedger.delay_s() == 9.0


def test_ten_slow_replies_after_the_first_reading_leave_it_as_it_was():
    hedger = warm(0.01)
    for _ in range(REFRESH_EVERY // 2):
        hedger.observe(5.0)  # 10 slow of 110 would move the percentile: only a refresh may take them in
    assert hedger.latency == 0.01 and hedger.delay_s() == MIN_DELAY_S


# ---------------------------------------------------------------- copies


def test_a_copy_goes_after_the_delay_and_its_answer_ends_the_call_at_once():
    hedger, endpoints = warm(1.0), Endpoints(gated={"a"})

    async def call():
        result = await post(hedger, endpoints)
        return result, asyncio.get_running_loop().time()

    (endpoint, answer), ended = run(call())
    assert (endpoint, answer) == ("b", Answer(200)) and endpoints.sent == [("a", 0.0), ("b", 1.0)]
    assert ended == 1.0  # the copy answered at once: the call does not wait out another delay
    assert endpoints.cancelled == ["a"] and hedger.sent == 1 and hedger.in_flight == 0


def test_a_request_gets_two_copies_at_most_one_delay_apart():
    hedger, endpoints = warm(1.0), Endpoints(gated={"a", "b", "c", "d"})

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints, slots=100))
        await asyncio.sleep(10.0)  # ten delays: every copy allowed has gone
        in_flight = hedger.in_flight
        endpoints.gates["a"].set()
        return await task, in_flight

    (endpoint, answer), in_flight = run(call())
    assert MAX_COPIES == 2 and endpoints.sent == [("a", 0.0), ("b", 1.0), ("c", 2.0)] and in_flight == 2
    assert (endpoint, answer) == ("a", Answer(200)) and sorted(endpoints.cancelled) == ["b", "c"]
    assert hedger.sent == 2 and hedger.in_flight == 0


@pytest.mark.parametrize("slots", [5, 10, 19])
def test_a_client_of_fewer_than_20_slots_has_one_copy_in_flight_at_a_time(slots):
    """A tenth of the concurrency limit, at least one: 5 slots still hedge, 19 hedge once at a time."""
    hedger, endpoints = warm(1.0), Endpoints(gated={"a", "b", "c"})

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints, slots=slots))
        await asyncio.sleep(10.0)
        sent = endpoints.to()
        endpoints.gates["a"].set()
        await task
        return sent

    assert run(call()) == ["a", "b"] and hedger.sent == 1 and hedger.in_flight == 0


@pytest.mark.parametrize(
    "idle, sent_at",
    [
        (lambda now: True, [0.0, 1.0, 2.0]),  # nobody waits for room: after the percentile itself
        (lambda now: False, [0.0, 4.0, 8.0]),  # requests wait for room: hedge_after times it
        (lambda now: now >= 2.5, [0.0, 3.0, 4.0]),  # idle from 2.5 s: seen at the next look, each second
        (lambda now: now < 1.5, [0.0, 1.0, 5.0]),  # idle at 1 s only: the second copy waits the busy delay
    ],
)
def test_a_copy_goes_after_the_percentile_while_the_client_is_idle_else_after_hedge_after_times_it(idle, sent_at):
    hedger, endpoints = Hedger(hedge_after=4.0), Endpoints(gated={"a", "b", "c"})
    for _ in range(MIN_REPLIES):
        hedger.observe(1.0)
    assert hedger.delay_s(idle=True) == 1.0 and hedger.delay_s() == 4.0

    async def call():
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(post(hedger, endpoints, slots=100, idle=lambda: idle(loop.time())))
        await asyncio.sleep(10.0)  # every copy allowed has gone
        endpoints.gates["a"].set()
        return await task

    assert run(call()) == ("a", Answer(200)) and endpoints.sent == list(zip("abc", sent_at))


def test_a_busy_clients_copy_goes_at_the_busy_delay_exactly_between_two_looks():
    """2.5 x the percentile: looked at after 1 s and 2 s (busy), then at 2.5 s, not at the third look."""
    hedger, endpoints = Hedger(hedge_after=2.5), Endpoints(gated={"a", "b"})
    for _ in range(MIN_REPLIES):
        hedger.observe(1.0)

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints, slots=100, others=("b",)))
        await asyncio.sleep(4.0)
        endpoints.gates["a"].set()
        return await task

    assert run(call()) == ("a", Answer(200)) and endpoints.sent == [("a", 0.0), ("b", 2.5)]


def test_the_idle_delay_keeps_the_floor():
    hedger = warm(0.01)
    assert hedger.delay_s(idle=True) == MIN_DELAY_S == hedger.delay_s()
    assert MIN_DELAY_S == 0.05  # a 50 ms judge's spike is hedged within two of its replies


def test_a_copy_held_back_by_the_budget_goes_a_delay_later_once_the_budget_frees():
    """10 slots: one copy in flight. The second call's copy waits for the first's to end, then goes at its next
    look (a delay later), and answers."""
    hedger, endpoints = warm(1.0), Endpoints(gated={"a", "b"})

    async def calls():
        first = asyncio.ensure_future(post(hedger, endpoints))
        second = asyncio.ensure_future(post(hedger, endpoints))
        await asyncio.sleep(1.5)  # the first call's copy is out; the second's was held back at 1.0
        endpoints.gates["b"].set()  # the copy answers: the budget frees
        ended = await first
        result = await second
        return ended, result, asyncio.get_running_loop().time()

    ended, result, at = run(calls())
    assert ended == ("b", Answer(200)) and result == ("b", Answer(200)) and at == 2.0
    assert endpoints.sent == [("a", 0.0), ("a", 0.0), ("b", 1.0), ("b", 2.0)] and hedger.in_flight == 0


def test_no_copy_goes_when_there_is_nowhere_to_send_it():
    hedger, endpoints = warm(1.0), Endpoints(gated={"a"})

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints, others=()))
        await asyncio.sleep(5.0)
        endpoints.gates["a"].set()
        return await task, asyncio.get_running_loop().time()

    assert run(call()) == (("a", Answer(200)), 5.0)
    assert endpoints.to() == ["a"] and hedger.sent == 0 and hedger.in_flight == 0


# ---------------------------------------------------------------- settling


def test_requests_ending_together_the_answer_wins_and_the_failure_is_dropped_at_its_endpoint():
    hedger, endpoints = warm(1.0), Endpoints(gated={"a", "b"}, status={"a": 503})

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints))
        await asyncio.sleep(1.5)  # the copy is out
        endpoints.gates["a"].set()
        endpoints.gates["b"].set()  # both end in the same step
        return await task

    assert run(call()) == ("b", Answer(200))
    assert endpoints.dropped == [("a", 503)] and endpoints.cancelled == [] and hedger.in_flight == 0


def test_every_request_failing_together_gives_one_failure_and_drops_the_other():
    hedger, endpoints = warm(1.0), Endpoints(gated={"a", "b"}, status={"a": 503, "b": 502})

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints))
        await asyncio.sleep(1.5)
        endpoints.gates["a"].set()
        endpoints.gates["b"].set()
        return await task

    endpoint, answer = run(call())
    assert {(endpoint, answer.status), *endpoints.dropped} == {("a", 503), ("b", 502)}
    assert len(endpoints.dropped) == 1 and endpoints.cancelled == [] and hedger.in_flight == 0


def test_a_request_that_raises_after_its_copy_went_cancels_the_copy_and_the_call_raises():
    hedger, endpoints = warm(1.0), Endpoints(gated={"a", "b"}, raises={"a"})

    async def call():
        task = asyncio.ensure_future(post(hedger, endpoints))
        await asyncio.sleep(1.5)
        endpoints.gates["a"].set()
        with pytest.raises(Boom):
            await task
        for _ in range(3):
            await asyncio.sleep(0)  # (the cancellation is delivered; the copy is still held at its gate)
        return list(endpoints.cancelled)

    assert run(call()) == ["b"]  # cancelled by the call, not only when the loop closes
    assert endpoints.to() == ["a", "b"] and endpoints.dropped == []
    assert hedger.in_flight == 0
