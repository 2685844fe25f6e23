"""The training runs tests/test_trainer_cpu.py reads: ``scripts/tiny_train.sh`` invocations, started in the
background as soon as pytest has collected a test that needs them (conftest.py), so that verl's minute of
start-up per run overlaps the rest of the suite instead of adding to it. A test asks for its runs with
``@uses(key, ...)`` and waits for each with ``runs.get(key)``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge_server import Reply, ScriptedJudgeServer

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR / "bench"))  # bench/learning.py: the learning cases
# Runs at once, beside the rest of the suite. verl's start-up is one process importing at a time, so a
# run leaves a core idle for the other tests.
PARALLEL = 1
RUN_TIMEOUT_S = 900
TERM = ("reward.reward_kwargs.terms.repetition.weight=0.5",)
SHADOW = (
    "reward.reward_kwargs.shadow.fraction=1.0",
    "reward.reward_kwargs.shadow.judge.base_url=${reward.reward_kwargs.judge.base_url}",
    "reward.reward_kwargs.shadow.judge.model=${reward.reward_kwargs.judge.model}",
)
DEAD_JUDGE = "dead-judge"
COLOCATE_ASYNC = "writing_rl-colocate-async"
SEPARATE_ASYNC = "grrm_mt_grpo-separate-async"
FULLY_ASYNC = "writing_rl-fully-async"
ONE_STEP_OFF = "rubric-one-step-off"
ENSEMBLE = "writing_rl-ensemble"
# About one stand-in judge request in 4 fails (HTTP 500, no verdict, cut, refused): every batch mixes
# successes and each failure kind.
FAULTS = 4
# Stops before the first step that are the machine's, not the run's, and start it again once: two verl runs
# racing for the port each picked for torch.distributed; Ray giving up on starting a worker process while
# the machine's two cores are saturated.
NOT_STARTED = ("EADDRINUSE", "Address already in use", "Failed to startup worker")


@dataclass(frozen=True)
class Run:
    method: str
    overrides: tuple[str, ...] = ()
    genrm: str = ""
    steps: tuple[int, ...] = (2,)  # STEPS of each invocation, one after the other in one OUT (2, 3: a resume)
    trainer: str = ""  # TRAINER (writing_rl/tools/shared/trainers.py); "": the overlay's
    faults: int = 0  # STAND_IN_FAULTS
    env: tuple[tuple[str, str], ...] = ()  # more of tiny_train.sh's variables (LEARN, TASTE, SEED, ...)
    timeout_s: float = RUN_TIMEOUT_S  # each invocation's


def tiny_train():
    """scripts/tiny_train.py as a module."""
    if "tiny_train" not in sys.modules:
        spec = importlib.util.spec_from_file_location("tiny_train", REPO_DIR / "scripts" / "tiny_train.py")
        module = sys.modules["tiny_train"] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
        spec.loader.exec_module(module)
    return sys.modules["tiny_train"]


def learning(case: str, trainer: str = "", seed: int = 1) -> Run:
    """A LEARN=1 run of one of bench/learning.py's cases: the stand-in judge with a taste, 20 steps."""
    from learning import CASES

    c = CASES[case]
    env = (*c.env().items(), ("SEED", str(seed)))
    return Run(c.method, c.overrides, steps=(tiny_train().LEARN_STEPS,), trainer=trainer, env=env)


REAL = (("POLICY", "smollm2"), ("JUDGE", "smollm2"))  # scripts/tiny_train.sh's real models
REAL_JUDGED = ("writing_rl", "brpo", "tournament", "grrm_mt_grpo", "rubric")

# The longest first. Every trainer verl offers runs here: v1 sync (each method's default), legacy
# (+genrm=colocated's), and the three that generate apart from training (a rollout process of its own, sent
# the weights over gloo), each with terms on and a judge that fails now and then. Every judged method is judged
# by the stand-in judge over HTTP except BRPO, which the GenRM verl hosts judges. Marked release (run with
# WRITING_RL_RELEASE=1): the rest of the matrix in docs/trainers.md.
RUNS = {
    # With a shadow judge: the stand-in again, scoring every rollout a second time in the background.
    "writing_rl": Run("writing_rl", SHADOW, steps=(2, 3)),
    FULLY_ASYNC: Run("writing_rl", TERM, trainer="fully-async", faults=FAULTS),
    SEPARATE_ASYNC: Run("grrm_mt_grpo", TERM, trainer="v1-separate-async", faults=FAULTS),
    ONE_STEP_OFF: Run("rubric", TERM, trainer="one-step-off", faults=FAULTS),
    # BRPO with its terms, judged by the tiny GenRM verl hosts (+genrm=standalone, the v1 trainer).
    "brpo-standalone": Run("brpo", TERM, genrm="standalone"),
    # The tournament (a plug-in method) with its terms and a judge that fails now and then.
    "tournament": Run("tournament", TERM, faults=FAULTS),
    "grrm_mt_grpo-colocated": Run("grrm_mt_grpo", genrm="colocated"),
    # The release suite.
    # A three-judge ensemble (the stand-in judge three times) whose judges fail now and then.
    ENSEMBLE: Run(
        "writing_rl",
        ("reward.reward_kwargs.judge.ensemble.members=[{name: one}, {name: two}, {name: three}]",),
        faults=FAULTS,
    ),  # fmt: skip
    # Step 1 holds 16 failures, under failure_min_samples: paid a loss; step 2 reaches 24: the guard stops it.
    DEAD_JUDGE: Run(
        "writing_rl", ("reward.reward_kwargs.judge.max_retries=1", "reward.reward_kwargs.failure_min_samples=24")
    ),
    "grrm_rlvr": Run("grrm_rlvr"),
    "genrm_pairwise_rl": Run("genrm_pairwise_rl"),
    # A policy learns the stand-in judge's taste (LEARN=1; in CI the quickstart's Writing-RL run learns).
    "brpo-learns": learning("brpo"),
    "writing_rl-learns": learning("writing_rl"),
    "grrm_mt_grpo-learns": learning("grrm_mt_grpo"),
    "rubric-learns": learning("rubric"),
    "tournament-learns": learning("tournament"),
    "term-learns": learning("term"),
    "control-learns": learning("control"),
    "writing_rl-legacy-learns": learning("writing_rl", trainer="legacy"),
    "brpo-fully-async-learns": learning("brpo", trainer="fully-async"),
    "rubric": Run("rubric", TERM, faults=FAULTS),
    "grrm_mt_grpo": Run("grrm_mt_grpo", TERM),
    # The next step's rollouts are judged before this step trains.
    COLOCATE_ASYNC: Run("writing_rl", TERM, trainer="v1-colocate-async", faults=FAULTS),
    "brpo-colocate-async": Run("brpo", TERM, genrm="standalone", trainer="v1-colocate-async"),
    "brpo-separate-async": Run("brpo", TERM, genrm="standalone", trainer="v1-separate-async"),
    "brpo-fully-async": Run("brpo", TERM, genrm="standalone", trainer="fully-async"),
    "writing_rl-legacy": Run("writing_rl", TERM, trainer="legacy", faults=FAULTS),
    "grrm_mt_grpo-legacy-standalone": Run("grrm_mt_grpo", TERM, genrm="standalone", trainer="legacy"),
    # Real models: SmolLM2-135M-Instruct as the policy (its own tokenizer and chat template) and, for the judged
    # methods, as the judge that serve-judge hosts beside the run; the GenRM-training overlays train SmolLM2 itself.
    **{f"{method}-smollm2": Run(method, env=REAL) for method in REAL_JUDGED},
    # Their requests are long (a GQM request holds every candidate): the actor's update takes minutes a step.
    "grrm_rlvr-smollm2": Run("grrm_rlvr", env=REAL[:1], timeout_s=2 * RUN_TIMEOUT_S),
    "genrm_pairwise_rl-smollm2": Run("genrm_pairwise_rl", env=REAL[:1]),
}
SMOLLM2_RUNS = tuple(key for key in RUNS if key.endswith("-smollm2"))


def uses(*keys: str) -> pytest.MarkDecorator:
    """The runs a test reads (keys of RUNS)."""
    unknown = set(keys) - set(RUNS)
    assert not unknown, f"no such trainer runs: {sorted(unknown)}"
    return pytest.mark.trainer(runs=keys)


def wanted(items) -> list[str]:
    """The runs the selected tests read, in RUNS order."""
    keys = {key for item in items for mark in item.iter_markers("trainer") for key in mark.kwargs.get("runs", ())}
    return [key for key in RUNS if key in keys]


class Runs:
    """``keys`` of RUNS, PARALLEL at a time, after the tiny model and tokenizer they share are built;
    ``get(key)`` waits for one."""

    def __init__(self, keys: list[str]):
        # The environment as the session began: the runs go on in the background while tests patch
        # os.environ (test_multinode's RAY_TMPDIR would put a run's Ray session in a dir that test deletes).
        self.environ = dict(os.environ)
        self.root = Path(tempfile.mkdtemp(prefix="writing-rl-trainer-runs-"))
        self.cache = self.root / "tiny-cache"
        self.dead_judge = ScriptedJudgeServer(
            script=lambda request, index: Reply(status=500, content=None, body=b'{"error": {}}')
        ).start()
        self.processes: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.closed = False
        self.seconds: dict[str, float] = {}  # each finished run's wall time, for the session's summary
        self.preparing = ThreadPoolExecutor(max_workers=1)
        self.prepared = self.preparing.submit(self._build_artifacts)
        self.pool = ThreadPoolExecutor(max_workers=PARALLEL)
        self.futures = {key: self.pool.submit(self._run, key, RUNS[key]) for key in keys}

    def get(self, key: str) -> tuple[list[str], Path]:
        """The output of each invocation ("rc=<code>" on its first line) and the run's OUT."""
        return self.futures[key].result()

    def wait_all(self) -> None:
        """Every run finished (a benchmark then has the machine to itself)."""
        for future in self.futures.values():
            if not future.cancelled():
                future.exception()

    def _build_artifacts(self) -> None:
        tiny_train().build_artifacts(self.cache, genrm=True)

    def _run(self, key: str, run: Run) -> tuple[list[str], Path]:
        self.prepared.result()
        started = time.monotonic()
        try:
            return self._run_invocations(key, run)
        finally:
            self.seconds[key] = time.monotonic() - started

    def _run_invocations(self, key: str, run: Run) -> tuple[list[str], Path]:
        out = self.root / key
        env = {"GENRM": run.genrm} if run.genrm else {}
        if run.trainer:
            env["TRAINER"] = run.trainer
        if run.faults:
            env["STAND_IN_FAULTS"] = str(run.faults)
        env.update(run.env)
        if key == DEAD_JUDGE:
            env.update(JUDGE_BASE_URL=self.dead_judge.base_url, JUDGE_MODEL="m")
        outputs = []
        for i, steps in enumerate(run.steps, start=1):
            output = self._invoke(run, out, steps, env)
            if any(sign in output for sign in NOT_STARTED) and not (out / "metrics.jsonl").exists():
                output = self._invoke(run, out, steps, env)
            outputs.append(output)
            curriculum = out / "checkpoints" / "curriculum"
            if i < len(run.steps) and curriculum.is_dir():  # the levels as run i left them, for the next to compare
                shutil.copytree(curriculum, out / f"curriculum-after-run-{i}")
        return outputs, out

    def _invoke(self, run: Run, out: Path, steps: int, env: dict) -> str:
        drop = ("JUDGE_BASE_URL", "JUDGE_MODEL", "GENRM", "TRAINER", "STAND_IN_FAULTS", "RAY_ADDRESS", "LEARN", "TASTE")
        drop += (
            "JUDGE_TASTE",
            "JUDGE_FLIP",
            "SEED",
            "MODEL_PATH",
            "GENRM_PATH",
            "ROWS",
            "HF_CHECKPOINT",
            "POLICY",
            "JUDGE",
        )
        environ = {k: v for k, v in self.environ.items() if k not in drop}
        environ.update(SKIP_VENV="1", STEPS=str(steps), OUT=str(out), CACHE_DIR=str(self.cache), **env)
        environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ['PATH']}"
        with self.lock:
            if self.closed:
                return "rc=cancelled\n"
            # A session of its own: a run past its deadline is stopped with everything it started (Ray too).
            process = subprocess.Popen(
                ["bash", "scripts/tiny_train.sh", run.method, *run.overrides],
                cwd=REPO_DIR,
                env=environ,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            self.processes.add(process)
        try:
            output, _ = process.communicate(timeout=run.timeout_s)
            return f"rc={process.returncode}\n{output}"
        except subprocess.TimeoutExpired:
            stop(process)
            output, _ = process.communicate()
            return f"rc=timeout\ntiny_train.sh {run.method} ran past {run.timeout_s:.0f} s\n{output}"
        finally:
            with self.lock:
                self.processes.discard(process)

    def close(self, keep: bool) -> None:
        """Stops what still runs; the outputs are removed unless ``keep``."""
        with self.lock:
            self.closed = True
            running = list(self.processes)
        for future in self.futures.values():
            future.cancel()
        for process in running:
            stop(process)
        self.pool.shutdown(wait=True)
        self.preparing.shutdown(wait=True)
        self.dead_judge.stop()
        if self.seconds:
            times = ", ".join(f"{key} {seconds:.0f} s" for key, seconds in self.seconds.items())
            print(f"\ntrainer runs (wall, one at a time beside the other tests): {times}")
        if keep:
            print(f"\ntrainer runs kept in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def read_sample_logs(directory: str | Path) -> list[dict]:
    """Every record the reward workers logged under ``directory`` (reward.reward_kwargs.sample_log_dir), oldest
    first."""
    records = []
    for path in sorted(Path(directory).glob("rewards-*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            records.extend(json.loads(line) for line in lines if line.strip())
    return sorted(records, key=lambda record: record["time"])


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
