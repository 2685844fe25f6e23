"""The runtime environment a training job runs with on the cluster (docs/many-nodes.md).

The job runs in a copy of this repository (Ray's ``working_dir``: the overlays, ``reward_fns/``, the scripts),
with the interpreter ``JOB_PYTHON`` (default: the one running here, for clusters that share this path), and only
the variables named here: a Ray job sees the environment of the node's ``ray start``, not the submitting shell's.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from writing_rl.settings import ConfigError

# Forwarded when set in the submitting shell: the platform verl picks at import, its plugins, our file tracker,
# the model caches and the trackers' settings. Secrets (a judge key, WANDB_API_KEY) only when asked.
FORWARDED = (
    "VERL_PLATFORM",
    "VERL_USE_EXTERNAL_PLUGINS",
    "VERL_FILE_LOGGER_PATH",
    "VERL_LOGGING_LEVEL",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_DATASETS_CACHE",
    "TRANSFORMERS_CACHE",
    "HF_HUB_OFFLINE",
    "HF_ENDPOINT",
    "WANDB_PROJECT",
    "WANDB_ENTITY",
    "WANDB_MODE",
    "WANDB_DIR",
)
# Never uploaded: environments, history, data, run outputs, caches (and what .gitignore lists: Ray reads it too).
# Anchored at the root: writing_rl/data/ is a package.
EXCLUDES = ("/.venv/", ".git/", "/data/", "/runs/", "/outputs/", ".cache/", "*.parquet", "/checkpoints/", "/site/")
# Ray refuses a working directory above its gRPC limit (512 MiB) after zipping it; most of that is a mistake.
UPLOAD_LIMIT_MIB = 50


@dataclass(frozen=True)
class JobEnv:
    address: str
    job_python: str
    repo: Path
    env_vars: dict[str, str] = field(default_factory=dict)

    def runtime_env(self) -> dict:
        spec: dict = {"working_dir": str(self.repo), "excludes": list(EXCLUDES)}
        if self.env_vars:
            spec["env_vars"] = dict(self.env_vars)
        return spec

    def described(self) -> str:
        names = ", ".join(sorted(self.env_vars)) or "none"
        return f"job python {self.job_python}; variables forwarded: {names}"


def forwarded_env(environ=os.environ, secret_names: tuple[str, ...] = ()) -> dict[str, str]:
    """The variables the job gets: FORWARDED when set, ``FORWARD_ENV``'s names (space or comma separated), and
    ``secret_names`` (a judge key with FORWARD_JUDGE_API_KEY=1). A name asked for and not set is an error."""
    env = {name: environ[name] for name in FORWARDED if environ.get(name)}
    asked = [name for name in environ.get("FORWARD_ENV", "").replace(",", " ").split() if name]
    missing = [name for name in (*asked, *secret_names) if name not in environ]
    if missing:
        raise ConfigError(
            f"forwarded to the job but not set here: {', '.join(missing)} (FORWARD_ENV, docs/many-nodes.md)"
        )
    env.update({name: environ[name] for name in (*asked, *secret_names)})
    return env


def job_env_from_environ(repo: Path, judge_key_envs: Callable[[], Sequence[str]] = tuple, environ=os.environ) -> JobEnv:
    """The job's settings from the submitting shell: RAY_ADDRESS, JOB_PYTHON, FORWARD_ENV,
    FORWARD_JUDGE_API_KEY=1 (``judge_key_envs()``: the variables holding the judges' keys, read only then: a
    job with no judge need not configure one)."""
    address = environ.get("RAY_ADDRESS", "")
    if not address:
        raise ConfigError("RAY_ADDRESS is not set: the cluster's job server, e.g. http://head-node:8265")
    secrets = tuple(judge_key_envs()) if environ.get("FORWARD_JUDGE_API_KEY") == "1" else ()
    job_python = environ.get("JOB_PYTHON") or environ.get("PYTHON") or sys.executable
    return JobEnv(address, job_python, repo, forwarded_env(environ, secrets))


def upload_files(repo: Path) -> list[tuple[int, str]]:
    """(size, path) of each file the working directory upload takes: EXCLUDES and what the .gitignore and
    .rayignore files list left out, as Ray does."""
    from pathspec import GitIgnoreSpec as PathSpec

    def ignored_by(directory: Path) -> PathSpec | None:
        lines = [
            line for name in (".gitignore", ".rayignore") if (directory / name).is_file()
            for line in (directory / name).read_text().splitlines()
        ]  # fmt: skip
        return PathSpec.from_lines(lines) if lines else None

    excluded = PathSpec.from_lines(EXCLUDES)
    files: list[tuple[int, str]] = []
    specs: list[tuple[Path, PathSpec]] = []
    for directory, subdirs, names in os.walk(repo):
        here = Path(directory)
        spec = ignored_by(here)
        if spec is not None:
            specs.append((here, spec))

        def skipped(path: Path, is_dir: bool) -> bool:
            relative = path.relative_to(repo).as_posix() + ("/" if is_dir else "")
            if excluded.match_file(relative):
                return True
            return any(
                path.is_relative_to(root) and s.match_file(path.relative_to(root).as_posix() + ("/" if is_dir else ""))
                for root, s in specs
            )

        subdirs[:] = [d for d in subdirs if not skipped(here / d, True)]
        for name in names:
            path = here / name
            if not skipped(path, False) and path.is_file():
                files.append((path.stat().st_size, path.relative_to(repo).as_posix()))
    return files


def check_upload(repo: Path, limit_mib: float = UPLOAD_LIMIT_MIB) -> str:
    """One line on what the upload takes; a ConfigError naming the largest files when it is above the limit."""
    files = upload_files(repo)
    total = sum(size for size, _ in files)
    if total > limit_mib * 2**20:
        largest = ", ".join(f"{path} ({size / 2**20:.1f} MiB)" for size, path in sorted(files, reverse=True)[:5])
        raise ConfigError(
            f"the job's working directory ({repo}) would upload {total / 2**20:.0f} MiB in {len(files)} files, above "
            f"{limit_mib:g} MiB; the largest: {largest}. Move data and models out of the repository (the cluster "
            "reads them from shared storage) or list them in a .rayignore file there"
        )
    return f"working directory upload: {len(files)} files, {total / 2**20:.1f} MiB ({repo})"
