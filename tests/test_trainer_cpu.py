"""verl's real trainer (``python -m verl.trainer.main_ppo``, v1 trainer unless a preset says otherwise) around
every method, on the CPU backend, through the script a user runs: ``scripts/tiny_train.sh``.

Each test is one or two whole training runs (about a minute each on 2 cores): marked ``trainer``, so a
developer can leave them out with ``-m "not trainer"``. What they read back is what verl wrote: its file
tracker (metrics.jsonl), its dump of each step's rollouts and scores (rollouts/<step>.jsonl) and its
checkpoints, against what our reward managers returned (the sample log, ``samples/``).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from writing_rl.reward_loop.curriculum.log import read_state
from writing_rl.reward_loop.sample_log import read_sample_logs

from conftest import REPO_DIR

pytestmark = pytest.mark.trainer

PER_STEP = 16  # tiny_train.py: 4 prompts x 4 rollouts
JUDGE_KEYS = ("judge/error_rate", "judge/parse_error_rate", "judge/calls_total", "judge/latency_p50_s")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """The tiny model and tokenizer, built by the first run and reused by the others."""
    return tmp_path_factory.mktemp("tiny-cache")


def tiny_train(method: str, out: Path, cache: Path, *overrides: str, steps: int = 2, **env) -> str:
    """Runs scripts/tiny_train.sh; returns its output (stdout + stderr)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("JUDGE_BASE_URL", "JUDGE_MODEL", "GENRM", "TRAINER")}
    environ.update(SKIP_VENV="1", STEPS=str(steps), OUT=str(out), CACHE_DIR=str(cache), **env)
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ['PATH']}"
    # A session of its own: a run past its deadline is stopped with everything it started (Ray included).
    process = subprocess.Popen(
        ["bash", "scripts/tiny_train.sh", method, *overrides],
        cwd=REPO_DIR,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        pytest.fail(f"tiny_train.sh {method} ran past 900 s:\n{output[-3000:]}")
    return f"rc={process.returncode}\n{output}"


def metrics(out: Path) -> dict[int, dict]:
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return {json.loads(line)["step"]: json.loads(line)["data"] for line in lines if line.strip()}


def dumped(out: Path, step: int) -> list[dict]:
    return [json.loads(line) for line in (out / "rollouts" / f"{step}.jsonl").read_text().splitlines()]


def ours_by_step(out: Path, steps: list[int]) -> dict[int, list[dict]]:
    """What our managers returned, split into steps: the v1 sync trainer scores all of a step's rollouts
    before the next step generates, so the log in time order is the steps in order."""
    records = read_sample_logs(out / "samples")
    assert len(records) == PER_STEP * len(steps), f"{len(records)} rewards logged for steps {steps}"
    return {step: records[i * PER_STEP : (i + 1) * PER_STEP] for i, step in enumerate(steps)}


def assert_verl_trained_on_our_rewards(out: Path, steps: list[int]) -> dict[int, list[dict]]:
    logged = metrics(out)
    assert sorted(logged) == steps
    ours = ours_by_step(out, steps)
    for step in steps:
        rewards = [record["reward"] for record in ours[step]]
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(rewards), abs=1e-5)
        assert sorted(row["score"] for row in dumped(out, step)) == pytest.approx(sorted(rewards), abs=1e-5)
        for key in JUDGE_KEYS:
            assert key in logged[step], f"step {step}: no {key} in verl's metrics"
        assert logged[step]["actor/grad_norm"] > 0  # rewards varied within groups: the policy got a gradient
    return ours


def finished(output: str) -> bool:
    return output.startswith("rc=0\n") and "every step finished" in output


@pytest.mark.parametrize("method", ["brpo", "grrm_mt_grpo", "rubric"])
def test_a_judged_method_trains_on_exactly_the_rewards_our_manager_returned(method, tmp_path, cache):
    out = tmp_path / method
    output = tiny_train(method, out, cache, "reward.reward_kwargs.terms.repetition.weight=0.5")
    assert finished(output), output[-3000:]
    ours = assert_verl_trained_on_our_rewards(out, [1, 2])
    logged = metrics(out)
    for step in (1, 2):
        assert "reward_terms/repetition_mean" in logged[step]
        assert all("term/repetition" in record for record in ours[step])
        assert logged[step]["judge/error_rate"] == 0 and logged[step]["judge/parse_error_rate"] == 0
    if method == "brpo":  # +1 beat the bootstrapped sibling, -1 lost to it, 0 the sibling itself or a tie
        methods = {round(r["reward"] - 0.5 * r["term/repetition"], 6) for s in ours.values() for r in s}
        assert methods <= {-1.0, 0.0, 1.0} and len(methods) > 1
    assert (out / "reward.png").read_bytes().startswith(b"\x89PNG")


def test_writing_rl_advances_its_curriculum_and_a_resumed_run_starts_from_the_saved_levels(tmp_path, cache):
    out = tmp_path / "writing_rl"
    output = tiny_train("writing_rl", out, cache, steps=2)
    assert finished(output), output[-3000:]
    assert_verl_trained_on_our_rewards(out, [1, 2])
    assert (out / "checkpoints" / "global_step_2").is_dir()
    saved = read_state(out / "checkpoints" / "curriculum").table.as_dict()
    assert any(level > 0 for level in saved.values()), f"no prompt moved to a harder reference: {saved}"

    output = tiny_train("writing_rl", out, cache, steps=3)  # same OUT: verl resumes from global_step_2
    assert finished(output), output[-3000:]
    assert sorted(metrics(out)) == [3]
    rows = pq.read_table(out / "data" / "train.parquet").to_pylist()
    row_id = {
        row["reward_model"]["ground_truth"]["prompt"]: str(row["reward_model"]["ground_truth"]["id"]) for row in rows
    }
    step3 = read_sample_logs(out / "samples")[2 * PER_STEP :]
    assert len(step3) == PER_STEP
    for record in step3:
        # Each rollout of step 3 was judged against at least the reference its prompt had reached in run 1.
        assert record["reference_level"] >= saved.get(row_id[record["prompt"]], 0)
    resumed = read_state(out / "checkpoints" / "curriculum").table.as_dict()
    assert all(resumed[key] >= level for key, level in saved.items())
    assert any(record["reference_level"] > 0 for record in step3) == any(saved.values())


@pytest.mark.parametrize("method", ["grrm_rlvr", "genrm_pairwise_rl"])
def test_a_genrm_training_run_scores_each_rollout_with_the_rule_based_reward(method, tmp_path, cache):
    from omegaconf import OmegaConf
    from verl.utils.import_utils import load_extern_object

    out = tmp_path / method
    output = tiny_train(method, out, cache)
    assert finished(output), output[-3000:]
    logged = metrics(out)
    assert sorted(logged) == [1, 2]
    module = {"grrm_rlvr": "reward_fns.ranking_accuracy", "genrm_pairwise_rl": "reward_fns.preference"}[method]
    compute_score = load_extern_object(module_path=f"pkg://{module}", object_name="compute_score")
    overlay = OmegaConf.load(REPO_DIR / "hydra_configs" / f"{method}.yaml")
    kwargs = OmegaConf.to_container(overlay.reward.custom_reward_function.reward_kwargs)
    for step in (1, 2):
        rows = dumped(out, step)
        assert len(rows) == PER_STEP
        for row in rows:  # what verl paid each rollout is what our reward fn says of its text
            score = compute_score(data_source=None, solution_str=row["output"], ground_truth=row["gts"], **kwargs)
            assert row["score"] == pytest.approx(score if isinstance(score, float) else score["score"], abs=1e-5)
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(r["score"] for r in rows), abs=1e-5)


@pytest.mark.parametrize(("method", "preset"), [("brpo", "standalone"), ("grrm_mt_grpo", "colocated")])
def test_a_genrm_preset_serves_the_tiny_genrm_on_the_cpu_rollout(method, preset, tmp_path, cache):
    """+genrm=standalone runs under the v1 trainer, +genrm=colocated under the legacy one (its preset)."""
    out = tmp_path / f"{method}-{preset}"
    output = tiny_train(method, out, cache, GENRM=preset)
    assert finished(output), output[-3000:]
    logged = metrics(out)
    assert sorted(logged) == [1, 2]
    for step, records in ours_by_step(out, [1, 2]).items():
        rewards = [record["reward"] for record in records]
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(rewards), abs=1e-5)
        # Every call reached the GenRM verl hosts and was answered (an untrained model: its replies are
        # unreadable, each paid the method's loss, never a silent reward).
        assert sum(record["judge_calls"] for record in records) > 0
        assert sum(record["judge_tokens"] for record in records) > 0
        assert all(record["judge_error"] == 0 for record in records)
        assert all(record["parse_error"] == 0 or record["reward"] <= 0 for record in records)


def with_a_dead_judge(out: Path, cache: Path, judge_server, *overrides: str) -> str:
    """Writing-RL against a judge that answers every call with a 500 (one retry each)."""
    from judge_server import Reply

    server = judge_server(script=lambda request, index: Reply(status=500, content=None, body=b'{"error": {}}'))
    retries = "reward.reward_kwargs.judge.max_retries=1"
    return tiny_train("writing_rl", out, cache, retries, *overrides, JUDGE_BASE_URL=server.base_url, JUDGE_MODEL="m")


def test_a_judge_that_fails_every_call_is_paid_a_loss_and_the_run_goes_on(tmp_path, cache, judge_server):
    out = tmp_path / "down-loss"
    output = with_a_dead_judge(out, cache, judge_server, "reward.reward_kwargs.max_judge_error_rate=1.0")
    assert finished(output), output[-3000:]
    logged = metrics(out)
    records = read_sample_logs(out / "samples")
    assert len(records) == 2 * PER_STEP
    assert all(record["judge_error"] == 1 and record["reward"] == 0.0 for record in records)  # pairwise loss
    for step in (1, 2):
        assert logged[step]["judge/error_rate"] == 1.0 and logged[step]["critic/score/mean"] == 0.0


def test_a_judge_that_fails_every_call_stops_the_run_past_the_error_rate(tmp_path, cache, judge_server):
    out = tmp_path / "down-stop"
    output = with_a_dead_judge(out, cache, judge_server, "reward.reward_kwargs.failure_min_samples=8")
    assert not output.startswith("rc=0\n")
    log = (out / "train.log").read_text(errors="replace")
    assert "above reward.reward_kwargs.max_judge_error_rate=0.1" in log, output[-3000:]
    assert "RewardFailedError" in log and "could not be scored" in output
    # No step trained on the part of its batch that was scored before the guard stopped the rest.
    assert not (out / "metrics.jsonl").exists() or metrics(out) == {}
