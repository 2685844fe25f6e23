"""A short run of bench/faults.py (each fault type alone, then seeded mixes) in streaming and batch mode through
verl's own reward workers. No timing assertion: every condition finishes steps, the faults injected are counted
where they must be, and no reward is silent."""

import sys
import threading
from pathlib import Path

import pytest
from curriculum_helpers import scheduler_alive

from waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

HANG_DEADLINE_S = 900.0  # bounds only a run that hangs (it takes about a minute on 2 cores)


def test_each_fault_alone_and_a_seeded_mix_finish_steps_count_their_failures_and_pay_no_silent_reward(ray_cluster):
    import faults

    assert wait_until(lambda: not scheduler_alive())  # another test's scheduler goes with its workers
    outcome = {}

    def run() -> None:
        try:
            outcome["result"] = faults.run_faults(
                seconds=1.0,
                prompts=4,
                mixes=1,
                modes=("streaming", "batch"),
                types=("cut", "kill"),
                kill_every_s=0.4,
                down_s=0.3,
                log=lambda line: None,
            )
        except BaseException as exc:  # noqa: BLE001 (raised again in the test's thread)
            outcome["error"] = exc

    running = threading.Thread(target=run, daemon=True)
    running.start()
    running.join(HANG_DEADLINE_S)
    assert not running.is_alive(), "the fault benchmark hung"
    if "error" in outcome:
        raise outcome["error"]
    result = outcome["result"]
    rows = {(r["mode"], r["condition"]): r for r in result["rows"]}
    names = ["clean", "cut", "cut x2", "kill", "kill x2", "the mix", "mix 0"]
    assert sorted(rows) == sorted((mode, name) for mode in ("streaming", "batch") for name in names)
    assert all(r["steps"] >= 1 and r["samples_per_s"] > 0 for r in rows.values())
    for mode in ("streaming", "batch"):
        cut = [rows[mode, name]["failures"].get("parse_error", 0) for name in ("cut", "cut x2")]
        assert sum(cut) > 0  # 3% then 6% of replies cut, each counted (about 15 expected over both)
        assert not rows[mode, "clean"]["failures"]  # every clean run around the conditions, pooled
        assert rows[mode, "clean"]["requests_per_sample"] >= 1.0
        assert all(rows[mode, name]["kills"] >= 1 for name in ("kill", "kill x2", "the mix", "mix 0"))
        assert rows[mode, "cut"]["kills"] == 0
        # The judges' counters, read over each condition's measured steps: both judges' 64 slots up in the clean
        # runs, fewer while the second is down; every condition's judges answered something.
        assert rows[mode, "clean"]["judge_slots_up"] == pytest.approx(128)
        assert all(rows[mode, name]["judge_slots_up"] < 128 for name in ("kill", "kill x2", "the mix", "mix 0"))
        assert all(0 < rows[mode, name]["judge_busy"] <= 1 for name in names)
        assert rows[mode, "clean"]["judge_ceiling"] == pytest.approx(1.0)  # the clean runs against themselves
    assert result["silent"] == 0
    trace = result["rss_trace"]  # the actors' RSS after each condition
    assert [label for label, _ in trace] == ["start"] + [f"{m} {n}" for m in ("streaming", "batch") for n in names[1:]]
    assert any(name.startswith("worker") for name in trace[0][1]) and set(result["rss_growth"]) == set(trace[0][1])
    assert set(result["worst_mix"]) == {"streaming", "batch"} and set(result["costliest"]) == {"streaming", "batch"}
