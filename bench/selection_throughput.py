"""Throughput of `writing-rl select` against a simulated judge, vs the ideal, and cache-hit reruns, in one run.

    python bench/selection_throughput.py [--rows 1000] [--responses-per-id 2] [--latency-ms 50] [--capacity 64]

A simulated OpenAI-compatible judge (tests/judge_server.py, its own process) answers each request after
a fixed latency, at most `capacity` at a time, so no client can beat capacity / latency calls/s. The
same selection (rows x responses x 2 orders judge calls, each reply committed to the on-disk cache)
runs:

  cold           fresh cache, max_concurrency = capacity
  cold 2x        fresh cache, max_concurrency = 2 x capacity (the server queues the excess)
  rerun (hits)   the first run's cache: every call answered from disk (what a resume costs)
  no cache       the same calls through a bare OpenAIJudge (no cache, no outputs): the client's ceiling

It prints judge calls/s and rows/s, the ratio to the ideal, the whole command's wall time (read data,
judge, rank, write parquet/CSV/PNG), and the cost of one cache hit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from judge_throughput import start_judge  # noqa: E402


def make_inputs(directory: Path, rows: int, per_id: int) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    reference = "The lamp went out at midnight. Mara climbed the stairs with a good candle and a bad feeling. " * 4
    records = []
    for i in range(rows):
        prompt = f"Write scene {i}: a lighthouse keeper hears a knock during a winter storm."
        records.append(
            {
                "data_source": ("creative", "business", "science")[i % 3],
                "prompt": [{"role": "user", "content": prompt}],
                "ability": "writing",
                "reward_model": {
                    "style": "model",
                    "ground_truth": {"prompt": prompt, "target": ["A knock.", reference], "criteria": None, "id": i},
                },
                "extra_info": {"index": i, "split": "train"},
            }
        )
    data = directory / "data.parquet"
    pq.write_table(pa.Table.from_pylist(records), data)
    responses = directory / "responses.jsonl"
    with open(responses, "w") as f:
        for i in range(rows):
            for k in range(per_id):
                quality = " good" * ((i + k) % 4) + " bad" * (i % 3)
                text = f"Response {k} to scene {i}. The knock came three times;{quality} and the keeper waited. " * 3
                f.write(json.dumps({"id": i, "response": text}) + "\n")
    return data, responses


def timed_select(data, responses, out, settings, cache, top_percent: float) -> tuple[dict, float]:
    from writing_rl.selection.job import SelectJob
    from writing_rl.selection.select import run_select

    start = time.perf_counter()
    report = run_select(
        SelectJob(
            data=data,
            responses=responses,
            out=out,
            top_percent=top_percent,
            quotas="proportional",
            cache=cache,
            progress=False,
        ),
        settings,
    )
    return report.summary, time.perf_counter() - start


def judge_without_cache(data, responses, settings) -> float:
    """Seconds to judge the same calls with a bare OpenAIJudge (no cache): the client's own ceiling."""
    import pyarrow.parquet as pq

    from writing_rl.judge import OpenAIJudge
    from writing_rl.offline.files import match_responses
    from writing_rl.offline.judge import judge_all
    from writing_rl.selection.margins import MARGIN_KINDS
    from writing_rl.selection.select import call_messages, judge_calls, read_tasks

    rows = pq.read_table(data).to_pylist()
    items, tasks = read_tasks(rows, "data_source", need_domain=False)
    calls, _ = judge_calls(items, tasks, match_responses(rows, responses), MARGIN_KINDS["win-rate"])
    judge = OpenAIJudge(settings.judge)

    async def run() -> float:
        start = time.perf_counter()
        results = await judge_all(judge, calls, call_messages(None), settings.judge.max_concurrency)
        elapsed = time.perf_counter() - start
        await judge.close()
        if any(r.verdict is None for r in results):
            raise AssertionError("the simulated judge should answer every call")
        return elapsed

    return asyncio.run(run())


def hit_cost_us(cache_path: Path, settings, samples: int = 2000) -> float:
    """Mean time of one CachedJudge.complete answered from disk (key hash + SQLite lookup)."""
    from writing_rl.judge import JudgeReply
    from writing_rl.judge.cache import CachedJudge, cache_key

    class NoJudge:
        async def complete(self, messages):  # a miss would be a bug in this measurement
            raise AssertionError("expected a cache hit")

    judge = CachedJudge.for_config(NoJudge(), settings.judge, cache_path)
    messages = [[{"role": "user", "content": f"bench hit {i} " + "x" * 2000}] for i in range(samples)]
    for m in messages:  # seed the entries
        judge._store(cache_key(judge.model, m, judge.sampling), JudgeReply("[[A]]", "stop", 0.05))

    async def read_all():
        for m in messages:
            await judge.complete(m)

    start = time.perf_counter()
    asyncio.run(read_all())
    elapsed = time.perf_counter() - start
    judge.close()
    return 1e6 * elapsed / samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--responses-per-id", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--top-percent", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of every variant, interleaved; best kept")
    args = parser.parse_args()

    from writing_rl.judge.config import JudgeConfig
    from writing_rl.offline.judge import JudgeSettings

    latency_s = args.latency_ms / 1000
    judge_proc, judge_url = start_judge(latency_s, args.capacity)
    tmp = Path(tempfile.mkdtemp(prefix="bench-select-"))
    data, responses = make_inputs(tmp, args.rows, args.responses_per_id)
    calls = args.rows * args.responses_per_id * 2
    ideal = args.capacity / latency_s

    def settings(concurrency: int) -> JudgeSettings:
        return JudgeSettings(JudgeConfig(base_url=judge_url, model="sim-judge", max_concurrency=concurrency))

    variants = (  # name, concurrency, cache file (per round); the rerun reads the round's cold cache
        ("cold", args.capacity, "cold"),
        ("cold 2x", 2 * args.capacity, "cold2x"),
        ("rerun (hits)", args.capacity, "cold"),
    )
    best: dict[str, tuple[float, float, dict]] = {}  # name -> (judge s, total s, summary)
    no_cache_s = float("inf")
    try:
        timed_select(data, responses, tmp / "warmup", settings(args.capacity), tmp / "warmup.sqlite", args.top_percent)
        for round_ in range(args.repeats):
            for name, concurrency, cache in variants:
                out = tmp / f"{name.replace(' ', '_')}_{round_}"
                summary, total_s = timed_select(
                    data, responses, out, settings(concurrency), tmp / f"{cache}_{round_}.sqlite", args.top_percent
                )
                if summary["judge_calls"] != calls:
                    raise AssertionError(f"{name}: {summary['judge_calls']} judge calls, expected {calls}")
                if name not in best or summary["wall_s"] < best[name][0]:
                    best[name] = (summary["wall_s"], total_s, summary)
                print(f"  round {round_} {name}: {calls / summary['wall_s']:.0f} calls/s", file=sys.stderr)
            no_cache_s = min(no_cache_s, judge_without_cache(data, responses, settings(args.capacity)))
            print(f"  round {round_} no cache: {calls / no_cache_s:.0f} calls/s", file=sys.stderr)
        per_hit = hit_cost_us(tmp / "hits.sqlite", settings(args.capacity))
    finally:
        judge_proc.kill()

    print(
        f"\n{args.rows} rows x {args.responses_per_id} responses x 2 orders = {calls} judge calls; judge "
        f"{args.latency_ms:.0f} ms x {args.capacity} concurrent (ideal {ideal:.0f} calls/s, "
        f"{ideal / (2 * args.responses_per_id):.0f} rows/s); best of {args.repeats}\n"
    )
    print(
        f"{'run':<14}{'concurrency':>12}{'hits':>7}{'judge s':>9}{'calls/s':>9}{'vs ideal':>10}{'total s':>9}{'rows/s':>9}"
    )
    for name, concurrency, _ in variants:
        judge_s, total_s, summary = best[name]
        rate = calls / judge_s
        print(
            f"{name:<14}{concurrency:>12}{summary['cache']['hits']:>7}{judge_s:>9.2f}{rate:>9.0f}"
            f"{rate / ideal:>10.2f}{total_s:>9.2f}{args.rows / total_s:>9.0f}"
        )
    bare = calls / no_cache_s
    print(
        f"{'no cache':<14}{args.capacity:>12}{'-':>7}{no_cache_s:>9.2f}{bare:>9.0f}{bare / ideal:>10.2f}{'-':>9}{'-':>9}"
    )
    cold_judge_s, cold_total_s, _ = best["cold"]
    print(f"\ncold with cache / bare client (same calls, no cache): {no_cache_s / cold_judge_s:.2f}")
    print(f"rerun from cache: {cold_total_s / best['rerun (hits)'][1]:.1f}x faster than the cold run end to end")
    print(f"one cache hit (key hash + SQLite lookup, 2 kB prompt): {per_hit:.0f} us")


if __name__ == "__main__":
    main()
