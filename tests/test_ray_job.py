"""`RAY_ADDRESS=... bash scripts/train_writing_rl.sh` against a real Ray cluster on this machine (a head started
by `ray start --head` and a worker node joined to it, tests/ray_cluster.py): the preflight asks the cluster, the
job trains to SUCCEEDED with the variables forwarded to it, verl's tracker file is written, the reward workers
run on both nodes, and a job the cluster can never schedule is refused before it is submitted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ray_cluster import LocalCluster, free_ports
from trainer_runs import REPO_DIR, tiny_train

pytestmark = pytest.mark.trainer
JOB_TIMEOUT_S = 900
MARK = "WRL_CLUSTER_MARK"
TINY = (
    "+backend=cpu",
    "data.train_batch_size=4",
    "data.max_prompt_length=1024",
    "data.max_response_length=32",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "trainer.total_training_steps=2",
    "trainer.total_epochs=100",
    "trainer.save_freq=-1",
    "trainer.test_freq=-1",
    "trainer.val_before_train=false",
    "trainer.logger=[console,file]",
)
# The reward workers, two of them: verl spreads them over the alive nodes.
TWO_WORKERS = ("reward.num_workers=2",)
WATCH = (
    "+reward.reward_kwargs.watch.mark.fn.path=tests/cluster_watch.py",  # read in the job's copy of the repo
    "+reward.reward_kwargs.watch.mark.fn.name=from_environment",
    f"+reward.reward_kwargs.watch.mark.name={MARK}",
)


@pytest.fixture(scope="module")
def cluster():
    """A head with the CPU backend's logical GPUs, and a worker node with CPUs only."""
    cluster = LocalCluster(num_cpus=16, num_gpus=2)
    try:
        cluster.add_node(num_cpus=4)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny policy and Writing-RL parquet tiny_train.sh builds, and the stand-in judge."""
    module = tiny_train()
    root = tmp_path_factory.mktemp("ray-job")
    artifacts = module.build_artifacts(root / "cache", genrm=False)
    method = module.METHODS["writing_rl"]
    train = module.build_data(method, REPO_DIR / method.rows, root / "data", test_size=2)
    judge = module.StandInJudge(root / "judge.log")
    yield {"root": root, "policy": artifacts["policy"], "train": train, "judge": judge.base_url}
    judge.stop()


def submit(
    cluster, tiny, out: Path, *overrides: str, judge: str | None = None, tracker: Path | None = None
) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "RAY_ADDRESS": cluster.address,
        "RAY_AUTH_TOKEN_PATH": str(cluster.token_path),  # the cluster's token, copied here
        "MODEL_PATH": str(tiny["policy"]),
        "TRAIN_FILES": str(tiny["train"]),
        "VAL_FILES": str(tiny["train"].with_name("test.parquet")),
        "JUDGE_BASE_URL": judge or tiny["judge"],
        "JUDGE_MODEL": "stand-in-judge",
        "VERL_PLATFORM": "cpu",
        "VERL_FILE_LOGGER_PATH": str(tracker or out / "metrics.jsonl"),
        "FORWARD_ENV": MARK,
        MARK: "7",
    }
    args = [*TINY, f"trainer.default_local_dir={out / 'checkpoints'}", f"hydra.run.dir={out / 'hydra'}", *overrides]
    command = ["bash", str(REPO_DIR / "scripts/train_writing_rl.sh"), *args]
    return subprocess.run(
        command, cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, stdin=subprocess.DEVNULL
    )


def training_jobs(cluster) -> int:
    from ray.dashboard.modules.job.sdk import JobSubmissionClient

    jobs = JobSubmissionClient(cluster.address, headers=cluster.headers()).list_jobs()
    return sum("verl.trainer.main_ppo" in job.entrypoint for job in jobs)


@pytest.mark.release  # two minutes of verl's trainer on the cluster; CI keeps the cluster's preflight and Ctrl-C
def test_a_submitted_training_script_trains_on_the_cluster_with_its_variables_and_workers_on_both_nodes(
    cluster, tiny, tmp_path
):
    from writing_rl.offline.compose import compose
    from writing_rl.tools.shared.cluster.demand import job_demand

    done = submit(cluster, tiny, tmp_path, *TWO_WORKERS, *WATCH)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    # The preflight asked the cluster before submitting: both nodes, the job's environment, room for the job.
    assert "ok       cluster at " in output and ": 2 node(s)" in output, output[-6000:]
    assert "ok       cluster: room for every group of workers" in output
    assert f"variables forwarded: VERL_FILE_LOGGER_PATH, VERL_PLATFORM, {MARK}" in output
    assert "SUCCEEDED" in output

    logged = tiny_train().read_metrics(tmp_path / "metrics.jsonl")
    assert sorted(logged) == [1, 2], output[-4000:]
    for step in (1, 2):
        assert logged[step]["judge/samples_total"] == 16
        # The variable forwarded reached the reward workers on both nodes (VERL_PLATFORM=cpu: verl trained on the CPU).
        assert logged[step]["watch/mark_mean"] == 7.0

    workers = [a for a in cluster.state("actors") if a.get("class_name") == "RewardLoopWorker"]
    assert sorted(a["name"] for a in workers) == ["reward_loop_worker_0", "reward_loop_worker_1"]
    nodes = {n["node_id"] for n in cluster.state("nodes") if n["state"] == "ALIVE"}
    assert {a["node_id"] for a in workers} == nodes and len(nodes) == 2

    # What the preflight counted as the job's demand is what verl asked the cluster for.
    config = compose("writing_rl", [*TINY, *TWO_WORKERS])
    asked = Counter(
        tuple(sorted(b["unit_resources"].items())) for pg in cluster.state("placement_groups") for b in pg["bundles"]
    )
    predicted = Counter(
        (("CPU", float(g.cpus_per_gpu)), ("GPU", 1.0)) for g in job_demand(config) for _ in range(g.gpus)
    )
    assert asked == predicted


def test_the_preflight_refuses_a_job_the_cluster_can_never_schedule_and_reports_the_rest_too(cluster, tiny, tmp_path):
    before = training_jobs(cluster)
    (dead,) = free_ports(1)
    no_folder = tmp_path / "not-made" / "metrics.jsonl"  # verl's file tracker would stop on it
    done = submit(
        cluster, tiny, tmp_path, "trainer.n_gpus_per_node=4", judge=f"http://127.0.0.1:{dead}/v1", tracker=no_folder
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-4000:]
    refused = next(line for line in output.splitlines() if "can never schedule" in line)
    assert "the policy's training workers: 1 x 4 GPU(s) on one node" in refused
    assert "{GPU: 2, CPU: 16}" in refused and "{GPU: 0, CPU: 4}" in refused
    assert any(line.startswith("PROBLEM  judge") for line in output.splitlines()), output[-4000:]
    assert f"PROBLEM  cluster: not found on the cluster's driver node: {no_folder.parent};" in output
    assert "nothing was started" in output
    assert training_jobs(cluster) == before


@pytest.mark.release
def test_tiny_train_with_ray_address_runs_the_tiny_run_as_a_job_and_its_outputs_are_read_here(cluster, tmp_path):
    env = {
        **os.environ,
        "RAY_ADDRESS": cluster.address,
        "RAY_AUTH_TOKEN_PATH": str(cluster.token_path),
        "OUT": str(tmp_path / "out"),
        "STEPS": "2",
        "SKIP_VENV": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    done = subprocess.run(
        ["bash", str(REPO_DIR / "scripts/tiny_train.sh"), "writing_rl"],
        cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "ok       cluster: room for every group of workers" in output
    assert "Running entrypoint for job writing-rl-tiny-writing_rl-" in output  # it ran as a job, followed here
    summary = tiny_train().json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["finished"] and summary["steps"] == [1, 2]
    logged = tiny_train().read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert all(logged[step]["judge/samples_total"] == 16 for step in (1, 2))


FOLLOW = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background shell ignores SIGINT)
from writing_rl.tools.shared.cluster.client import connect, run_job
address, stop = sys.argv[1], sys.argv[2] == "1"
sys.exit(run_job(connect(address), address, "echo started; sleep 600", {}, "writing-rl-ctrl-c", stop))
"""


@pytest.mark.parametrize("stop", [False, True], ids=["leaves-it-running", "stops-it"])
def test_ctrl_c_while_following_a_job_leaves_it_running_or_stops_it(cluster, stop):
    import signal

    from ray.dashboard.modules.job.sdk import JobSubmissionClient

    env = {**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token_path)}
    follower = subprocess.Popen(
        [sys.executable, "-c", FOLLOW, cluster.address, "1" if stop else "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    job_id = None
    for line in follower.stdout:  # the job's own output, followed: it is running
        job_id = job_id or (line.split()[3] if line.startswith("== Ray job ") else None)
        if line.strip() == "started":
            break
    follower.send_signal(signal.SIGINT)
    rc = follower.wait(timeout=120)
    message = follower.stderr.read()
    client = JobSubmissionClient(cluster.address, headers=cluster.headers())
    assert rc == 130 and job_id, message
    if stop:
        assert "asked to stop" in message
        status = client.get_job_status(job_id)
        deadline = time.monotonic() + 120
        while str(status.value) != "STOPPED" and time.monotonic() < deadline:
            time.sleep(0.5)
            status = client.get_job_status(job_id)
        assert str(status.value) == "STOPPED"
    else:
        assert "keeps running on the cluster" in message and f"job stop --address {cluster.address} {job_id}" in message
        assert str(client.get_job_status(job_id).value) == "RUNNING"
        client.stop_job(job_id)
