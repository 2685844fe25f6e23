"""The adaptive concurrency limit (writing_rl/judge/limiter.py) pinned rule by rule: the latency test that
stops growth, the climb back to the peak and the peak's cut, the one-decrease-per-round rules (epoch, the
judge's latency, a source refusing everything), and the gate's tickets. No clock but the one injected."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from writing_rl.judge import limiter
from writing_rl.judge.limiter import AimdLimit, Gate, Room


def clean_round(limit: AimdLimit, latency_s: float = 1.0) -> None:
    """``limit.slots`` saturated replies: one clean round, so the limit grows once."""
    for _ in range(limit.slots):
        limit.on_success(latency_s)


# ---------------------------------------------------------------- latency


def test_before_any_reply_the_latency_holds():
    assert AimdLimit(max_limit=4).latency_holds()


def test_a_recent_latency_exactly_at_the_tolerance_still_holds():
    limit = AimdLimit(max_limit=8, latency_tolerance=1.0)
    limit.on_success(3.0)  # recent and long-run latency alike: 3 <= 1.0 x 3
    assert limit.latency_holds()


@pytest.mark.parametrize("latency_s", [0.25, 4.0, 30.0])
def test_a_steady_latency_holds_whatever_its_size(latency_s):
    """The tolerance is a factor on the long-run latency: a judge answering in 30 s as usual still grows."""
    limit = AimdLimit(max_limit=10, decrease=0.5)
    limit.on_overload(limit.epoch)
    clean_round(limit, latency_s)
    assert limit.latency_holds() and limit.slots == 6


def test_the_recent_latency_is_a_short_average_and_the_long_run_one_a_long_average():
    limit = AimdLimit(max_limit=8)
    limit.on_success(1.0)
    limit.on_success(11.0)
    assert limit.short_latency == pytest.approx(3.0) and limit.long_latency == pytest.approx(1.2)
    assert limit.latency_holds() is False  # 3.0 > 2 x 1.2


def test_one_slow_reply_among_steady_ones_does_not_stop_the_growth():
    limit = AimdLimit(max_limit=10, decrease=0.5)
    for _ in range(50):
        limit.on_success(1.0)
    limit.on_overload(limit.epoch)  # 5 slots
    limit.on_success(4.0)  # the short average moves a fifth of the way: 1.6 <= 2 x 1.06
    assert limit.latency_holds()
    for _ in range(4):
        limit.on_success(1.0)
    assert limit.slots == 6  # the slow reply counted in the clean round


# ---------------------------------------------------------------- the climb back


def test_the_climb_back_takes_half_the_distance_to_the_peak_when_that_is_under_a_quarter():
    limit = AimdLimit(max_limit=20, decrease=0.8)
    limit.on_overload(limit.epoch)
    assert limit.limit == 16.0 and limit.peak == 20.0
    clean_round(limit)
    assert limit.limit == 18.0  # half of 4, not the quarter of 16


def test_the_climb_back_takes_a_quarter_of_the_limit_when_the_peak_is_far():
    limit = AimdLimit(max_limit=64, decrease=0.5)
    limit.on_overload(limit.epoch)
    assert limit.limit == 32.0
    clean_round(limit)
    assert limit.limit == 40.0 and limit.slots == 40  # a quarter of 32, not half of 32


def test_refused_on_the_way_back_up_the_peak_is_cut_halfway_and_the_climb_aims_at_it():
    limit = AimdLimit(max_limit=100, decrease=0.5)
    limit.on_overload(limit.epoch)  # 100 -> 50, peak 100
    clean_round(limit)  # +12.5: 62.5
    assert limit.limit == 62.5 and limit.grown
    assert limit.on_overload(limit.epoch)
    assert limit.peak == 81.25 and limit.limit == 31.25 and not limit.grown
    assert limit.on_overload(limit.epoch)  # refused again before growing: the peak stays
    assert limit.peak == 81.25 and limit.limit == 15.625


def test_a_decrease_without_growth_since_the_last_keeps_the_peak():
    limit = AimdLimit(max_limit=100, decrease=0.5)
    limit.on_overload(limit.epoch)
    limit.on_overload(limit.epoch)
    assert limit.peak == 100.0 and limit.limit == 25.0


# ---------------------------------------------------------------- one decrease per round


def test_each_decrease_starts_a_new_epoch_and_counts():
    limit = AimdLimit(max_limit=10)
    sent_first = limit.epoch
    assert limit.on_overload(sent_first)
    sent_second = limit.epoch
    assert limit.on_overload(sent_second)
    assert limit.decreases == 2 and limit.epoch > sent_second > sent_first
    assert not limit.on_overload(sent_second)  # sent before the last decrease: its round is paid for
    assert not limit.on_overload(sent_first)
    assert limit.decreases == 2 and limit.slots == 8


def test_a_signal_one_whole_latency_after_the_decrease_counts():
    limit = AimdLimit(max_limit=20)
    limit.on_success(1.0)  # the judge's usual latency: 1 s
    assert limit.on_overload(limit.epoch, now=100.0)
    assert limit.decreased_at == 100.0
    assert limit.on_overload(limit.epoch, now=101.0)  # not less than one latency later
    assert limit.decreases == 2


def test_a_source_refusing_everything_cuts_the_limit_once_until_it_answers_again():
    limit = AimdLimit(max_limit=20)
    assert limit.on_overload(limit.epoch, source="a") and limit.slots == 18
    assert limit.on_overload(limit.epoch, source="a") is False  # still refusing: already paid for
    assert limit.slots == 18 and limit.decreases == 1
    assert limit.on_overload(limit.epoch, source="b") and limit.slots == 16  # another source: its own signal
    limit.on_success(1.0, source="b")
    assert limit.on_overload(limit.epoch, source="a") is False  # b answering says nothing of a
    limit.on_success(1.0, source="a")  # a answered: its next refusal is news
    assert limit.on_overload(limit.epoch, source="a") and limit.slots == 14


def test_unnamed_signals_are_never_taken_for_a_refusing_source():
    limit = AimdLimit(max_limit=20)
    assert limit.on_overload(limit.epoch) and limit.on_overload(limit.epoch)
    assert limit.on_overload(limit.epoch, source="a") and limit.decreases == 3


# ---------------------------------------------------------------- the room and the gate


def test_a_ticket_is_saturated_when_it_takes_the_last_room_or_others_wait_in_either_line():
    async def scenario():
        room = Room(AimdLimit(max_limit=3))
        first = room.take()
        line = asyncio.get_running_loop().create_future()
        room.urgent.append(line)
        with_urgent = room.ticket()
        room.urgent.clear()
        room.waiters.append(line)
        with_waiter = room.ticket()
        room.waiters.clear()
        second, third = room.take(), room.take()
        return first, with_urgent, with_waiter, second, third

    first, with_urgent, with_waiter, second, third = asyncio.run(scenario())
    assert not first.saturated and not second.saturated and third.saturated  # the third took the last room
    assert with_urgent.saturated and with_waiter.saturated  # one room of three taken, but someone waits


@pytest.fixture
def clock(monkeypatch):
    """The gate's clock, set by the test."""
    now = SimpleNamespace(t=0.0)
    monkeypatch.setattr(limiter, "time", SimpleNamespace(monotonic=lambda: now.t))
    return now


def test_the_gate_passes_its_replies_latency_and_source_to_the_limit(clock):
    async def scenario():
        gate = Gate(AimdLimit(max_limit=10))
        ticket = await gate.acquire()
        gate.on_success(ticket, 2.5, source="a")
        assert gate.limit.short_latency == gate.limit.long_latency == 2.5
        clock.t = 100.0
        assert gate.on_overload(await gate.acquire(), source="a")  # 10 -> 9
        clock.t = 200.0
        assert not gate.on_overload(await gate.acquire(), source="a")  # a refuses still: ignored
        gate.on_success(await gate.acquire(), 2.5, source="a")
        clock.t = 300.0
        assert gate.on_overload(await gate.acquire(), source="a")  # a answered in between: counted
        return gate.limit

    limit = asyncio.run(scenario())
    assert limit.decreases == 2 and limit.slots == 8 and limit.decreased_at == 300.0


def test_the_gate_times_a_signal_by_its_clock(clock):
    async def scenario():
        gate = Gate(AimdLimit(max_limit=10))
        gate.on_success(await gate.acquire(), 1.0)  # the judge's latency: 1 s
        clock.t = 50.0
        assert gate.on_overload(await gate.acquire())
        clock.t = 50.5  # a request sent after the decrease, refused at once: the same burst
        assert not gate.on_overload(await gate.acquire())
        clock.t = 51.5
        assert gate.on_overload(await gate.acquire())
        return gate.limit

    limit = asyncio.run(scenario())
    assert limit.decreases == 2 and limit.decreased_at == 51.5
