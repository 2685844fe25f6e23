from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent
sys.path.insert(0, str(TESTS_DIR))

import trainer_runs  # noqa: E402
from judge_server import ScriptedJudgeServer  # noqa: E402

TRAINER_RUNS = pytest.StashKey[trainer_runs.Runs]()


RELEASE_SUITE = "WRITING_RL_RELEASE"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``release`` (more trainer runs: docs/trainers.md) run only with WRITING_RL_RELEASE=1."""
    if os.environ.get(RELEASE_SUITE) == "1":
        return
    later = [item for item in items if item.get_closest_marker("release")]
    if later:
        config.hook.pytest_deselected(items=later)
        items[:] = [item for item in items if not item.get_closest_marker("release")]


def pytest_collection_finish(session):
    """The trainer runs the selected tests read start now, in the background (tests/trainer_runs.py)."""
    keys = trainer_runs.wanted(session.items)
    if keys and not session.config.option.collectonly:
        session.config.stash[TRAINER_RUNS] = trainer_runs.Runs(keys)


def pytest_sessionfinish(session):
    runs = session.config.stash.get(TRAINER_RUNS, None)
    if runs is not None:
        # kept when a test failed, or when asked (WRITING_RL_KEEP_RUNS=1: to read a release run's times)
        runs.close(keep=session.testsfailed > 0 or os.environ.get("WRITING_RL_KEEP_RUNS") == "1")


@pytest.fixture(scope="session")
def trainer_runs_started(request) -> trainer_runs.Runs:
    return request.config.stash[TRAINER_RUNS]


TOKENIZER_TEXTS = [
    "Write a story about a lighthouse. The storm was good and the ending was bad.",
    "Response A Response B [[A]] [[B]] [[C]] <think> </think> verdict judge",
    "The quick brown fox jumps over the lazy dog. 0123456789 !?.,;:'\"()[]{}",
]


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory) -> Path:
    from tiny import build_tiny_tokenizer

    return build_tiny_tokenizer(tmp_path_factory.mktemp("tokenizer"), TOKENIZER_TEXTS * 20)


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_dir))


@pytest.fixture
def judge_server():
    """Factory: ``judge_server(script=..., latency_s=..., capacity=...)`` starts a scripted judge on
    127.0.0.1; every server started is stopped after the test."""
    servers = []

    def start(**kwargs) -> ScriptedJudgeServer:
        server = ScriptedJudgeServer(**kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray for the session (2 CPUs, no dashboard), shut down at the end."""
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    yield ray
    ray.shutdown()


@contextlib.contextmanager
def reward_loop(config):
    """verl's own RewardLoopManager on the session's Ray; its named workers are killed afterwards so
    the next test can build another manager (verl names them reward_loop_worker_<i>)."""
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config)
    # Every worker has finished __init__: a test's first call does not race the workers' start-up.
    ray.get([worker.__ray_ready__.remote() for worker in manager.reward_loop_workers])
    try:
        yield manager
    finally:
        for worker in manager.reward_loop_workers:
            ray.kill(worker, no_restart=True)


# The per-sample Writing-RL reward (no curriculum): ParallelRewardManager + reward_fns.pairwise.compute_score.
PER_SAMPLE = [
    "reward.reward_manager.name=ParallelRewardManager",
    "reward.custom_reward_function.name=compute_score",
    "~reward.custom_reward_function.reward_kwargs.advance_threshold",
    "reward.reward_kwargs.curriculum.enable=false",
]


def compose_writing_rl(tokenizer_dir, base_url: str, *overrides: str, per_sample: bool = True):
    from writing_rl.offline.compose import compose

    return compose(
        "writing_rl",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.reward_kwargs.judge.base_url={base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            "reward.reward_kwargs.judge.backoff_base_s=0.01",
            *(PER_SAMPLE if per_sample else []),
            *overrides,
        ],
    )


def writing_row(index: int, prompt: str = "Write a story.", target=("a plain story",), criteria=None) -> dict:
    return {
        "data_source": "writing",
        "prompt": [{"role": "user", "content": prompt}],
        "reward_model": {
            "style": "model",
            "ground_truth": {"prompt": prompt, "target": list(target), "criteria": criteria, "id": index},
        },
        "extra_info": {"index": index},
    }


def score_in_reward_worker(tokenizer, config, rows: list[dict], texts: list[str], uids=None) -> list[dict]:
    """verl's RewardLoopWorker, in this process (no Ray), scoring ``texts`` as the responses to ``rows``; its
    judge client closed after."""
    import asyncio

    from verl.experimental.reward_loop import RewardLoopWorker

    from writing_rl.reward_loop.batch import build_reward_batch

    worker = RewardLoopWorker(config)
    batch = build_reward_batch(tokenizer, rows, texts, **({"uids": uids} if uids is not None else {}))

    async def go():
        try:
            return await worker.compute_score_batch(batch)
        finally:
            await worker.reward_manager.scoring.judge.close()

    return asyncio.run(go())


@pytest.fixture
def no_matplotlib(monkeypatch):
    """matplotlib as if not installed: every ``import matplotlib...`` raises ImportError."""
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)


def png_colours(data: bytes) -> set[str]:
    """The colours of a PNG's pixels, as ``#rrggbb`` (alpha dropped); checks the PNG signature first."""
    import io

    from matplotlib.colors import to_hex
    from matplotlib.image import imread

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(io.BytesIO(data), format="png")
    return {to_hex(rgb) for rgb in {tuple(p) for p in pixels[:, :, :3].reshape(-1, 3).tolist()}}


# ---------------------------------------------------------------- a group reward through verl's reward loop

GROUP_PROMPT = "Write a toast for a wedding."


def group_loop_config(overlay: str, tokenizer_dir, server, n: int, *more: str):
    """``overlay`` composed for verl's reward loop on the session's Ray: 2 reward workers, groups of ``n``,
    the judge at ``server``."""
    from writing_rl.offline.compose import compose

    return compose(
        overlay,
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.reward_kwargs.judge.base_url={server.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            "reward.num_workers=2",
            f"actor_rollout_ref.rollout.n={n}",
            "actor_rollout_ref.rollout.val_kwargs.n=1",
            "reward.reward_kwargs.groups.timeout_s=30",
            "reward.reward_kwargs.groups.settle_s=60",
            *more,
        ],
    )


def group_batch(tokenizer, groups, prompt: str = GROUP_PROMPT):
    """verl's batch of ``groups`` [(uid, texts)], each text a rollout of one writing row."""
    from writing_rl.reward_loop.batch import build_reward_batch

    row = {
        "data_source": "writing",
        "prompt": [{"role": "user", "content": prompt}],
        "reward_model": {"ground_truth": {"prompt": prompt}},
        "extra_info": {"index": 0, "split": "train"},
    }
    texts = [t for _, group in groups for t in group]
    uids = [uid for uid, group in groups for _ in group]
    return build_reward_batch(tokenizer, [row] * len(texts), texts, uids)


def streamed_rewards(manager, batch, seed: int) -> list[float]:
    """verl's streaming mode: each rollout sent alone, in a shuffled order, to a random reward worker; the rewards
    in batch order."""
    import random

    import ray

    order = list(range(len(batch)))
    random.Random(seed).shuffle(order)
    rng = random.Random(seed + 1)
    refs = {i: rng.choice(manager.reward_loop_workers).compute_score.remote(batch[i : i + 1]) for i in order}
    return [ray.get(refs[i])["reward_score"] for i in range(len(batch))]


@pytest.fixture
def registrations_undone():
    """The methods a test loads from a file leave the process's registry with it (installed ones stay)."""
    from writing_rl.reward_loop import registry

    before = set(registry._BY_MODULE)
    yield
    installed = set(registry.method_modules())
    for module in set(registry._BY_MODULE) - before - installed:
        registry._BY_MODULE.pop(module)


@pytest.fixture
def steady_hedge_floor(monkeypatch):
    """For tests that count a live client's requests against a judge answering in a millisecond: its percentile
    puts the hedge delay at the floor, and a loop stalled that long on a loaded machine would send a copy the
    test did not ask for. The floor as it was (0.2 s) keeps such stalls uncopied; the floor itself is pinned in
    test_judge_hedge_pinned.py."""
    from writing_rl.judge import hedge

    monkeypatch.setattr(hedge, "MIN_DELAY_S", 0.2)
