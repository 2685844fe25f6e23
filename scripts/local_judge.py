"""A judge served on this machine for scripts/tiny_train.py: ``writing-rl serve-judge --engine hf`` on a local
model folder (JUDGE=smollm2: SmolLM2-135M-Instruct from ``writing-rl model smollm2``), in a process of its own on a
free port of 127.0.0.1, waited for until its replica is ready and stopped with its Ray when the run ends."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 300.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServedJudge:
    """``serve-judge`` on ``model_dir`` under the name ``name``; its output in ``log``."""

    def __init__(self, model_dir: str | Path, name: str, log: Path, *options: str):
        """``options``: more of serve-judge's options, e.g. ``--max-batch-size 16``."""
        self.name, self.port = name, free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        command = [sys.executable, "-m", "writing_rl.tools.cli", "serve-judge", "--engine", "hf", "--model",
                   str(model_dir), "--served-model-name", name, "--host", "127.0.0.1", "--port", str(self.port),
                   *options]  # fmt: skip
        env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}  # a Ray of its own
        self._log = log.open("w")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)  # fmt: skip
        try:
            self._wait_ready(log)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"serve-judge exited with {self.process.returncode} before it was ready (log: {log})"
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as reply:
                    if json.load(reply).get("ready"):
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(1)
        raise RuntimeError(f"serve-judge was not ready within {START_TIMEOUT_S:.0f}s (log: {log})")

    def stop(self) -> None:
        """SIGTERM to its process group (the server removes its replicas and stops its Ray), SIGKILL if it lingers."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        try:  # what it started and left behind (its Ray, when it was killed before stopping it)
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._log.close()

    def __enter__(self) -> ServedJudge:
        return self

    def __exit__(self, *_) -> None:
        self.stop()
