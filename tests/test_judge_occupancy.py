"""How busy the fault bench's judges were (bench/faults.py): the scripted judge's own counters (its slot-seconds
and the seconds requests waited for a slot), carried across a killed judge's restarts, and what the bench makes
of them (the judges' share of a step, and an estimate of what a condition could keep were the rest of the step as in
the clean runs)."""

import json
import math
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from judge_server import ScriptedJudgeServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import faults  # noqa: E402
from faults import Measured, Occupancy  # noqa: E402

LATENCY_S = 0.05


def post(base_url: str) -> int:
    body = json.dumps({"model": "scripted-judge", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as resp:
        return resp.status


def test_a_judge_counts_the_seconds_it_answered_and_the_seconds_a_request_waited_for_its_slot():
    with ScriptedJudgeServer(latency_s=LATENCY_S, capacity=1, hold_until_in_flight=2) as server:
        assert server.occupancy() == {"requests": 0, "busy_s": 0.0, "queued_s": 0.0, "capacity": 1}
        # (both in flight before either takes the slot: the server holds the first until the second comes)
        sent = [threading.Thread(target=post, args=(server.base_url,)) for _ in range(2)]
        for thread in sent:
            thread.start()
        for thread in sent:
            thread.join(60)
        with urllib.request.urlopen(server.base_url.replace("/v1", "/occupancy"), timeout=10) as resp:
            served = json.load(resp)
    assert served["requests"] == 2 and served["capacity"] == 1
    assert served["busy_s"] >= 2 * LATENCY_S * 0.9  # each held the one slot for its latency
    # The second waited for the first's slot; the first did not wait at all.
    assert LATENCY_S * 0.9 <= served["queued_s"] < served["busy_s"]


def test_a_judge_without_a_capacity_counts_its_answers_and_no_wait():
    with ScriptedJudgeServer(latency_s=LATENCY_S) as server:
        assert post(server.base_url) == 200
        occupancy = server.occupancy()
    assert occupancy["busy_s"] >= LATENCY_S * 0.9 and occupancy["queued_s"] == 0.0


def test_a_killed_judge_keeps_what_it_counted_and_counts_its_time_down(tmp_path):
    judge = faults.ControlledJudge(0, LATENCY_S, 4, str(tmp_path / "faults.json"))
    try:
        assert post(judge.base_url) == 200
        first = judge.occupancy()
        assert first.requests == 1 and first.busy_s >= LATENCY_S * 0.9 and first.down_s == 0.0
        judge.kill()
        down = judge.occupancy()  # (read while the process is gone)
        assert (down.requests, down.busy_s, down.queued_s) == (first.requests, first.busy_s, first.queued_s)
        assert down.down_s > 0.0
        judge.start()
        assert post(judge.base_url) == 200
        again = judge.occupancy()
        assert again.requests == 2 and again.busy_s >= first.busy_s + LATENCY_S * 0.9
        assert again.down_s >= down.down_s  # its time down ended at the restart
        assert judge.occupancy().down_s == again.down_s  # and stays what it was while the judge is up
    finally:
        judge.kill()


def test_a_judge_is_down_until_it_serves_again_and_killed_even_when_its_counters_cannot_be_read(tmp_path):
    judge = faults.ControlledJudge(0, LATENCY_S, 4, str(tmp_path / "faults.json"))
    process = judge.proc
    try:
        judge.kill()
        began = time.monotonic()
        judge.start()  # a new process: its start-up (seconds on 2 cores) is time down
        started = time.monotonic() - began
        assert judge.occupancy().down_s >= 0.9 * started
        assert post(judge.base_url) == 200
        process = judge.proc

        def unreadable() -> Occupancy:
            raise ConnectionRefusedError("the judge does not answer")

        judge._occupancy = unreadable
        judge.kill()
        assert process.poll() is not None and judge.lost_reads == 1
        del judge._occupancy
        assert judge.occupancy().requests == 0  # the answered request went with the process, not counted
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def measured(samples: int, steps: list[float], busy_s: float, slot_s: float) -> Measured:
    m = Measured("x", "batch", step_s=steps, samples=samples)
    m.judge_busy_s, m.judge_slot_s, m.judge_wall_s = busy_s, slot_s, sum(steps)
    return m


def test_the_judges_part_of_a_sample_is_their_work_packed_on_the_slots_they_had_up():
    # 2 s of steps, 100 slots up on average (200 slot-seconds), 50 slot-seconds of work for 500 samples:
    # packed, the judges needed 0.5 s, 1 ms per sample.
    m = measured(500, [1.5, 0.5], busy_s=50.0, slot_s=200.0)
    assert m.judge_s_per_sample == pytest.approx(0.001)
    m.judge_wall_s = 4.0  # read over 4 s of wall clock (the steps and what ran between them): 50 slots up
    assert m.judge_s_per_sample == pytest.approx(0.002)
    assert math.isnan(measured(0, [], 1.0, 1.0).judge_s_per_sample)
    assert math.isnan(measured(10, [1.0], 1.0, 0.0).judge_s_per_sample)


def test_the_judges_measured_over_a_condition_count_only_the_slots_of_a_judge_while_it_was_up():
    m = Measured("kill", "streaming")
    before = [Occupancy(10, 1.0, 0.5, 0.0), Occupancy(20, 2.0, 0.0, 3.0)]
    after = [Occupancy(110, 6.0, 1.5, 0.0), Occupancy(70, 4.0, 0.25, 7.0)]  # the second down 4 of the 10 s
    m.measure_judges(before, after, capacity=8, seconds=10.0)
    assert (m.judge_requests, m.judge_busy_s, m.judge_queued_s) == (150, 7.0, 1.25)
    assert m.judge_slot_s == 8 * 10.0 + 8 * 6.0 and m.judge_wall_s == 10.0
    m.measure_judges([Occupancy(down_s=0.0)], [Occupancy(down_s=10.5)], capacity=8, seconds=10.0)
    assert m.judge_slot_s == 128.0  # down a little longer than the reads were apart (their own time): no slot
    assert m.judge_wall_s == 20.0
    with pytest.raises(ValueError):
        m.measure_judges([Occupancy()], [Occupancy(), Occupancy()], capacity=8, seconds=1.0)


def test_a_row_says_how_busy_the_judges_were_and_what_the_condition_could_keep_with_a_clean_rest():
    # Clean: 100 samples/s, 10 ms a sample, 2 ms of it the judges'. The condition's judges need 6 ms a sample:
    # with the rest (8 ms) as in the clean runs, a sample takes 14 ms: 10 / 14 of the clean throughput at most.
    m = measured(1000, [4.0, 6.0], busy_s=30.0, slot_s=50.0)
    m.judge_queued_s, m.judge_requests = 2.0, 1000
    row = m.row(clean=100.0, clean_judge_s=0.002)
    assert m.judge_s_per_sample == pytest.approx(0.006)
    assert row["judge_ceiling"] == pytest.approx(10 / 14)
    assert row["judge_slots_up"] == pytest.approx(5.0)
    assert row["judge_busy"] == pytest.approx(0.6)
    assert row["judge_queue_ms"] == pytest.approx(2.0)
    assert row["vs_clean"] == pytest.approx(1.0)
    # Clean runs whose judges' part was all of a sample (or more, the machine drifting): no rest, no estimate.
    assert math.isnan(m.row(clean=100.0, clean_judge_s=0.01)["judge_ceiling"])
    bare = Measured("x", "batch").row(clean=0.0)
    assert math.isnan(bare["judge_ceiling"]) and math.isnan(bare["judge_busy"]) and bare["judge_queue_ms"] == 0.0
    assert math.isnan(bare["judge_slots_up"])


def test_the_table_shows_the_judges_columns():
    m = measured(1000, [4.0, 6.0], busy_s=30.0, slot_s=50.0)
    table = faults.markdown({"rows": [m.row(100.0, 0.002)]})
    header, _, line = table.splitlines()
    assert header.endswith("| judges busy | wait for a judge's slot ms | judge ceiling (est.) |")
    assert line.endswith("| 60% | 0 | 0.71× |")
