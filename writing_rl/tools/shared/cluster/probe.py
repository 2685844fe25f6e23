"""The preflight's cluster check: a small job run with the training job's own runtime environment first.

On the cluster (``python -m writing_rl.tools.shared.cluster.probe PATH...``, the job's entrypoint) it prints one line
``writing-rl-probe: {...}``: the interpreter and the versions it imports, the nodes and their resources, what a
Ray task (a worker as verl's are started) imports and which forwarded variables it sees, and which of the paths
exist. Here, ``check_cluster`` submits it, reads that line and turns it into the preflight's lines.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

from writing_rl.tools.shared.cluster.client import TERMINAL, connect
from writing_rl.tools.shared.cluster.demand import job_demand, schedulability
from writing_rl.tools.shared.cluster.job_env import JobEnv, check_upload

MARK = "writing-rl-probe: "
PACKAGES = ("ray", "verl", "writing_rl")


def _versions() -> dict[str, str]:
    import importlib

    found = {}
    for name in PACKAGES:
        try:
            found[name] = str(getattr(importlib.import_module(name), "__version__", "?"))
        except Exception as err:  # noqa: BLE001 - reported, whatever the import raised
            found[name] = f"not importable: {type(err).__name__}: {err}"
    return found


def _worker_view(names: list[str]) -> dict:
    return {"python": sys.executable, "versions": _versions(), "env": [n for n in names if n in os.environ]}


def probe(paths: list[str], env_names: list[str]) -> dict:
    """What the job will find on the cluster (runs there)."""
    import ray

    found: dict = {"python": sys.executable, "versions": _versions()}
    found["paths"] = {path: os.path.exists(path) for path in paths}
    ray.init(logging_level="ERROR")
    try:
        found["nodes"] = {
            f"{n['NodeManagerAddress']} ({n['NodeID'][:8]})": {
                k: v for k, v in n["Resources"].items() if "node:" not in k
            }
            for n in ray.nodes()
            if n["Alive"]
        }
        found["worker"] = ray.get(ray.remote(num_cpus=0)(_worker_view).remote(env_names), timeout=120)
    finally:
        ray.shutdown()
    return found


def run_probe(client, job: JobEnv, paths: list[str], timeout_s: float = 300.0) -> tuple[dict | None, str]:
    """(what the probe found, its log); None when the job failed before printing it."""
    names = sorted(job.env_vars)
    command = [job.job_python, "-m", "writing_rl.tools.shared.cluster.probe", "--env", ",".join(names), *paths]
    job_id = client.submit_job(
        entrypoint=shlex.join(command),
        runtime_env=job.runtime_env(),
        submission_id=f"writing-rl-probe-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}",
    )
    deadline = time.monotonic() + timeout_s
    while str(client.get_job_status(job_id).value) not in TERMINAL:
        if time.monotonic() > deadline:
            client.stop_job(job_id)
            return None, f"the probe job {job_id} did not finish within {timeout_s:.0f}s (the cluster is busy?)"
        time.sleep(0.5)
    logs = client.get_job_logs(job_id)
    for line in logs.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :]), logs
    return None, logs


def cluster_paths(config) -> list[str]:
    """The absolute local paths the run reads or writes on the cluster: its model, data and outputs' homes."""
    from omegaconf import OmegaConf

    keys = ("actor_rollout_ref.model.path", "data.train_files", "data.val_files", "reward.reward_model.model_path")
    paths: list[str] = []
    for key in keys:
        value = OmegaConf.select(config, key)
        values = list(value) if OmegaConf.is_list(value) else [value]
        paths += [str(v) for v in values if v and str(v).startswith("/")]
    checkpoints = OmegaConf.select(config, "trainer.default_local_dir")
    if checkpoints and str(checkpoints).startswith("/"):  # verl makes it: its nearest existing folder
        paths.append(str(_existing_parent(Path(str(checkpoints)))))
    return list(dict.fromkeys(paths))


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def check_cluster(config, report, job: JobEnv, with_paths: bool = True) -> None:
    """The preflight lines for the cluster at ``job.address``: reachable, the upload, the job's interpreter and
    packages there (and its workers'), the forwarded variables, the paths, and the resources the run asks for."""
    from writing_rl.settings import ConfigError

    try:
        report.ok(check_upload(job.repo))
        client = connect(job.address)
    except ConfigError as err:
        report.problem(f"cluster: {err}")
        return
    paths = cluster_paths(config) if with_paths else []
    tracker_file = job.env_vars.get("VERL_FILE_LOGGER_PATH", "")
    if with_paths and tracker_file.startswith("/"):  # verl's file tracker opens it without making its folder
        paths.append(str(Path(tracker_file).parent))
    found, logs = run_probe(client, job, paths)
    if found is None:
        tail = " | ".join(logs.strip().splitlines()[-3:])
        report.problem(
            f"cluster: a probe job with the training job's environment ({job.described()}) failed at "
            f"{job.address}: {tail}. JOB_PYTHON must name an interpreter on the cluster's nodes with verl and "
            "writing-rl installed (docs/many-nodes.md)"
        )
        return
    report.ok(f"cluster at {job.address}: {len(found['nodes'])} node(s); {job.described()}")
    here = _versions()
    for where, view in (("the job", found), ("the cluster's workers", found["worker"])):
        for name, version in view["versions"].items():
            if version.startswith("not importable"):
                report.problem(f"cluster: {where} ({view['python']}) cannot import {name}: {version}")
            elif version != here.get(name):
                report.note(f"cluster: {where} runs {name} {version}, this machine {here.get(name)}")
    unseen = sorted(set(job.env_vars) - set(found["worker"]["env"]))
    if unseen:
        report.problem(f"cluster: the job's workers do not see the forwarded variable(s) {', '.join(unseen)}")
    missing = [path for path, exists in found["paths"].items() if not exists]
    if missing:
        report.problem(
            f"cluster: not found on the cluster's driver node: {', '.join(missing)}; the job reads and writes "
            "paths there: put them on storage every node sees"
        )
    refused = schedulability(job_demand(config), found["nodes"])
    if refused:
        report.problem(f"cluster: {refused}")
    else:
        report.ok("cluster: room for every group of workers the run asks for")


def check_cluster_from_environ(config, report, config_dir: str | None) -> None:
    """``check_cluster`` for the job the scripts would submit (RAY_ADDRESS, JOB_PYTHON, FORWARD_ENV, ...);
    the repository uploaded is the one holding ``config_dir``."""
    from writing_rl.settings import ConfigError
    from writing_rl.tools.shared.cluster.job_env import job_env_from_environ
    from writing_rl.tools.shared.cluster.submit import judge_key_envs

    repo = Path(config_dir).resolve().parent if config_dir else Path.cwd()
    try:
        job = job_env_from_environ(repo, lambda: judge_key_envs(config))
    except ConfigError as err:
        report.problem(f"cluster: {err}")
        return
    check_cluster(config, report, job)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="the preflight's probe, run on the cluster as a Ray job")
    parser.add_argument("--env", default="", help="comma-separated names of the forwarded variables")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    names = [name for name in args.env.split(",") if name]
    print(MARK + json.dumps(probe(args.paths, names)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
