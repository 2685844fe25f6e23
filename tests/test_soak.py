"""A short soak (bench/soak.py) through verl's own reward workers in streaming mode: training-like steps of
Writing-RL with the curriculum against two chaos judges, one killed and restarted. No timing assertion:
the soak ends (a step that never comes back fails the test at a generous deadline instead of stalling the
suite), every reward that differs from the judge's clean verdict carries a counted failure, the run never
stops."""

import sys
import threading
from pathlib import Path

from curriculum_helpers import scheduler_alive

from waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

# The whole soak takes about a minute on 2 cores; this bounds only a soak that hangs.
HANG_DEADLINE_S = 900.0


def test_a_short_soak_against_chaos_judges_loses_nothing_and_pays_no_silent_reward(ray_cluster, monkeypatch):
    import soak

    assert wait_until(lambda: not scheduler_alive())  # another test's scheduler goes with its workers
    # The silent-reward check, independent of the level each sample reports: no prompt comes back (a pool
    # far larger than the soak's prompts), so every rollout is judged against its prompt's easiest reference.
    clean_reward, levels = soak.clean_reward, []

    def against_the_first_reference(text: str, prompt_id: int, level: int) -> float:
        levels.append(level)
        return clean_reward(text, prompt_id, 0)

    monkeypatch.setattr(soak, "clean_reward", against_the_first_reference)
    lines, outcome = [], {}

    def run() -> None:
        try:
            outcome["result"] = soak.run_soak(
                minutes=3,
                clean_minutes=1,
                minute_s=4.0,  # a "minute" of the report: 4 s here
                prompts=8,
                prompt_pool=10**6,
                kill_every_s=5.0,
                down_s=2.0,
                log=lines.append,
            )
        except BaseException as exc:  # noqa: BLE001 (raised again in the test's thread)
            outcome["error"] = exc

    soaking = threading.Thread(target=run, daemon=True)
    soaking.start()
    soaking.join(HANG_DEADLINE_S)
    assert not soaking.is_alive(), f"the soak hung: {len(lines)} minutes reported, the last {lines[-1:]}"
    if "error" in outcome:
        raise outcome["error"]
    result = outcome["result"]
    minutes = result["minutes"]
    assert [m["phase"] for m in minutes][0] == "clean" and minutes[-1]["phase"] == "chaos"
    assert result["kills"] >= 1
    assert len(levels) == result["samples"] > 0 and set(levels) == {0}
    assert result["silent"] == 0  # every reward that differs from the clean verdict carries a failure
    assert result["failures"]["parse_error"] > 0  # the chaos judge's unreadable replies were counted
    assert sum(result["failures"].values()) < result["samples"]  # and most samples were judged
    assert len(lines) == len(minutes) and all("samples/s" in line for line in lines)
    # where each step waited: when half, 95% and the last of its samples were back, and what the last one met
    tails = [tail for m in minutes for tail in m["tails"]]
    assert len(tails) == result["steps"] and all(0 < t["p50_s"] <= t["p95_s"] <= t["last_s"] for t in tails)
    assert all("half back at" in line for line in lines)
