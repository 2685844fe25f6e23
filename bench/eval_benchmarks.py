"""Throughput of the judge-benchmark kinds of `writing-rl eval` against a lean client on the same judge, in one run.

    python bench/eval_benchmarks.py [--rows 1500] [--latency-ms 50] [--capacity 64] [--kinds judgebench,rmbench]

A simulated OpenAI-compatible judge (tests/judge_server.py `benchmark_script`, its own process) answers each request
after a fixed latency, at most `capacity` at a time. Each kind runs cold on rows made up in its benchmark's own
format (max_concurrency = capacity; every reply committed to the on-disk cache, then the scoring, the bootstrap
intervals, the reports and the plot), best of `--repeats`. The lean client (one aiohttp session, one POST per call,
a semaphore of `capacity`, nothing else) then sends the very requests that kind sent, recorded as the kind built
them: the round-trip floor of this machine and judge. The bar: kind / lean >= 0.95.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from judge_throughput import start_judge  # noqa: E402

ANSWER = "The river rose at dawn and the town moved its boats uphill. " * 6


def judgebench_rows(directory: Path, rows: int) -> dict:
    sources = ("mmlu-pro-law", "livebench-reasoning", "livebench-math", "livecodebench")
    path = directory / "judgebench.jsonl"
    with open(path, "w") as f:
        for i in range(rows):
            a, b = ANSWER + " good" * (i % 3), ANSWER + " bad" * (i % 2)
            f.write(json.dumps({"pair_id": f"p{i}", "original_id": i, "source": sources[i % 4],
                                "question": f"Question {i}: when did the river rise?", "response_model": "m",
                                "response_A": a, "response_B": b, "label": "A>B" if i % 2 else "B>A"}) + "\n")  # fmt: skip
    return {"data": str(path)}


def rmbench_rows(directory: Path, rows: int) -> dict:
    domains = ("chat", "math", "code", "safety-refuse", "safety-response")
    styled = [ANSWER, ANSWER + " good", ANSWER + " **good**"]
    items = [
        {"id": i, "prompt": f"Prompt {i}", "domain": domains[i % len(domains)],
         "chosen": [s + " good" for s in styled], "rejected": [s + " bad" for s in styled]}
        for i in range(max(1, rows // 9))  # 18 calls per prompt: about `rows` * 2 calls in all
    ]  # fmt: skip
    path = directory / "rmbench.json"
    path.write_text(json.dumps(items))
    return {"data": str(path)}


def rewardbench_rows(directory: Path, rows: int) -> dict:
    """RewardBench 2 rows (one chosen, three rejected) rated one answer a call, with a Ties group per 20 rows."""
    from writing_rl.evaluation.rewardbench import RatingOptions

    subsets = ("Factuality", "Precise IF", "Math", "Safety", "Focus")
    items = [
        {"id": f"r{i}", "subset": subsets[i % 5], "prompt": f"Prompt {i}", "chosen": [ANSWER + " good"],
         "rejected": [ANSWER + f" bad {k}" for k in range(3)]}
        for i in range(max(1, rows // 2))  # 4 calls a row: about `rows` * 2 calls
    ]  # fmt: skip
    for n in range(max(1, rows // 20)):
        items += [
            {"id": f"ref:{n}", "subset": "Ties", "prompt": f"Name prime {n}.", "chosen": [f"{n} is 2"],
             "rejected": [f"{n} is 4"]},
            {"id": f"tied:{n}", "subset": "Ties", "prompt": f"Name prime {n}.", "chosen": [f"{n} is 2", f"{n} is 3"],
             "rejected": [f"{n} is 4", f"{n} is 6"]},
        ]  # fmt: skip
    path = directory / "rewardbench2.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return {"data": str(path), "version": 2, "genrm": "rated", "rating": RatingOptions()}


def arena_hard_rows(directory: Path, rows: int) -> dict:
    """Arena-Hard v2 questions and two answer files (the policy, the baseline): two games a question."""
    questions, policy, baseline = directory / "question.jsonl", directory / "policy.jsonl", directory / "base.jsonl"
    n = max(1, rows)
    questions.write_text("".join(json.dumps({"uid": f"q{i}", "category": "creative_writing",
                                             "subcategory": "creative_writing", "prompt": f"Write story {i}."}) + "\n"
                                 for i in range(n)))  # fmt: skip
    for path, model, extra in ((policy, "policy", " good"), (baseline, "gemini-2.0-flash-001", "")):
        path.write_text("".join(json.dumps({"uid": f"q{i}", "ans_id": f"{model}-{i}", "model": model, "messages": [
            {"role": "user", "content": f"Write story {i}."},
            {"role": "assistant", "content": {"answer": ANSWER + extra}}]}) + "\n" for i in range(n)))  # fmt: skip
    return {"questions": str(questions), "answers": [str(policy)], "baselines": [str(baseline)]}


# kind: (its work module, its run function's name, the inputs maker)
BENCHED: dict[str, tuple[str, str, Callable[[Path, int], dict]]] = {
    "judgebench": ("writing_rl.evaluation.judgebench", "run_judgebench", judgebench_rows),
    "rmbench": ("writing_rl.evaluation.rmbench", "run_rmbench", rmbench_rows),
    "rewardbench": ("writing_rl.evaluation.rewardbench", "run_rewardbench", rewardbench_rows),
    "arena-hard": ("writing_rl.evaluation.arenahard", "run_arena_hard", arena_hard_rows),
}


class Recorder:
    """Wraps a work module's ``judge_jobs``: the messages of every job it is given, as the kind built them."""

    def __init__(self, module):
        self.module, self.real, self.messages = module, module.judge_jobs, []

    def __enter__(self) -> Recorder:
        def recording(settings, jobs, build, *args, **kwargs):
            self.messages += [build(job) for job in jobs]
            return self.real(settings, jobs, build, *args, **kwargs)

        self.module.judge_jobs = recording
        return self

    def __exit__(self, *_) -> None:
        self.module.judge_jobs = self.real


def lean_client_s(url: str, messages: list, capacity: int, model: str = "sim-judge") -> float:
    """Seconds for a bare aiohttp client to send every request once (no cache, no parsing, no outputs)."""
    import aiohttp

    bodies = [json.dumps({"model": model, "messages": m}) for m in messages]

    async def run() -> float:
        slots = asyncio.Semaphore(capacity)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def post(body: str) -> None:
                async with slots, session.post(f"{url}/chat/completions", data=body, headers=JSON) as reply:
                    await reply.read()

            start = time.perf_counter()
            await asyncio.gather(*(post(b) for b in bodies))
            return time.perf_counter() - start

    return asyncio.run(run())


JSON = {"Content-Type": "application/json"}


def run_kind(kind: str, inputs: dict, out: Path, settings) -> tuple[dict, float, list]:
    """(report, seconds end to end, the messages it sent)."""
    module_name, function, _ = BENCHED[kind]
    module = importlib.import_module(module_name)
    with Recorder(module) as recorder:
        start = time.perf_counter()
        getattr(module, function)(out_dir=str(out), settings=settings, progress=False, **inputs)
        took = time.perf_counter() - start
    return json.loads((out / "report.json").read_text()), took, recorder.messages


def bench_kind(kind: str, tmp: Path, rows: int, url: str, capacity: int, repeats: int) -> dict:
    from writing_rl.judge.config import JudgeConfig
    from writing_rl.offline.judge import JudgeSettings

    settings = JudgeSettings(JudgeConfig(base_url=url, model="sim-judge", max_concurrency=capacity))
    inputs = BENCHED[kind][2](tmp, rows)
    run_kind(kind, inputs, tmp / f"{kind}-warmup", settings)
    best_judge_s, best_total_s, lean_s, calls = float("inf"), float("inf"), float("inf"), 0
    for round_ in range(repeats):
        report, total_s, messages = run_kind(kind, inputs, tmp / f"{kind}-cold-{round_}", settings)
        calls = report["judge"]["calls"]
        if calls != len(messages) or report["judge"]["cache_hits"]:
            raise AssertionError(f"{kind}: expected {len(messages)} cold calls, got {report['judge']}")
        best_judge_s, best_total_s = min(best_judge_s, report["judge"]["wall_s"]), min(best_total_s, total_s)
        lean_s = min(lean_s, lean_client_s(url, messages, capacity))
    return {"kind": kind, "calls": calls, "judge_s": best_judge_s, "total_s": best_total_s, "lean_s": lean_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1500, help="about this many pairs (calls / 2) per kind")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="cold runs per kind; best kept")
    parser.add_argument("--kinds", default=",".join(BENCHED), help=f"a comma-separated subset of {', '.join(BENCHED)}")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := [k for k in kinds if k not in BENCHED]:
        parser.error(f"unknown kinds {unknown}; known: {', '.join(BENCHED)}")

    latency_s = args.latency_ms / 1000
    judge_proc, url = start_judge(latency_s, args.capacity, script="benchmark_script")
    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-benchmarks-"))
    try:
        results = [bench_kind(k, tmp, args.rows, url, args.capacity, args.repeats) for k in kinds]
    finally:
        judge_proc.kill()
    ideal = args.capacity / latency_s
    print(f"\njudge {args.latency_ms:.0f} ms x {args.capacity} concurrent (capacity / latency = {ideal:.0f} calls/s); "
          f"best of {args.repeats}\n")  # fmt: skip
    print(f"{'kind':<14}{'calls':>7}{'judge s':>9}{'calls/s':>9}{'lean /s':>9}{'vs lean':>9}{'vs capacity':>13}"
          f"{'total s':>9}")  # fmt: skip
    for r in results:
        rate, lean = r["calls"] / r["judge_s"], r["calls"] / r["lean_s"]
        print(f"{r['kind']:<14}{r['calls']:>7}{r['judge_s']:>9.2f}{rate:>9.0f}{lean:>9.0f}{rate / lean:>9.2f}"
              f"{rate / ideal:>13.2f}{r['total_s']:>9.2f}")  # fmt: skip
    print("\nvs lean: the kind's judge phase against the lean client on the same requests (target >= 0.95)")


if __name__ == "__main__":
    main()
