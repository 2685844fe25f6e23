"""Judge-reward throughput inside verl's own reward loop, ours vs baselines, measured in one run.

    python bench/judge_throughput.py [--samples 2048] [--latency-ms 50] [--capacity 64] [--workers 2]

A simulated OpenAI-compatible judge (tests/judge_server.py, in its own process) answers every request
after a fixed latency, at most `capacity` at a time. verl's RewardLoopManager (local Ray) scores the
same batch with these reward paths:

  floor       verl's `naive` manager + a fn that only sleeps the judge latency (no client at all)
  floor@cap   the same, at most the worker's share of `capacity` sleeps at a time: verl's overhead with
              the judge's capacity, the ceiling any client can reach here
  docs-style  verl's `naive` manager + a new aiohttp session per call, no limits (verl's GenRM examples)
  lean        verl's `naive` manager + one shared aiohttp session, one POST, minimal parsing
  ours        ParallelRewardManager + reward_fns.pairwise + OpenAIJudge (concurrency limit, retries,
              per-sample metrics, batch summaries all on)
  ours+groups hydra_configs/writing_rl.yaml as shipped: the reference curriculum on top of the same judge
              path, its rollouts counted per group by the scheduler (groups of 8 rollouts; ours+groups16:
              groups of 16, rollout.n=16)

It prints samples/s and ratios, the reward workers' CPU time per sample, and the workers' peak RSS
over a long run (`--rss-samples`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))


def start_judge(
    latency_s: float, capacity: int, ranking_latency_per_candidate: bool = False, script: str = "default_script"
) -> tuple[subprocess.Popen, str]:
    """The simulated judge in its own process; (process, base_url). ``script``: a script of
    tests/judge_server.py by name."""
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]);"
        "import judge_server as js; latency = float(sys.argv[2]);"
        "script = js.ranking_scales_latency(latency) if sys.argv[4] == '1' else getattr(js, sys.argv[5]);"
        "s = js.ScriptedJudgeServer(script=script, latency_s=latency, capacity=int(sys.argv[3])).start();"
        "print(s.base_url, flush=True); time.sleep(10**6)"
    )
    flag = "1" if ranking_latency_per_candidate else "0"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(REPO / "tests"), str(latency_s), str(capacity), flag, script],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, proc.stdout.readline().strip()


def make_batch(tokenizer, n: int, group_size: int = 8):
    """``n`` samples; every ``group_size`` consecutive ones are rollouts of one prompt (one uid)."""
    from writing_rl.reward_loop.batch import build_reward_batch

    prompt = "Write a short scene in which two old friends meet again at a railway station."
    reference = "They met under the clock. Neither spoke at first; then both laughed at once. " * 3
    rows = [
        {
            "data_source": "writing",
            "prompt": [{"role": "user", "content": prompt}],
            "reward_model": {
                "ground_truth": {
                    "prompt": prompt,
                    "target": [reference, reference + " Twice."],
                    "criteria": None,
                    "id": i // group_size,
                }
            },
            "extra_info": {"index": i // group_size},
        }
        for i in range(n)
    ]
    responses = [
        f"Platform {i % 17}. The train was late, which was good, because it gave Mara time to rehearse what she "
        "would say. When Tom stepped down she forgot all of it and simply took his bag. " * 2
        for i in range(n)
    ]
    return fresh_groups(build_reward_batch(tokenizer, rows, responses), group_size)


def fresh_groups(batch, group_size: int = 8):
    """New uids (same grouping), so a repeated batch is judged again, not served from finished groups."""
    run = uuid.uuid4().hex[:8]
    batch.non_tensor_batch["uid"][:] = [f"{run}-{i // group_size}" for i in range(len(batch))]
    return batch


PER_SAMPLE = [
    "reward.reward_manager.name=ParallelRewardManager",
    "reward.custom_reward_function.name=compute_score",
    "~reward.custom_reward_function.reward_kwargs.advance_threshold",
    "reward.reward_kwargs.curriculum.enable=false",
]


GROUP_SIZES = {"ours+groups": 8, "ours+groups16": 16}
VARIANTS = ("floor", "floor@cap", "docs-style", "lean", "ours", "ours+groups", "ours+groups16")


def variant_overrides(name: str, judge_url: str, latency_s: float, state_dir: str, slots: int = 32) -> list[str]:
    if name == "ours":
        return ["reward.reward_kwargs.judge.max_concurrency=64", *PER_SAMPLE]
    if name in GROUP_SIZES:  # hydra_configs/writing_rl.yaml as shipped: group rendezvous + curriculum
        return [
            "reward.reward_kwargs.judge.max_concurrency=64",
            f"reward.reward_kwargs.curriculum.state_dir={state_dir}",
            f"actor_rollout_ref.rollout.n={GROUP_SIZES[name]}",
        ]
    fn = {"floor": "sleep_only", "floor@cap": "sleep_capped", "docs-style": "docs_style", "lean": "lean"}[name]
    capped = [f"+reward.custom_reward_function.reward_kwargs.slots={slots}"] if name == "floor@cap" else []
    return [
        "reward.reward_manager.source=register",
        "reward.reward_manager.name=naive",
        f"reward.custom_reward_function.path={REPO / 'bench/baseline_fns.py'}",
        f"reward.custom_reward_function.name={fn}",
        "~reward.custom_reward_function.reward_kwargs",
        f"+reward.custom_reward_function.reward_kwargs.url={judge_url}/chat/completions",
        "+reward.custom_reward_function.reward_kwargs.model=sim-judge",
        f"+reward.custom_reward_function.reward_kwargs.latency_s={latency_s}",
        *capped,
    ]


def worker_pids() -> list[int]:
    """verl's reward workers of the Ray cluster this process started (its descendants)."""
    import psutil

    return [
        p.pid
        for p in psutil.Process().children(recursive=True)
        if "RewardLoopWorker" in " ".join(p.cmdline()) and p.is_running()
    ]


def cpu_seconds(pids: list[int]) -> float:
    import psutil

    return sum(sum(psutil.Process(p).cpu_times()[:2]) for p in pids)


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def measure(
    name: str, config, batch, warmup, repeats: int, rss_batch=None, group_size: int = 8, profile: Path | None = None
) -> dict:
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config)
    try:
        manager.compute_rm_score(fresh_groups(warmup, group_size))
        pids = worker_pids()
        rates, cpu = [], []
        for _ in range(repeats):
            cpu_before = cpu_seconds(pids)
            start = time.perf_counter()
            out = manager.compute_rm_score(fresh_groups(batch, group_size))
            rates.append(len(batch) / (time.perf_counter() - start))
            cpu.append((cpu_seconds(pids) - cpu_before) / len(batch))
        result = {
            "name": name,
            "rate": max(rates),
            "cpu_ms": 1000 * min(cpu),
            "mean_reward": float(out.batch["rm_scores"].sum(-1).mean()),
        }
        if profile is not None:  # one more batch under py-spy: the workers' CPU by stage (bench/stages.py)
            from stages import StageProfile, cpu_ms_by_stage

            cpu_before, spy = cpu_seconds(pids), StageProfile(pids, keep=profile if profile.name else None)
            manager.compute_rm_score(fresh_groups(batch, group_size))
            result["stages"] = cpu_ms_by_stage(spy.stop(), cpu_seconds(pids) - cpu_before, len(batch))
        if rss_batch is not None:
            before = [peak_rss_mb(p) for p in pids]
            manager.compute_rm_score(fresh_groups(rss_batch, group_size))
            after = [peak_rss_mb(p) for p in pids]
            result["rss"] = (max(after), max(a - b for a, b in zip(after, before)))
        return result
    finally:
        for worker in manager.reward_loop_workers:
            ray.kill(worker, no_restart=True)
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rss-samples", type=int, default=10_000)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--json", type=Path, help="also write the results and the target ratios here")
    parser.add_argument(
        "--profile",
        nargs="?",
        const=Path(),
        type=Path,
        help="one more batch per variant under py-spy: CPU by "
        "stage (bench/stages.py); a folder given keeps py-spy's raw stacks there",
    )
    args = parser.parse_args()

    import ray
    from transformers import AutoTokenizer

    from writing_rl.offline.compose import compose

    from tiny import build_tiny_tokenizer

    latency_s = args.latency_ms / 1000
    judge, judge_url = start_judge(latency_s, args.capacity)
    tmp = tempfile.mkdtemp(prefix="bench-judge-")
    tokenizer_dir = build_tiny_tokenizer(tmp, ["Platform train Mara Tom friends railway station clock"] * 50)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    batch, warmup = make_batch(tokenizer, args.samples), make_batch(tokenizer, 128)
    rss_batch = make_batch(tokenizer, args.rss_samples) if args.rss_samples else None

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    results = []
    try:
        for name in args.variants:
            config = compose(
                "writing_rl",
                [
                    f"actor_rollout_ref.model.path={tokenizer_dir}",
                    f"reward.num_workers={args.workers}",
                    f"reward.reward_kwargs.judge.base_url={judge_url}",
                    "reward.reward_kwargs.judge.model=sim-judge",
                    *variant_overrides(name, judge_url, latency_s, f"{tmp}/curriculum", args.capacity // args.workers),
                ],
            )
            keep_rss = rss_batch if name in ("lean", "ours", "ours+groups") else None
            group_size = GROUP_SIZES.get(name, 8)
            results.append(measure(name, config, batch, warmup, args.repeats, keep_rss, group_size, args.profile))
            print(f"  measured {name}: {results[-1]['rate']:.0f} samples/s", file=sys.stderr)
    finally:
        ray.shutdown()
        judge.kill()

    ratios = report(results, args, latency_s)
    if args.json:
        targets = {f"{n}/{b}": t for (n, b), t in TARGETS.items()}
        write_json(args.json, {"results": results, "ratios": ratios, "targets": targets})


# What the group path must reach in batch mode (verl hosts the judge): ours+groups over floor@cap and lean.
TARGETS = {("ours+groups", "floor@cap"): 0.9, ("ours+groups", "lean"): 0.95}


def ratio(by_name: dict, name: str, baseline: str) -> float | None:
    if name not in by_name or baseline not in by_name:
        return None
    return by_name[name]["rate"] / by_name[baseline]["rate"]


def report(results: list[dict], args, latency_s: float) -> dict[str, float]:
    """The table, the stages when profiled; returns the ratios that have targets, as "name/baseline"."""
    by_name = {r["name"]: r for r in results}
    ideal = args.capacity / latency_s
    print(
        f"\n{args.samples} samples, judge {args.latency_ms:.0f} ms x {args.capacity} concurrent "
        f"(ideal {ideal:.0f}/s), {args.workers} reward workers, best of {args.repeats}\n"
    )
    baselines = [b for b in ("floor", "floor@cap", "lean") if b in by_name]
    print(f"{'variant':<14}{'samples/s':>11}" + "".join(f"{'vs ' + b:>14}" for b in baselines) + f"{'vs ideal':>10}"
          f"{'worker CPU ms/sample':>22}")  # fmt: skip
    for r in results:
        ratios = "".join(f"{ratio(by_name, r['name'], b):>14.2f}" for b in baselines)
        print(f"{r['name']:<14}{r['rate']:>11.0f}{ratios}{r['rate'] / ideal:>10.2f}{r['cpu_ms']:>22.2f}")
    for name in ("lean", "ours", "ours+groups"):
        if "rss" in by_name.get(name, {}):
            peak, growth = by_name[name]["rss"]
            print(f"{name}: {args.rss_samples} more samples -> worker peak RSS {peak:.0f} MB (grew {growth:+.0f} MB)")
    if args.profile is not None:
        from stages import print_stages

        print_stages("batch mode", {r["name"]: r["stages"] for r in results})
    return print_targets(by_name, TARGETS)


def print_targets(by_name: dict, targets: dict) -> dict[str, float]:
    measured = {}
    print()
    for (name, baseline), target in targets.items():
        value = ratio(by_name, name, baseline)
        if value is not None:
            measured[f"{name}/{baseline}"] = value
            print(f"{name} / {baseline} = {value:.3f} (target >= {target}: {'met' if value >= target else 'NOT met'})")
    return measured


def write_json(path: Path, payload: dict) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=float))
    tmp.replace(path)


if __name__ == "__main__":
    main()
