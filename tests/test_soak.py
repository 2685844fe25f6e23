"""A short soak (bench/soak.py) through verl's own reward workers in streaming mode: training-like steps of
Writing-RL with the curriculum against two chaos judges, one killed and restarted. No timing assertion:
every sample comes back, every fault that changed a reward is a counted failure, the run never stops."""

import sys
from pathlib import Path

from curriculum_helpers import scheduler_alive

from waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))


def test_a_short_soak_against_chaos_judges_loses_nothing_and_pays_no_silent_reward(ray_cluster):
    from soak import run_soak

    assert wait_until(lambda: not scheduler_alive())  # another test's scheduler goes with its workers
    lines = []
    result = run_soak(
        minutes=3,
        clean_minutes=1,
        minute_s=4.0,  # a "minute" of the report: 4 s here
        prompts=8,
        kill_every_s=5.0,
        down_s=2.0,
        log=lines.append,
    )
    minutes = result["minutes"]
    assert [m["phase"] for m in minutes][0] == "clean" and minutes[-1]["phase"] == "chaos"
    assert all(m["samples"] > 0 for m in minutes)  # no minute without a finished step: nothing hung
    assert result["samples"] == result["steps"] * 8 * 8
    assert result["kills"] >= 1
    assert result["silent"] == 0  # every reward that differs from the clean verdict carries a failure
    assert result["failures"]["parse_error"] > 0  # the chaos judge's unreadable replies were counted
    assert sum(result["failures"].values()) < result["samples"]  # and most samples were judged
    assert len(lines) == len(minutes) and all("samples/s" in line for line in lines)
