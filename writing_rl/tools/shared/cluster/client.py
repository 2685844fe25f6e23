"""Submitting a job to the cluster's job server and following it, with Ray's own ``JobSubmissionClient``."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from pathlib import Path
from typing import Callable

from writing_rl.settings import ConfigError

TOKEN_FILE = Path.home() / ".ray" / "auth_token"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def _token() -> str | None:
    """This machine's Ray token, where Ray itself looks for it."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return os.environ["RAY_AUTH_TOKEN"].strip()
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or TOKEN_FILE)
    return path.read_text().strip() if path.is_file() else None


def _asks_for_token(address: str) -> bool:
    """Whether the job server answers 401 without a token."""
    import urllib.error
    import urllib.request

    url = address if "://" in address else f"http://{address}"
    try:
        urllib.request.urlopen(f"{url.rstrip('/')}/api/version", timeout=10).close()
    except urllib.error.HTTPError as err:
        return err.code == 401
    except (OSError, ValueError):
        return False  # unreachable: the client's own error says so
    return False


def connect(address: str):
    """A JobSubmissionClient for ``address``. A cluster with token authentication (what a `ray start` that finds
    ~/.ray/auth_token turns on) is sent this machine's token, which Ray's own CLI does only with
    RAY_AUTH_MODE=token."""
    from ray.dashboard.modules.job.sdk import JobSubmissionClient
    from ray.exceptions import AuthenticationError

    # one INFO line per .gitignore on every upload
    logging.getLogger("ray._private.runtime_env.packaging").setLevel(logging.WARNING)
    headers = None
    if _asks_for_token(address):
        token = _token()
        if token is None:
            raise ConfigError(
                f"the cluster at {address} asks for Ray's authentication token and none is set here: copy the "
                "cluster's token to ~/.ray/auth_token, or set RAY_AUTH_TOKEN (docs/many-nodes.md)"
            )
        headers = {"Authorization": f"Bearer {token}"}
    try:
        return JobSubmissionClient(address, headers=headers)
    except AuthenticationError as err:
        raise ConfigError(f"the cluster at {address} refused the authentication: {str(err).splitlines()[0]}") from None
    except ConnectionError as err:
        raise ConfigError(
            f"no Ray job server at RAY_ADDRESS={address} ({str(err).splitlines()[0]}): it is the head's dashboard "
            "address, http://HEAD:8265 by default (`ray start --head` prints it)"
        ) from None


def submit(client, entrypoint: str, runtime_env: dict, name: str) -> str:
    """The submission id; the working directory is zipped and uploaded here."""
    job_id = f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    return client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env, submission_id=job_id)


def follow(client, job_id: str, write: Callable[[str], None] = sys.stdout.write) -> None:
    """The job's output as it comes, until the job ends."""

    async def tail() -> None:
        async for lines in client.tail_job_logs(job_id):
            write(lines)
            sys.stdout.flush()

    asyncio.run(tail())


def wait(client, job_id: str, timeout_s: float = 60.0) -> str:
    """The job's terminal status (its log stream can close a moment before the status is written)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = str(client.get_job_status(job_id).value)
        if status in TERMINAL or time.monotonic() > deadline:
            return status
        time.sleep(0.5)


def commands(address: str, job_id: str) -> str:
    ray = Path(sys.executable).with_name("ray")
    ray_cli = str(ray) if ray.exists() else "ray"
    return (
        f"follow it: {ray_cli} job logs --follow --address {address} {job_id}\n"
        f"stop it:   {ray_cli} job stop --address {address} {job_id}"
    )


def run_job(client, address: str, entrypoint: str, runtime_env: dict, name: str, stop_on_interrupt: bool) -> int:
    """Submit, follow to the end; 0 when the job succeeded. Ctrl-C leaves the job running (as `ray job submit`
    does) unless ``stop_on_interrupt``."""
    job_id = submit(client, entrypoint, runtime_env, name)
    print(f"== Ray job {job_id} submitted to {address}\n{commands(address, job_id)}", flush=True)
    try:
        follow(client, job_id)
        status = wait(client, job_id)
    except KeyboardInterrupt:
        if stop_on_interrupt:
            client.stop_job(job_id)
            print(f"\n== Ctrl-C: job {job_id} asked to stop (STOP_ON_INTERRUPT=1)", file=sys.stderr)
        else:
            print(
                f"\n== Ctrl-C: job {job_id} keeps running on the cluster\n{commands(address, job_id)}", file=sys.stderr
            )
        return 130
    info = client.get_job_info(job_id)
    if status == "SUCCEEDED":
        print(f"== Ray job {job_id} SUCCEEDED", flush=True)
        return 0
    message = (info.message or "").splitlines()[0] if info.message else ""
    print(f"== Ray job {job_id} {status}: {message}", file=sys.stderr)
    return getattr(info, "driver_exit_code", None) or 1
