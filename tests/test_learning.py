"""A policy learns what the judge prefers: ``LEARN=1 bash scripts/tiny_train.sh METHOD`` (verl's real trainer on
the CPU backend, the stand-in judge with a taste, 20 steps), the taste measured on verl's own dump of the
rollouts and validations, never by the judge. A run whose rewards do not reach the policy the right way (a
sign flipped, rewards given to the wrong rollouts, an optimizer that does not move) fails these checks: the
learning check of ``scripts/tiny_results.py`` (the taste's value over the first and the last 3 steps, z >= 3)
and the direction of the measure. In CI the quickstart's training stage is the learning check (Writing-RL,
tests/test_quickstart.py); these runs are the release suite's (bench/learning.py runs them with several seeds
for the docs' figures), and scripts/mutations.py runs them for its breaks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer_runs import uses

pytestmark = pytest.mark.trainer


@pytest.fixture(scope="module")
def runs(trainer_runs_started):
    return trainer_runs_started


def learned(runs, key: str) -> tuple[dict, dict, Path]:
    """The run's taste figures (summary.json) and verl's tracker, after checking it finished and learned."""
    (output,), out = runs.get(key)
    assert output.startswith("rc=0\n") and "every step finished" in output, output[-3000:]
    taste = json.loads((out / "summary.json").read_text())["taste"]
    assert taste["learned"], f"{key}: {taste}"
    tracker = {}
    for line in (out / "metrics.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            tracker.setdefault(int(record["data"].get("training/global_step", record["step"])), {}).update(
                record["data"]
            )
    return taste, tracker, out


def validation_gain(taste: dict) -> float:
    """The measure on verl's validation after the last step minus before the first (greedy decoding)."""
    steps = sorted(taste["validation"], key=int)
    assert len(steps) == 2 and int(steps[0]) == 0, taste["validation"]
    return taste["validation"][steps[-1]] - taste["validation"][steps[0]]


@pytest.mark.release
@uses("brpo-learns")
def test_brpo_policy_learns_the_judges_taste_measured_apart_from_the_judge(runs):
    taste, tracker, out = learned(runs, "brpo-learns")
    assert taste["end"] > taste["start"] + 3, taste  # e's per rollout: about 15 at the start
    assert validation_gain(taste) > 3, taste["validation"]
    # the watch reached verl's tracker, per step the same figure as verl's dump of what it trained on
    for step, value in taste["measure"].items():
        assert tracker[int(step)]["watch/taste_mean"] == pytest.approx(value), step
    assert "val-aux/writing/watch/taste/mean@1" in tracker[0]
    assert (out / "reward.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.release
@uses("writing_rl-learns")
def test_writing_rl_policy_learns_and_its_curriculum_climbs(runs):
    taste, tracker, out = learned(runs, "writing_rl-learns")
    assert taste["end"] > taste["start"] + 3 and validation_gain(taste) > 3, taste
    levels = [
        tracker[step]["curriculum/level_mean"] for step in sorted(tracker) if "curriculum/level_mean" in tracker[step]
    ]
    assert levels[-1] > levels[0] + 1, levels
    summary = json.loads((out / "summary.json").read_text())
    assert min(summary["curriculum_levels"]) > 0, summary["curriculum_levels"]  # every prompt moved up


@pytest.mark.release
@pytest.mark.parametrize(
    "key",
    [
        pytest.param(k, marks=uses(k))
        for k in (
            "grrm_mt_grpo-learns",
            "rubric-learns",
            "tournament-learns",
            "term-learns",
            "writing_rl-legacy-learns",
            "brpo-fully-async-learns",
        )
    ],
)
def test_every_method_and_trainer_learns(runs, key):
    """GRRM's ranking scores, the rubric's criteria, the length term alone (the judge indifferent: every verdict
    a tie), Writing-RL under the legacy trainer and BRPO under fully-async (rollouts apart from training)."""
    taste, _, _ = learned(runs, key)
    toward = -1 if key == "term-learns" else 1  # the term: fewer words, into its band of 3-9
    assert toward * (taste["end"] - taste["start"]) > 2, taste


@pytest.mark.release
@uses("control-learns")
def test_the_taste_reversed_moves_the_measure_the_other_way(runs):
    taste, _, _ = learned(runs, "control-learns")  # learned: the judge's way, fewer e's
    assert taste["end"] < taste["start"] - 3 and validation_gain(taste) < -3, taste
