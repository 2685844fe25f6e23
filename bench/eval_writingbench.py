"""Throughput of `writing-rl eval writingbench` against a simulated critic, vs the critic's capacity, in one run.

    python bench/eval_writingbench.py [--queries 200] [--criteria 5] [--latency-ms 50] [--capacity 64]

A simulated OpenAI-compatible critic (tests/judge_server.py `critic_script`, its own process) answers each
request after a fixed latency, at most `capacity` at a time: no client can beat capacity / latency calls/s.
The evaluation (queries x criteria critic calls, each reply committed to the on-disk cache, then
scores.jsonl, the report with bootstrap intervals and the plot) runs cold with max_concurrency =
capacity, then again on the same --out (every call answered from the cache: what a resume costs).
A lean client (one aiohttp session, one POST per call, a semaphore of `capacity`, nothing else) sends the
same requests in the same run: the round-trip floor of this machine and simulated critic.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from judge_throughput import start_judge  # noqa: E402

DOMAINS = ("Academic & Engineering", "Finance & Business", "Politics & Law", "Literature & Arts", "Education")


def make_inputs(directory: Path, queries: int, criteria: int) -> tuple[Path, Path]:
    checklist = [
        {"name": f"Criterion {k}", "criteria_description": f"aspect {k} of the writing",
         **{band: f"band {band}" for band in ("1-2", "3-4", "5-6", "7-8", "9-10")}}
        for k in range(criteria)
    ]  # fmt: skip
    bench, responses = directory / "benchmark.jsonl", directory / "responses.jsonl"
    with open(bench, "w") as b, open(responses, "w") as r:
        for i in range(queries):
            query = f"Write piece {i}: a report on the river's spring flood for the town council."
            b.write(json.dumps({"index": i, "domain1": DOMAINS[i % len(DOMAINS)], "domain2": f"type {i % 7}",
                                "query": query, "checklist": checklist}) + "\n")  # fmt: skip
            text = f"Response to piece {i}." + " good" * (i % 4) + " The water rose at dawn." * 20
            r.write(json.dumps({"index": i, "response": text}) + "\n")
    return bench, responses


def lean_client_s(url: str, bench: Path, responses: Path, capacity: int) -> float:
    """Seconds for a bare aiohttp client to send every critic request once (no cache, no parsing, no outputs)."""
    from eval_benchmarks import lean_client_s as send_all

    from writing_rl.evaluation.inputs import responses_by_index
    from writing_rl.evaluation.writingbench import CriterionCall, critic_messages, read_benchmark

    queries = read_benchmark(bench)
    answers = responses_by_index(str(responses), queries)
    messages = [
        critic_messages(CriterionCall(queries[i], item, text))
        for i, text in answers.items()
        for item in queries[i].checklist
    ]
    return send_all(url, messages, capacity, model="sim-critic")




def timed(bench: Path, responses: Path, out: Path, settings) -> tuple[dict, float]:
    from writing_rl.evaluation.writingbench import run_writingbench

    start = time.perf_counter()
    run_writingbench(str(bench), str(responses), str(out), settings, progress=False)
    return json.loads((out / "report.json").read_text()), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--criteria", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="cold runs, each on a fresh --out; best kept")
    args = parser.parse_args()

    from writing_rl.judge.config import JudgeConfig
    from writing_rl.offline.judge import JudgeSettings

    latency_s = args.latency_ms / 1000
    judge_proc, judge_url = start_judge(latency_s, args.capacity, script="critic_script")
    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-wb-"))
    bench, responses = make_inputs(tmp, args.queries, args.criteria)
    calls = args.queries * args.criteria
    ideal = args.capacity / latency_s
    settings = JudgeSettings(JudgeConfig(base_url=judge_url, model="sim-critic", max_concurrency=args.capacity))
    cold: list[tuple[float, float, Path]] = []  # (judge s, total s, out)
    lean_s = float("inf")
    try:
        timed(bench, responses, tmp / "warmup", settings)
        for round_ in range(args.repeats):
            out = tmp / f"cold_{round_}"
            report, total_s = timed(bench, responses, out, settings)
            if (
                report["judge"]["calls"] != calls
                or report["failures"]["unreadable"]
                or report["failures"]["judge_error"]
            ):
                raise AssertionError(f"expected {calls} scored calls, got {report['judge']} {report['failures']}")
            cold.append((report["judge"]["wall_s"], total_s, out))
            print(f"  round {round_}: {calls / report['judge']['wall_s']:.0f} calls/s", file=sys.stderr)
            lean_s = min(lean_s, lean_client_s(judge_url, bench, responses, args.capacity))
        judge_s, total_s, out = min(cold)
        rerun, rerun_s = timed(bench, responses, out, settings)
        if rerun["judge"]["cache_hits"] != calls:
            raise AssertionError(f"the rerun should be answered from the cache, got {rerun['judge']}")
    finally:
        judge_proc.kill()

    rate = calls / judge_s
    print(
        f"\n{args.queries} queries x {args.criteria} criteria = {calls} critic calls; critic {args.latency_ms:.0f} ms x "
        f"{args.capacity} concurrent (capacity / latency = {ideal:.0f} calls/s); best of {args.repeats}\n"
    )
    print(f"{'run':<16}{'judge s':>9}{'calls/s':>9}{'vs capacity':>13}{'total s':>9}")
    print(f"{'cold':<16}{judge_s:>9.2f}{rate:>9.0f}{rate / ideal:>13.2f}{total_s:>9.2f}")
    print(f"{'rerun (cache)':<16}{rerun['judge']['wall_s']:>9.2f}{'-':>9}{'-':>13}{rerun_s:>9.2f}")
    lean = calls / lean_s
    print(f"{'lean client':<16}{lean_s:>9.2f}{lean:>9.0f}{lean / ideal:>13.2f}{'-':>9}")
    print(f"\nthroughput / (capacity / latency) = {rate / ideal:.3f} (target >= 0.9)")
    print(f"throughput / lean client (this machine's round-trip floor) = {rate / lean:.3f}")
    print(f"rerun from the cache: {total_s / rerun_s:.1f}x faster than the cold run end to end")


if __name__ == "__main__":
    main()
