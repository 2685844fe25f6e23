"""``judge/...`` in verl's tracker file under the trainers without a replay buffer, read from the runs CI already
makes (tests/trainer_runs.py): legacy (a GenRM colocated with the policy), fully-async and one-step-off, each
through our entry point (reward_loop/health/entry/), and the v1 trainer's (the tournament's run)."""

import json
import re
from pathlib import Path

import pytest

from trainer_runs import FULLY_ASYNC, ONE_STEP_OFF, uses

pytestmark = pytest.mark.trainer

LEGACY_COLOCATED = "grrm_mt_grpo-colocated"
V1 = "tournament"  # the v1 trainer, verl's default
PER_STEP = 16  # tiny_train.py: 4 prompts x 4 rollouts
JUDGE_KEYS = ("judge/samples_total", "judge/calls_total", "judge/error_rate", "judge/parse_error_rate")


@pytest.fixture(scope="module")
def runs(trainer_runs_started):
    return trainer_runs_started


def training_records(out: Path) -> list[tuple[int, dict]]:
    """verl's tracker records of training steps (not validation's, nor fully-async's rollouter timings)."""
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [(record["step"], record["data"]) for record in records if "critic/score/mean" in record["data"]]


@pytest.mark.parametrize(
    "key", [pytest.param(k, marks=uses(k)) for k in (LEGACY_COLOCATED, FULLY_ASYNC, ONE_STEP_OFF, V1)]
)
def test_every_trainer_step_has_its_judge_metrics_in_the_tracker_under_its_own_step(key, runs):
    (output,), out = runs.get(key)
    assert output.startswith("rc=0\n"), output[-3000:]
    records = training_records(out)
    # One record per step, filed under it (fully-async's trainer files a step under the next one: ours does not).
    assert [(step, int(data["training/global_step"])) for step, data in records] == [(1, 1), (2, 2)], records
    for step, data in records:
        missing = [name for name in JUDGE_KEYS if name not in data]
        assert not missing, f"{key} step {step}: no {missing} in verl's tracker"
        assert data["judge/samples_total"] == PER_STEP
        assert data["judge/calls_total"] > 0
    # tiny_train's progress: each step once; its table: the judge's columns.
    assert re.findall(r"step (\d+) finished", output) == ["1", "2"], output[-3000:]
    table = output.split("verl's metrics per step", 1)[1]
    assert "judge err" in table and "parse err" in table
