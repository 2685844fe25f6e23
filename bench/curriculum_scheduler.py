"""ReferenceScheduler cost with a large curriculum, measured in one run.

    python bench/curriculum_scheduler.py [--ids 1000000] [--calls 20000] [--concurrency 64]

1. Snapshot cost: writing / loading a snapshot of `ids` levels (temp file + fsync + rename), and one
   fsync of a WAL record on this disk.
2. Round trip: `pin` alone and `pin` + `advance` (an advance returns once its WAL record is fsynced;
   advances in flight together share one fsync) from a reward worker's point of view (an async Ray actor
   calling the scheduler actor), one group at a time and `concurrency` groups in flight (latency there
   includes queueing). The scheduler is asked once per group: its time per sample is 1 / (groups/s) / n.
   Records per fsync is the group commit at work; compactions fold the WAL into a full snapshot every
   `--compact-records` records.
3. Restart: a scheduler starting over the state dir (snapshot load + WAL replay + a new base snapshot).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--compact-records", type=int, default=100_000)
    args = parser.parse_args()

    import ray

    from writing_rl.curriculum.config import CurriculumConfig
    from writing_rl.curriculum.log import LATEST, LevelTable, load_levels, read_state, save_levels
    from writing_rl.curriculum.scheduler import ReferenceScheduler

    state = Path(tempfile.mkdtemp(prefix="bench-curriculum-"))
    rng = np.random.default_rng(0)
    initial = rng.integers(0, 3, args.ids)
    table = LevelTable([str(i) for i in range(args.ids)], initial, np.full(args.ids, 4))
    start = time.perf_counter()
    save_levels(state / LATEST, table.arrays())
    write_s = time.perf_counter() - start
    start = time.perf_counter()
    load_levels(state / LATEST)
    load_s = time.perf_counter() - start
    size_mb = (state / LATEST).stat().st_size / 2**20
    fsync_ms = wal_fsync_ms(state / "fsync-probe")

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        settings = CurriculumConfig(state_dir=str(state), compact_records=args.compact_records, checkpoint_dir=None)
        scheduler = ray.remote(ReferenceScheduler).options(num_cpus=0, max_concurrency=100_000).remote(settings)
        ray.get(scheduler.snapshot.remote())  # started, snapshot loaded

        @ray.remote(num_cpus=0)
        class Worker:
            async def run(self, calls: int, concurrency: int, advance: bool, ids: int) -> list[float]:
                latencies: list[float] = []
                slots = asyncio.Semaphore(concurrency)

                async def one(i: int) -> None:
                    async with slots:
                        key = str((i * 7919) % ids)
                        t0 = time.perf_counter()
                        level = await scheduler.pin.remote(key, 4)
                        if advance:
                            await scheduler.advance.remote(key, level)
                        latencies.append(time.perf_counter() - t0)

                await asyncio.gather(*(one(i) for i in range(calls)))
                return latencies

        worker = Worker.remote()
        ray.get(worker.run.remote(1000, args.concurrency, False, args.ids))  # warm up
        rows = []
        cases = [
            ("pin, 1 in flight", 1, False),
            ("pin + advance, 1 in flight", 1, True),
            (f"pin, {args.concurrency} in flight", args.concurrency, False),
            (f"pin + advance, {args.concurrency} in flight", args.concurrency, True),
        ]
        for label, concurrency, advance in cases:
            calls = args.calls if concurrency > 1 else args.calls // 10
            before = ray.get(scheduler.stats.remote())
            start = time.perf_counter()
            latencies = np.array(ray.get(worker.run.remote(calls, concurrency, advance, args.ids)))
            wall = time.perf_counter() - start
            after = ray.get(scheduler.stats.remote())
            fsyncs = after["fsyncs"] - before["fsyncs"]
            per_fsync = f"{(after['records'] - before['records']) / fsyncs:.1f}" if fsyncs else "-"
            rows.append((label, calls / wall, *np.percentile(latencies * 1000, [50, 99]), per_fsync))
        ray.get(scheduler.flush.remote())
    finally:
        ray.shutdown()
    changed = int((read_state(state).table.arrays()[1] != initial).sum())  # snapshot + WAL, as a restart sees it
    start = time.perf_counter()
    restarted = ReferenceScheduler(settings)
    restart_s = time.perf_counter() - start
    assert int((restarted.table.arrays()[1] != initial).sum()) == changed

    print(
        f"\n{args.ids} ids: snapshot {size_mb:.1f} MB, write {write_s * 1000:.0f} ms, load {load_s * 1000:.0f} ms; "
        f"one WAL append + fsync {fsync_ms:.2f} ms"
    )
    per_sample = f"scheduler ms/sample (n={args.group_size})"
    header = f"{'scheduler calls':<28}{'groups/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'records/fsync':>15}{per_sample:>30}"
    print("\n" + header)
    for label, rate, p50, p99, per_fsync in rows:
        print(f"{label:<28}{rate:>10.0f}{p50:>9.2f}{p99:>9.2f}{per_fsync:>15}{1000 / rate / args.group_size:>30.3f}")
    print(
        f"\nevery advance is fsynced before it returns (records/fsync: advances sharing one fsync); the WAL is "
        f"folded into a {size_mb:.0f} MB snapshot every {args.compact_records} records. A restart (load, replay, "
        f"new base snapshot) took {restart_s * 1000:.0f} ms and recovered all {changed} advanced ids."
    )


def wal_fsync_ms(path: Path, appends: int = 200) -> float:
    """Milliseconds per append + fsync of one WAL-sized record on this disk."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = time.perf_counter()
        for i in range(appends):
            os.write(fd, b'{"seq":%d,"ckpt":null,"id":"123456","level":2,"refs":4}\n' % i)
            os.fsync(fd)
        return (time.perf_counter() - start) * 1000 / appends
    finally:
        os.close(fd)
        path.unlink()


if __name__ == "__main__":
    main()
