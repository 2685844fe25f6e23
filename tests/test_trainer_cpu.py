"""verl's real trainer (``python -m verl.trainer.main_ppo``, v1 trainer unless a preset says otherwise) around
every method, on the CPU backend, through the script a user runs: ``scripts/tiny_train.sh``.

Each test reads one or two whole training runs (about a minute and a half each on 2 cores): marked ``trainer``,
so a developer can leave them out with ``-m "not trainer"``. The module starts every run when it starts, one
after another, and each test waits for its own. What the tests read back is what verl wrote: its file tracker (metrics.jsonl), its
dump of each step's rollouts and scores (rollouts/<step>.jsonl) and its checkpoints, against what our reward
managers returned (the sample log, ``samples/``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from writing_rl.reward_loop.curriculum.log import read_state
from writing_rl.reward_loop.sample_log import read_sample_logs

from conftest import REPO_DIR
from judge_server import Reply, ScriptedJudgeServer

pytestmark = pytest.mark.trainer

PER_STEP = 16  # tiny_train.py: 4 prompts x 4 rollouts
JUDGE_KEYS = ("judge/error_rate", "judge/parse_error_rate", "judge/calls_total", "judge/latency_p50_s")
# Runs at once. Two would save a third of the time (verl's start-up leaves a core idle), but two verl runs on
# one machine race for the free port each picks for torch.distributed (EADDRINUSE, seen once in 9 runs).
PARALLEL = 1
RUN_TIMEOUT_S = 900
TERM = ("reward.reward_kwargs.terms.repetition.weight=0.5",)
DEAD_JUDGE = "dead-judge"


@dataclass(frozen=True)
class Run:
    method: str
    overrides: tuple[str, ...] = ()
    genrm: str = ""
    steps: tuple[int, ...] = (2,)  # STEPS of each invocation, one after the other in one OUT (2, 3: a resume)


# The longest first, so that the two lanes end together.
RUNS = {
    "writing_rl": Run("writing_rl", steps=(2, 3)),
    "grrm_rlvr": Run("grrm_rlvr"),
    "brpo-standalone": Run("brpo", genrm="standalone"),
    "brpo": Run("brpo", TERM),
    "genrm_pairwise_rl": Run("genrm_pairwise_rl"),
    "grrm_mt_grpo-colocated": Run("grrm_mt_grpo", genrm="colocated"),
    "rubric": Run("rubric", TERM),
    "grrm_mt_grpo": Run("grrm_mt_grpo", TERM),
    # Step 1 holds 16 failures, under failure_min_samples: paid a loss; step 2 reaches 24: the guard stops it.
    DEAD_JUDGE: Run(
        "writing_rl", ("reward.reward_kwargs.judge.max_retries=1", "reward.reward_kwargs.failure_min_samples=24")
    ),
}


class Runs:
    """Every run of RUNS started at once, PARALLEL at a time; ``get(key)`` waits for one."""

    def __init__(self, root: Path, cache: Path, dead_judge_url: str):
        self.root, self.cache, self.dead_judge_url = root, cache, dead_judge_url
        self.processes: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.closed = False
        self.pool = ThreadPoolExecutor(max_workers=PARALLEL)
        self.futures = {key: self.pool.submit(self._run, key, run) for key, run in RUNS.items()}

    def get(self, key: str) -> tuple[list[str], Path]:
        """The output of each invocation ("rc=<code>" on its first line) and the run's OUT."""
        return self.futures[key].result()

    def _run(self, key: str, run: Run) -> tuple[list[str], Path]:
        out = self.root / key
        env = {"GENRM": run.genrm} if run.genrm else {}
        if key == DEAD_JUDGE:
            env.update(JUDGE_BASE_URL=self.dead_judge_url, JUDGE_MODEL="m")
        outputs = []
        for i, steps in enumerate(run.steps, start=1):
            outputs.append(self._invoke(run.method, out, steps, run.overrides, env))
            curriculum = out / "checkpoints" / "curriculum"
            if i < len(run.steps) and curriculum.is_dir():  # the levels as run i left them, for the next to compare
                shutil.copytree(curriculum, out / f"curriculum-after-run-{i}")
        return outputs, out

    def _invoke(self, method: str, out: Path, steps: int, overrides: tuple[str, ...], env: dict) -> str:
        drop = ("JUDGE_BASE_URL", "JUDGE_MODEL", "GENRM", "TRAINER")
        environ = {k: v for k, v in os.environ.items() if k not in drop}
        environ.update(SKIP_VENV="1", STEPS=str(steps), OUT=str(out), CACHE_DIR=str(self.cache), **env)
        environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ['PATH']}"
        with self.lock:
            if self.closed:
                return "rc=cancelled\n"
            # A session of its own: a run past its deadline is stopped with everything it started (Ray too).
            process = subprocess.Popen(
                ["bash", "scripts/tiny_train.sh", method, *overrides],
                cwd=REPO_DIR,
                env=environ,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            self.processes.add(process)
        try:
            output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
            return f"rc={process.returncode}\n{output}"
        except subprocess.TimeoutExpired:
            stop(process)
            output, _ = process.communicate()
            return f"rc=timeout\ntiny_train.sh {method} ran past {RUN_TIMEOUT_S} s\n{output}"
        finally:
            with self.lock:
                self.processes.discard(process)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            running = list(self.processes)
        for future in self.futures.values():
            future.cancel()
        for process in running:
            stop(process)
        self.pool.shutdown(wait=True)


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    # The tiny model and tokenizer first, once: the runs share them.
    cache = tmp_path_factory.mktemp("tiny-cache")
    spec = importlib.util.spec_from_file_location("tiny_train", REPO_DIR / "scripts" / "tiny_train.py")
    tiny_train = sys.modules["tiny_train"] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
    spec.loader.exec_module(tiny_train)
    tiny_train.build_artifacts(cache, genrm=True)
    dead = ScriptedJudgeServer(script=lambda request, index: Reply(status=500, content=None, body=b'{"error": {}}'))
    dead.start()
    started = Runs(tmp_path_factory.mktemp("runs"), cache, dead.base_url)
    yield started
    started.close()
    dead.stop()


def metrics(out: Path) -> dict[int, dict]:
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return {json.loads(line)["step"]: json.loads(line)["data"] for line in lines if line.strip()}


def dumped(out: Path, step: int) -> list[dict]:
    return [json.loads(line) for line in (out / "rollouts" / f"{step}.jsonl").read_text().splitlines()]


def ours_by_step(out: Path, steps: list[int], first: int = 0) -> dict[int, list[dict]]:
    """What our managers returned, split into steps: the v1 sync trainer scores all of a step's rollouts
    before the next step generates, so the log in time order is the steps in order (``first``: records
    of earlier runs in the same OUT, left out)."""
    records = read_sample_logs(out / "samples")[first:]
    assert len(records) >= PER_STEP * len(steps), f"{len(records)} rewards logged for steps {steps}"
    return {step: records[i * PER_STEP : (i + 1) * PER_STEP] for i, step in enumerate(steps)}


def assert_verl_trained_on_our_rewards(
    out: Path, steps: list[int], logged: dict | None = None
) -> dict[int, list[dict]]:
    logged = metrics(out) if logged is None else logged
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
def test_a_judged_method_trains_on_exactly_the_rewards_our_manager_returned(method, runs):
    (output,), out = runs.get(method)
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


def test_writing_rl_advances_its_curriculum_and_a_resumed_run_starts_from_the_saved_levels(runs):
    # Run 1: 2 steps, a checkpoint at step 2. Run 2: STEPS=3 in the same OUT, verl resumes from global_step_2.
    (first, second), out = runs.get("writing_rl")
    assert finished(first), first[-3000:]
    assert (out / "metrics.previous.jsonl").exists()
    logged = {json.loads(line)["step"]: json.loads(line)["data"] for line in (out / "metrics.previous.jsonl").open()}
    assert_verl_trained_on_our_rewards(out, [1, 2], logged)
    assert (out / "checkpoints" / "global_step_2").is_dir()
    saved = read_state(out / "curriculum-after-run-1").table.as_dict()
    assert any(level > 0 for level in saved.values()), f"no prompt moved to a harder reference: {saved}"

    assert finished(second), second[-3000:]
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
def test_a_genrm_training_run_scores_each_rollout_with_the_rule_based_reward(method, runs):
    from omegaconf import OmegaConf
    from verl.utils.import_utils import load_extern_object

    (output,), out = runs.get(method)
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
def test_a_genrm_preset_serves_the_tiny_genrm_on_the_cpu_rollout(method, preset, runs):
    """+genrm=standalone runs under the v1 trainer, +genrm=colocated under the legacy one (its preset)."""
    (output,), out = runs.get(f"{method}-{preset}")
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


def test_a_judge_that_fails_every_call_is_paid_a_loss_until_the_guard_stops_the_run(runs):
    (output,), out = runs.get(DEAD_JUDGE)
    # Step 1: 16 samples, below failure_min_samples=24: each failed call paid a pairwise loss, the run goes on.
    logged = metrics(out)
    assert sorted(logged) == [1], output[-3000:]
    assert logged[1]["judge/error_rate"] == 1.0 and logged[1]["critic/score/mean"] == 0.0
    step1 = read_sample_logs(out / "samples")[:PER_STEP]
    assert len(step1) == PER_STEP and all(r["judge_error"] == 1 and r["reward"] == 0.0 for r in step1)
    # Step 2 reaches 24 samples, all failed: above max_judge_error_rate, the guard stops the run, and no step
    # trains on the part of its batch that was scored before.
    assert not output.startswith("rc=0\n")
    log = (out / "train.log").read_text(errors="replace")
    assert "above reward.reward_kwargs.max_judge_error_rate=0.1" in log, output[-3000:]
    assert "RewardFailedError" in log and "could not be scored" in output
