"""bench/learning.py's runs get their case's judge: the taste, the judge's own taste and the share of flipped
verdicts reach ``tiny_train.sh``, and whatever the calling shell held for them does not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from learning import CASES, UNWANTED, run_env  # noqa: E402

STALE = {name: "stale" for name in UNWANTED} | {"PATH": "/usr/bin", "HOME": "/home/me"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_reaches_tiny_train_with_its_own_judge_and_nothing_the_shell_held(name, tmp_path):
    case = CASES[name]
    env = run_env(case, "v1-sync", 7, tmp_path, STALE)
    assert env["TASTE"] == case.taste and env["LEARN"] == "1" and env["SEED"] == "7"
    assert env.get("JUDGE_TASTE") == (case.judge_taste or None)
    assert env.get("JUDGE_FLIP") == (str(case.flip) if case.flip else None)
    assert env["OUT"] == str(tmp_path) and env["HOME"] == "/home/me" and env["PATH"].endswith("/usr/bin")
    assert not {key for key, value in env.items() if value == "stale"}


def test_the_noisy_judge_flips_and_the_term_case_judge_is_indifferent(tmp_path):
    assert run_env(CASES["noisy"], "v1-sync", 1, tmp_path, STALE)["JUDGE_FLIP"] == "0.2"
    assert run_env(CASES["term"], "v1-sync", 1, tmp_path, STALE)["JUDGE_TASTE"] == "none"
    assert run_env(CASES["brpo"], "fully-async", 1, tmp_path, STALE)["TRAINER"] == "fully-async"
    assert "TRAINER" not in run_env(CASES["brpo"], "v1-sync", 1, tmp_path, STALE)
