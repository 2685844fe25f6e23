"""Where a reward worker's CPU goes, by stage: py-spy attached to verl's ``RewardLoopWorker`` processes.

``StageProfile(pids)`` runs ``py-spy record`` on each worker while a measured step runs, sampling only
the thread that holds the GIL (``--gil``: a thread waiting costs no CPU) and without pausing the workers
(``--nonblocking``); ``stop()`` reads the sampled Python stacks and assigns each to a stage by
its innermost frame that belongs to a known component (``STAGES``, first match wins, leaf to root).
A stage's CPU is its share of the samples times the workers' measured CPU time (psutil) per sample: the
sampler's own count of seconds is not exact, the measured total is. Time in Ray's C++ threads that do
not hold the GIL is spread over the stages in proportion.

Used by ``bench/streaming.py --profile`` and ``bench/judge_throughput.py --profile``.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

# (stage, path fragments of a frame's file); checked from the stack's leaf to its root, first match wins.
STAGES = (
    ("decode (tokenizer)", ("/tokenizers/", "/transformers/tokenization", "tokenization_utils")),
    ("HTTP (aiohttp)", ("/aiohttp/", "/yarl/", "/multidict/")),
    ("curriculum pin/report", ("/writing_rl/curriculum/",)),
    ("group rendezvous", ("/writing_rl/reward_loop/group/",)),
    ("metrics", ("/writing_rl/reward_loop/health/", "/writing_rl/judge/usage.py", "/writing_rl/judge/spend.py")),
    ("logging", ("/logging/", "/writing_rl/reward_loop/sample_log.py")),
    ("judge client", ("/writing_rl/judge/",)),
    ("the reward fn", ("/reward_fns/", "/writing_rl/protocols/", "/bench/baseline_fns.py", "/writing_rl/terms/")),
    ("our scoring (manager)", ("/writing_rl/",)),
    ("verl (worker, DataProto)", ("/verl/",)),
    ("Ray (calls, serialization)", ("/ray/",)),
    ("event loop", ("/asyncio/", "/selectors.py", "/concurrent/futures/", "/threading.py")),
)
# Frames that take the stage of their caller (a library called by whichever component).
TRANSPARENT = (
    "/json/",
    "/torch/",
    "/numpy/",
    "/copy.py",
    "/functools.py",
    "/typing.py",
    "/dataclasses.py",
    "/inspect.py",
    "/contextlib.py",
    "/enum.py",
    "/abc.py",
    "/pickle",
    "/collections/",
    "/random.py",
)
OTHER = "other Python"
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>.*?)(?::\d+)?\)$")
RATE_HZ = 250


def py_spy() -> str | None:
    """The py-spy executable next to this interpreter (the ``[bench]`` extra), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def stage_of(stack: str) -> str:
    """The stage of one collapsed stack (``frame;frame;...`` root first, as py-spy's raw format)."""
    for frame in reversed(stack.split(";")):
        match = FRAME.match(frame)
        path = match["file"] if match else frame
        if any(part in path for part in TRANSPARENT):
            continue
        for stage, parts in STAGES:
            if any(part in path for part in parts):
                return stage
        if "/site-packages/" not in path and "/lib/python" not in path:
            continue  # a frame with no known home (e.g. <frozen ...>): its caller decides
        return OTHER
    return OTHER


class StageProfile:
    """py-spy on each of ``pids`` from construction to ``stop()``."""

    def __init__(self, pids: list[int], rate_hz: int = RATE_HZ, keep: Path | None = None):
        executable = py_spy()
        if executable is None:
            raise SystemExit("--profile needs py-spy: pip install -e '.[bench]' (or pip install py-spy)")
        self.rate_hz = rate_hz
        self.keep = keep  # a folder the raw stacks are left in (py-spy's collapsed format), for a closer look
        self.folder = Path(tempfile.mkdtemp(prefix="stages-", dir=keep))
        self.outputs = [self.folder / f"{pid}.txt" for pid in pids]
        self.spies = [
            subprocess.Popen(
                [
                    executable,
                    "record",
                    "--pid",
                    str(pid),
                    "--rate",
                    str(rate_hz),
                    "--format",
                    "raw",
                    "--full-filenames",
                    "--nonblocking",
                    "--gil",
                    "--output",
                    str(out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid, out in zip(pids, self.outputs)
        ]

    def stop(self) -> Counter:
        """Samples per stage over every worker."""
        for spy in self.spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        for spy in self.spies:
            spy.wait(timeout=120)
        samples: Counter = Counter()
        for out in self.outputs:
            for line in out.read_text().splitlines() if out.exists() else []:
                stack, _, count = line.rpartition(" ")
                samples[stage_of(stack)] += int(count)
        if self.keep is None:
            shutil.rmtree(self.folder, ignore_errors=True)
        return samples


def cpu_ms_by_stage(samples: Counter, worker_cpu_s: float, n: int) -> dict[str, float]:
    """Each stage's share of the measured worker CPU, in ms per scored sample."""
    total = sum(samples.values()) or 1
    return {stage: 1000 * worker_cpu_s / n * count / total for stage, count in samples.items()}


def print_stages(title: str, profiles: dict[str, dict[str, float]]) -> None:
    """One column per variant, one row per stage (ms of worker CPU per sample)."""
    if not profiles:
        return
    names = list(profiles)
    order = [stage for stage, _ in STAGES] + [OTHER]
    print(f"\n{title}: worker CPU ms per sample by stage (measured CPU split by py-spy's samples, {RATE_HZ} Hz)")
    print(f"{'stage':<36}" + "".join(f"{name:>14}" for name in names))
    for stage in order:
        if any(profiles[name].get(stage, 0) >= 0.005 for name in names):
            print(f"{stage:<36}" + "".join(f"{profiles[name].get(stage, 0):>14.2f}" for name in names))
    print(f"{'total':<36}" + "".join(f"{sum(profiles[name].values()):>14.2f}" for name in names))
