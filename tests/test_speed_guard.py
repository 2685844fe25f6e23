"""The release suite's speed guard (bench/guard.py): the group path's benchmarks in streaming and batch
mode and the fault run, each ratio against its target (docs/benchmarks.md), failing when a ratio falls
below its target in two runs out of three. It runs once the suite's trainer runs have finished, so that
the benchmarks have the machine to themselves; about 15-25 minutes on 2 cores."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO_DIR, TRAINER_RUNS

GUARD_TIMEOUT_S = 60 * 60


@pytest.mark.release
def test_the_group_path_keeps_its_speed_targets(request, tmp_path):
    runs = request.config.stash.get(TRAINER_RUNS, None)
    if runs is not None:
        runs.wait_all()
    guard = subprocess.run(
        [sys.executable, "bench/guard.py", "--out", str(tmp_path / "guard")],
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
        timeout=GUARD_TIMEOUT_S,
    )
    print(guard.stdout)
    assert guard.returncode == 0, f"{guard.stdout[-6000:]}\n{guard.stderr[-3000:]}"
    assert "faults/clean" in guard.stdout and "writing_rl8/lean/burst" in guard.stdout, guard.stdout
