"""A rate-limited judge: the adaptive client configured far above the judge's capacity vs one configured
at exactly that capacity, measured in one run.

    python bench/judge_rate_limit.py [--capacity 8] [--workers 4] [--samples 1600] [--latency-ms 50]

A simulated judge (tests/judge_server.py, in its own process) answers `capacity` requests at once after a
fixed latency and refuses every request beyond them with an immediate 429 without Retry-After (as a
rate-limited API does). `workers` processes, each with its own OpenAIJudge holding its share of
`judge.max_concurrency` (as verl's reward workers do), score `samples` judge calls together, one
SampleJudge per call. Three clients, the same judge settings otherwise (the defaults: backoff 1 s base):

  exact      max_concurrency = capacity: never refused, the throughput to match
  adaptive   max_concurrency = 8 x capacity, adaptive_concurrency=true (the default)
  fixed      max_concurrency = 8 x capacity, adaptive_concurrency=false (429s still queue again)

It prints samples/s, the ratio to `exact`, failed samples, 429s and each worker's final limit.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MESSAGES = [{"role": "user", "content": "Which response is better? [[A]] or [[B]]"}]


def start_judge(latency_s: float, capacity: int) -> tuple[subprocess.Popen, str]:
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); import judge_server as js;"
        "s = js.ScriptedJudgeServer(latency_s=float(sys.argv[2]), capacity=int(sys.argv[3]),"
        " refuse_over_capacity=True).start(); print(s.base_url, flush=True); time.sleep(10**6)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(REPO / "tests"), str(latency_s), str(capacity)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, proc.stdout.readline().strip()


def worker(url: str, total: int, share: int, adaptive: bool, calls: int, ready, start, results) -> None:
    """One reward worker: its own client with its share, ``calls`` judge calls at once."""
    from writing_rl.judge import JudgeError, OpenAIJudge, SampleJudge
    from writing_rl.judge.config import JudgeConfig

    config = JudgeConfig(base_url=url, model="sim-judge", max_concurrency=total, adaptive_concurrency=adaptive)
    judge = OpenAIJudge(config, concurrency=share)
    ready.put(True)

    async def one(sample: SampleJudge) -> bool:
        try:
            await sample.complete(MESSAGES)
            return True
        except JudgeError:
            return False

    async def run() -> tuple[float, float, int]:
        start.wait()
        began = time.perf_counter()
        ok = await asyncio.gather(*(one(SampleJudge(judge)) for _ in range(calls)))
        ended = time.perf_counter()
        await judge.close()
        return began, ended, calls - sum(ok)

    began, ended, failed = asyncio.run(run())
    stats = judge.stats
    results.put((began, ended, failed, stats.rate_limited, stats.retries, judge.concurrency_limit))


def measure(url: str, total: int, workers: int, samples: int, adaptive: bool) -> dict:
    context = multiprocessing.get_context("spawn")
    ready, start, results = context.Queue(), context.Event(), context.Queue()
    share = total // workers
    procs = [
        context.Process(target=worker, args=(url, total, share, adaptive, samples // workers, ready, start, results))
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    for _ in procs:  # every worker has imported and built its client: one common start
        ready.get(timeout=600)
    start.set()
    rows = [results.get(timeout=3600) for _ in procs]
    for proc in procs:
        proc.join()
    wall = max(r[1] for r in rows) - min(r[0] for r in rows)
    return {
        "samples/s": samples // workers * workers / wall,
        "failed": sum(r[2] for r in rows),
        "429s": sum(r[3] for r in rows),
        "retries": sum(r[4] for r in rows),
        "limits": [r[5] for r in rows],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacity", type=int, default=8, help="requests the judge serves at once")
    parser.add_argument("--workers", type=int, default=4, help="reward workers (processes), each with a client")
    parser.add_argument("--samples", type=int, default=1600, help="judge calls per client configuration")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--over", type=int, default=8, help="max_concurrency = over x capacity")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    proc, url = start_judge(args.latency_ms / 1000, args.capacity)
    try:
        runs = {
            "exact": measure(url, args.capacity, args.workers, args.samples, adaptive=True),
            "adaptive": measure(url, args.over * args.capacity, args.workers, args.samples, adaptive=True),
            "fixed": measure(url, args.over * args.capacity, args.workers, args.samples, adaptive=False),
        }
    finally:
        proc.terminate()
        proc.wait()
    ideal = args.capacity / (args.latency_ms / 1000)
    print(
        f"judge: capacity {args.capacity}, latency {args.latency_ms:g} ms, immediate 429 beyond capacity "
        f"(ideal {ideal:.0f} samples/s); {args.workers} workers, {args.samples} calls per client"
    )
    print(
        f"{'client':<10} {'max_conc':>8} {'samples/s':>10} {'x exact':>8} {'failed':>7} {'429s':>7} {'retries':>8}  limits"
    )
    exact = runs["exact"]["samples/s"]
    for name, run in runs.items():
        total = args.capacity if name == "exact" else args.over * args.capacity
        print(
            f"{name:<10} {total:>8} {run['samples/s']:>10.1f} {run['samples/s'] / exact:>8.2f} {run['failed']:>7} "
            f"{run['429s']:>7} {run['retries']:>8}  {run['limits']}"
        )


if __name__ == "__main__":
    main()
