"""``RAY_ADDRESS=http://HEAD:8265 bash scripts/tiny_train.sh METHOD``: the tiny run as a Ray job on that cluster,
to check it end to end before a real run (docs/many-nodes.md).

Here: the preflight's cluster check (the job's interpreter and packages there, its workers', room for the
CPU backend's groups), then the job submitted and followed. On the cluster, the job is this same script
(``tiny_train.py`` in the job's copy of the repository): it builds the tiny model and data under CACHE_DIR and
OUT, starts the stand-in judge on its node, and runs verl's trainer joined to the cluster. OUT and CACHE_DIR are
the paths given here, so on storage every node and this machine see, the outputs are read here as after a
local run; elsewhere they stay on the job's node and the job's log holds the table.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

# tiny_train.sh's variables the job gets (paths made absolute here); tiny_train.sh documents each.
TINY_VARIABLES = (
    "STEPS", "TRAINER", "LEARN", "TASTE", "JUDGE_TASTE", "JUDGE_FLIP", "SEED", "GENRM", "STAND_IN_FAULTS",
    "JUDGE_BASE_URL", "JUDGE_MODEL", "JUDGE_API_KEY_ENV", "JUDGE_MAX_TOKENS", "HF_CHECKPOINT", "TINY_TRAIN_HEADING",
)  # fmt: skip
TINY_PATHS = ("MODEL_PATH", "GENRM_PATH", "ROWS")
IN_JOB = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by Ray for a job's entrypoint


def submits() -> bool:
    """Whether this run goes to a cluster as a job: RAY_ADDRESS names a job server (http://HEAD:8265) and this is
    not the job itself. Another RAY_ADDRESS (a Ray's GCS address, as inside a Ray job or the quickstart) is left
    alone: the run starts a Ray of its own."""
    address = os.environ.get("RAY_ADDRESS", "")
    return address.startswith(("http://", "https://")) and IN_JOB not in os.environ


def in_job() -> bool:
    return IN_JOB in os.environ


def job_variables(out: Path, cache: Path) -> dict[str, str]:
    env = {name: os.environ[name] for name in TINY_VARIABLES if os.environ.get(name)}
    env.update({name: str(Path(os.environ[name]).resolve()) for name in TINY_PATHS if os.environ.get(name)})
    env.update(OUT=str(out), CACHE_DIR=str(cache), PYTHONUNBUFFERED="1")
    # For the job's workers too, verl's tracker among them: on a cluster they start from the node's `ray start`,
    # with the job's runtime environment, not from the job's process
    env.update(VERL_PLATFORM="cpu", VERL_FILE_LOGGER_PATH=str(out / "metrics.jsonl"))
    return env


def submit_tiny_run(repo: Path, method: str, overrides: list[str], out: Path, cache: Path, config) -> int:
    """Check the cluster, submit ``tiny_train.py METHOD`` as a job, follow it; the job's exit status."""
    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.report import Report
    from writing_rl.tools.shared.cluster.client import connect, run_job
    from writing_rl.tools.shared.cluster.job_env import JobEnv, job_env_from_environ
    from writing_rl.tools.shared.cluster.probe import check_cluster

    try:
        base = job_env_from_environ(repo)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    job = JobEnv(base.address, base.job_python, repo, {**base.env_vars, **job_variables(out, cache)})
    print(f"== 1/2 the cluster at {job.address}: the job's environment and resources (a probe job)", flush=True)
    report = Report()
    check_cluster(config, report, job, with_paths=False)  # the job builds its model and data itself
    print("\n".join(f"   {line}" for line in report.lines), flush=True)
    if report.problems:
        print(f"error: {len(report.problems)} problem(s) with the cluster; nothing was submitted", file=sys.stderr)
        return 1
    command = shlex.join([job.job_python, "scripts/tiny_train.py", method, *overrides])
    print("== 2/2 the tiny run as a Ray job", flush=True)
    rc = run_job(connect(job.address), job.address, command, job.runtime_env(), f"writing-rl-tiny-{method}", False)
    summary = out / "summary.json"
    if summary.is_file():
        print(f"== the job's outputs, read here: {out} (summary: {json.loads(summary.read_text())['steps']} steps)")
    else:
        print(f"== the job's outputs are on the job's node under {out}: give OUT on storage this machine sees too")
    return rc


def judge_host() -> str:
    """Where the stand-in judge listens in a job: this node's loopback when every node of the cluster is this
    machine, else this node's address (the reward workers on other nodes call it)."""
    import ray

    ray.init(logging_level="ERROR")
    try:
        here = ray.util.get_node_ip_address()
        addresses = {node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]}
    finally:
        ray.shutdown()
    return "127.0.0.1" if addresses <= {here} else here


if __name__ == "__main__":
    sys.exit("run scripts/tiny_train.sh with RAY_ADDRESS set")
