"""``scripts/train_*.sh`` with ``RAY_ADDRESS`` set: verl's trainer submitted to the cluster as a Ray job.

    python -m writing_rl.tools.shared.cluster.submit --module verl.trainer.main_ppo --config-name writing_rl OVERRIDE...

The job runs ``JOB_PYTHON -m MODULE`` in a copy of this repository with the overlays read from there, the
variables of ``job_env.FORWARDED`` (and ``FORWARD_ENV``'s) set, and Ray's own settings dropped from ``ray_init``
(a job joins the cluster, whose resources its ``ray start`` set). Its output is followed here; Ctrl-C leaves it
running (``STOP_ON_INTERRUPT=1``: stops it); the exit status is the job's.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Sequence

from writing_rl.settings import ConfigError

REPO = Path(__file__).resolve().parents[4]  # the repository of a checkout (pip install -e)
# ray.init refuses these when joining a cluster (the CPU backend sets them for a Ray of its own).
RAY_OWN = ("num_cpus", "num_gpus", "resources", "object_store_memory")


def joining_overrides(config) -> list[str]:
    """Overrides that null ``ray_kwargs.ray_init``'s own-cluster settings the composed config sets."""
    ray_init = config.get("ray_kwargs", {}).get("ray_init", {}) or {}
    return [f"ray_kwargs.ray_init.{key}=null" for key in RAY_OWN if ray_init.get(key) is not None]


def entrypoint(job_python: str, module: str, config_name: str, overrides: Sequence[str]) -> str:
    """The job's shell command: the overlays from the job's copy of this repository ($PWD on the cluster)."""
    head = f'{shlex.quote(job_python)} -m {shlex.quote(module)} --config-path "$PWD/hydra_configs"'
    return f"{head} --config-name {shlex.quote(config_name)} {shlex.join(overrides)}".rstrip()


def judge_key_envs(config) -> tuple[str, ...]:
    """The variables holding a judge key the reward workers read: the judge's, each ensemble member's own and
    the shadow judge's (and its members'), each once, as the reward workers read the config."""
    from writing_rl.reward_loop.config import ManagerConfig

    hosted = bool(config.reward.reward_model.get("enable"))  # verl's GenRM: a router address, no key
    settings = ManagerConfig.from_verl(config, "verl-reward-router:0" if hosted else None)
    judges = [("reward.reward_kwargs.judge", settings.judge)]
    if settings.shadow.on:
        judges.append(("reward.reward_kwargs.shadow.judge", settings.shadow.judge))
    names = []
    for prefix, judge in judges:
        members = [one for _, one in judge.ensemble.judges(judge, prefix)]
        names += [one.api_key_env for one in (judge, *members) if one.api_key_env]
    return tuple(dict.fromkeys(names))


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from writing_rl.offline.compose import compose
    from writing_rl.tools.shared.cluster.client import connect, run_job
    from writing_rl.tools.shared.cluster.job_env import check_upload, job_env_from_environ

    parser = argparse.ArgumentParser(
        prog="python -m writing_rl.tools.shared.cluster.submit", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--module", default="verl.trainer.main_ppo", help="what the job runs with python -m")
    parser.add_argument("--config-name", required=True, help="overlay in hydra_configs/")
    parser.add_argument("--repo", type=Path, default=REPO, help="the job's working directory (default: this checkout)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for verl.trainer.main_ppo")
    args = parser.parse_args(argv)
    try:
        config = compose(args.config_name, args.overrides, args.repo / "hydra_configs")
        job = job_env_from_environ(args.repo, lambda: judge_key_envs(config))
        print(f"== {check_upload(args.repo)}", flush=True)
        client = connect(job.address)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    extra = joining_overrides(config)
    if extra:
        print(f"== joining the cluster: {' '.join(extra)} (its resources are those its `ray start` gave)", flush=True)
    print(f"== {job.described()}", flush=True)
    command = entrypoint(job.job_python, args.module, args.config_name, [*args.overrides, *extra])
    stop = os.environ.get("STOP_ON_INTERRUPT") == "1"
    return run_job(client, job.address, command, job.runtime_env(), f"writing-rl-{args.config_name}", stop)


if __name__ == "__main__":
    sys.exit(main())
