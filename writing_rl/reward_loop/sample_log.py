"""``reward.reward_kwargs.sample_log_dir``: every reward a worker returns to verl, one JSON line per
rollout, for reading a reward config's behaviour sample by sample (and for checking what verl's trainer
made of it: tests/test_trainer_cpu.py compares each step's score metric with these lines).

Each worker appends to its own file, ``rewards-<host>-<pid>.jsonl``: a line is written whole in one
``write`` to a file opened for appending, so a reader never sees half a record from a live worker.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from pathlib import Path


class SampleLog:
    def __init__(self, directory: str):
        path = Path(directory).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / f"rewards-{socket.gethostname()}-{os.getpid()}.jsonl"
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (open for the worker's life)

    def write(self, uid, prompt: str, response: str, reward: float, info: dict) -> None:
        record = {"time": time.time(), "uid": None if uid is None else str(uid), "reward": reward}
        record.update({k: v for k, v in info.items() if isinstance(v, (int, float)) and math.isfinite(v)})
        record.update(prompt=prompt, response=response)
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
