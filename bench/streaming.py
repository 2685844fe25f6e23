"""Judge rewards in verl's streaming reward mode, ours vs verl's floor and a lean client, in one run.

    python bench/streaming.py [--samples 2048] [--latency-ms 50] [--capacity 64] [--workers 2]
                              [--interval-ms 1.0] [--variants floor lean ours writing_rl8 ...]

verl 0.9.1 scores rewards in streaming mode whenever it does not host the judge itself: its agent loop
sends each finished rollout *alone* to a *random* reward worker
(``random.choice(reward_loop_worker_handles).compute_score.remote(data)``, one sample in ``data``). This
bench builds verl's own ``RewardLoopWorker`` actors (through ``RewardLoopManager``) and calls them exactly
so, one ``compute_score.remote`` per sample, in two arrival patterns:

  burst       every sample sent at once, in shuffled order (members of a group interleaved)
  spread      one sample every ``--interval-ms``, in shuffled order (members of a group far apart, as
              rollouts finishing over a step)
  continuous  (``--continuous-s`` > 0) verl's asynchronous trainers: ``--rate`` samples a second for
              ``--continuous-s`` seconds without pause, step after step (each step's order shuffled, a new
              step sent as soon as the last one is, so steps overlap at the workers). Besides samples/s it
              reports the reward latency that matters there: from a group's last rollout sent to its last
              reward back (p50 / p99), and p99 over the per-sample path's (``ours``) at the same load

Variants (the simulated judge, tests/judge_server.py in its own process, answers after ``--latency-ms``,
at most ``--capacity`` at a time; pairwise calls as in bench/judge_throughput.py):

  floor          verl's ``naive`` manager + a fn that only sleeps the judge latency (no client at all)
  lean           verl's ``naive`` manager + one shared aiohttp session, one POST, minimal parsing
  ours           ParallelRewardManager + reward_fns.pairwise (per sample, no groups)
  writing_rl8/16 hydra_configs/writing_rl.yaml as shipped (group rendezvous + reference curriculum), n=8/16
  brpo8/16       hydra_configs/brpo.yaml (both orders: 2(n-1) calls per group)
  ranking8/16    hydra_configs/grrm_mt_grpo.yaml (one GenRM call per group; its reply takes latency x n/2)

A step's time is from the first send to the last reward (the trainer waits for every reward). Printed:
samples/s per variant and pattern, ratios to floor and lean measured in the same pattern in this run,
judge calls per sample, and worker CPU per sample.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from stages import StageProfile, cpu_ms_by_stage, print_stages  # noqa: E402

from judge_throughput import cpu_seconds, start_judge, variant_overrides, worker_pids, write_json  # noqa: E402

ROLES = {"RewardLoopWorker": "workers", "GroupCollector": "collector", "ReferenceScheduler": "scheduler"}


def cpu_by_role() -> dict[str, float]:
    """CPU seconds so far of every process of this run, by role: reward workers, collector, scheduler,
    the simulated judge, this driver and Ray's own (raylet, GCS, ...)."""
    import psutil

    me = psutil.Process()
    roles = {"driver": sum(me.cpu_times()[:2])}
    for proc in me.children(recursive=True):
        try:
            cmd, cpu = " ".join(proc.cmdline()), sum(proc.cpu_times()[:2])
        except psutil.Error:
            continue
        role = next((r for k, r in ROLES.items() if k in cmd), "judge" if "judge_server" in cmd else "ray")
        roles[role] = roles.get(role, 0.0) + cpu
    return roles


PATTERNS = ("burst", "spread")
# variant -> (overlay, rollout.n, extra overrides)
# Every built-in reward term on (reward.reward_kwargs.terms): what the terms cost per sample.
TERMS_ON = tuple(
    f"reward.reward_kwargs.terms.{term}.weight=0.1"
    for term in ("overlong", "length", "repetition", "format", "language")
)
GROUP_VARIANTS = {
    "writing_rl8": ("writing_rl", 8, ()),
    "writing_rl8_terms": ("writing_rl", 8, TERMS_ON),
    "writing_rl16": ("writing_rl", 16, ()),
    "brpo8": ("brpo", 8, ()),
    "brpo16": ("brpo", 16, ()),
    "ranking8": ("grrm_mt_grpo", 8, ()),
    "ranking16": ("grrm_mt_grpo", 16, ()),
}
BASELINES = ("floor", "lean", "ours")
ALL_VARIANTS = BASELINES + tuple(GROUP_VARIANTS)


def rows_and_texts(n: int, group_size: int) -> tuple[list[dict], list[str]]:
    prompt = "Write a short scene in which two old friends meet again at a railway station."
    reference = "They met under the clock. Neither spoke at first; then both laughed at once. " * 3
    rows, texts = [], []
    for i in range(n):
        group = i // group_size
        rows.append(
            {
                "data_source": "writing",
                "prompt": [{"role": "user", "content": f"{prompt} (take {group})"}],
                "reward_model": {
                    "ground_truth": {
                        "prompt": f"{prompt} (take {group})",
                        "target": [reference, reference + " Twice."],
                        "criteria": None,
                        "id": group,
                    }
                },
                "extra_info": {"index": group},
            }
        )
        texts.append(
            f"Platform {i % group_size}. The train was late, which was good, because it gave Mara time to "
            "rehearse. When Tom stepped down she forgot all of it and simply took his bag. " * 2 + "good " * (i % 3)
        )
    return rows, texts


class Step:
    """The single-sample DataProtos of one step; ``renew`` gives every group a new uid (a new step)."""

    def __init__(self, tokenizer, samples: int, group_size: int):
        from writing_rl.reward_loop.batch import streaming_samples

        rows, texts = rows_and_texts(samples, group_size)
        self.group_size = group_size
        self.items = streaming_samples(tokenizer, rows, texts, [str(i // group_size) for i in range(samples)])

    def renew(self) -> list:
        run = uuid.uuid4().hex[:8]
        for i, item in enumerate(self.items):
            item.non_tensor_batch["uid"][0] = f"{run}-{i // self.group_size}"
        return self.items


async def stream(handles, items: list, pattern: str, interval_s: float, rng: random.Random) -> list[dict]:
    """Send each item alone to a random worker, as verl's agent loop does; the results, in send order."""
    order = list(range(len(items)))
    rng.shuffle(order)
    calls = []
    for number, index in enumerate(order):
        calls.append(asyncio.ensure_future(_call(rng.choice(handles), items[index])))
        if pattern == "spread" and number + 1 < len(order):
            await asyncio.sleep(interval_s)
    return await asyncio.gather(*calls)


async def _call(handle, item):
    return await handle.compute_score.remote(item)


async def continuous(handles, step: Step, rate: float, duration_s: float, rng: random.Random) -> dict:
    """``rate`` samples a second for ``duration_s``, steps back to back; samples/s, group latencies."""
    sent: dict[str, float] = {}  # uid -> when its last rollout was sent
    back: dict[str, float] = {}  # uid -> when its last reward came back
    calls = []

    async def one(reward, uid: str):
        output = await reward
        back[uid] = time.perf_counter()
        return output

    start = time.perf_counter()
    number = 0
    while time.perf_counter() - start < duration_s:
        items = step.renew()
        order = list(range(len(items)))
        rng.shuffle(order)
        for index in order:
            uid = str(items[index].non_tensor_batch["uid"][0])
            delay = start + number / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent[uid] = time.perf_counter()
            # Sent now (the call takes its argument now: the next step renews these items' uids).
            calls.append(asyncio.ensure_future(one(rng.choice(handles).compute_score.remote(items[index]), uid)))
            number += 1
    outputs = await asyncio.gather(*calls)
    latencies = sorted(back[uid] - sent[uid] for uid in sent)
    return {
        "rate": len(calls) / (max(back.values()) - start),
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "outputs": outputs,
    }


def judge_calls(judge_url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(judge_url.replace("/v1", "/stats")) as resp:
        return int(resp.read())


def config_for(name: str, tokenizer_dir, judge_url: str, latency_s: float, args, state_dir: str):
    """The variant's config; the clients may keep as many requests in flight as the judge serves."""
    from writing_rl.offline.compose import compose

    common = [
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        f"reward.num_workers={args.workers}",
        f"reward.reward_kwargs.judge.base_url={judge_url}",
        "reward.reward_kwargs.judge.model=sim-judge",
        f"reward.reward_kwargs.judge.max_concurrency={args.capacity}",
    ]
    if name in GROUP_VARIANTS:
        overlay, n, terms = GROUP_VARIANTS[name]
        extra = [f"actor_rollout_ref.rollout.n={n}", *terms]
        if overlay == "writing_rl":
            extra.append(f"reward.reward_kwargs.curriculum.state_dir={state_dir}/{uuid.uuid4().hex[:6]}")
        return compose(overlay, common + extra), n
    variant = [o for o in variant_overrides(name, judge_url, latency_s, state_dir) if "max_concurrency" not in o]
    return compose("writing_rl", common + variant), 8


def measure(name, config, step: Step, warmup: Step, judge_url, args) -> dict:
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config)
    handles = manager.reward_loop_workers
    rng = random.Random(0)
    result = {"name": name}
    try:
        for pattern in args.patterns:
            asyncio.run(stream(handles, warmup.renew(), "burst", 0, rng))
            pids = worker_pids()
            best = None
            for _ in range(args.repeats):
                items = step.renew()
                calls_before, cpu_before, roles_before = judge_calls(judge_url), cpu_seconds(pids), cpu_by_role()
                start = time.perf_counter()
                outputs = asyncio.run(stream(handles, items, pattern, args.interval_ms / 1000, rng))
                wall = time.perf_counter() - start
                run = {
                    "rate": len(items) / wall,
                    "calls": (judge_calls(judge_url) - calls_before) / len(items),
                    "cpu_ms": 1000 * (cpu_seconds(pids) - cpu_before) / len(items),
                    "failed": sum(int(o["reward_extra_info"].get("judge_error", 0)) for o in outputs),
                    "partial": sum(int(o["reward_extra_info"].get("partial_group", 0)) for o in outputs),
                    "roles": {
                        role: 1000 * (cpu - roles_before.get(role, 0.0)) / len(items)
                        for role, cpu in cpu_by_role().items()
                    },
                }
                if best is None or run["rate"] > best["rate"]:
                    best = run
            if args.profile:
                best["stages"] = profile_stages(handles, step, pattern, args, rng)
            result[pattern] = best
            print(f"  {name} {pattern}: {best['rate']:.0f} samples/s", file=sys.stderr)
        if args.continuous_s > 0:
            asyncio.run(stream(handles, warmup.renew(), "burst", 0, rng))
            result["continuous"] = measure_continuous(handles, step, judge_url, args, rng)
            print(f"  {name} continuous: p99 {result['continuous']['p99'] * 1000:.0f} ms", file=sys.stderr)
        return result
    finally:
        for worker in handles:
            ray.kill(worker, no_restart=True)
        for actor in ray.util.list_named_actors():
            if actor.startswith("writing_rl_"):
                try:
                    ray.kill(ray.get_actor(actor), no_restart=True)
                except ValueError:  # gone with the workers that owned it
                    pass
        time.sleep(1)


def profile_stages(handles, step: Step, pattern: str, args, rng: random.Random) -> dict[str, float]:
    """One more step with py-spy on the workers: their CPU ms per sample by stage (bench/stages.py)."""
    pids = worker_pids()
    items = step.renew()
    cpu_before, profile = cpu_seconds(pids), StageProfile(pids, keep=args.profile_dir)
    asyncio.run(stream(handles, items, pattern, args.interval_ms / 1000, rng))
    samples = profile.stop()
    return cpu_ms_by_stage(samples, cpu_seconds(pids) - cpu_before, len(items))


def measure_continuous(handles, step: Step, judge_url: str, args, rng: random.Random) -> dict:
    calls_before, pids = judge_calls(judge_url), worker_pids()
    cpu_before = cpu_seconds(pids)
    run = asyncio.run(continuous(handles, step, args.rate, args.continuous_s, rng))
    outputs = run.pop("outputs")
    run["calls"] = (judge_calls(judge_url) - calls_before) / len(outputs)
    run["cpu_ms"] = 1000 * (cpu_seconds(pids) - cpu_before) / len(outputs)
    run["failed"] = sum(int(o["reward_extra_info"].get("judge_error", 0)) for o in outputs)
    run["partial"] = sum(int(o["reward_extra_info"].get("partial_group", 0)) for o in outputs)
    run["samples"] = len(outputs)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interval-ms", type=float, default=1.0, help="spread: one sample every this many ms")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--patterns", nargs="*", default=list(PATTERNS), choices=PATTERNS)
    parser.add_argument("--continuous-s", type=float, default=0.0, help="continuous pattern: seconds (0: off)")
    parser.add_argument("--rate", type=float, default=250.0, help="continuous pattern: samples sent per second")
    parser.add_argument("--variants", nargs="+", default=list(ALL_VARIANTS), choices=ALL_VARIANTS)
    parser.add_argument("--profile", action="store_true", help="one more step per pattern under py-spy: CPU by stage")
    parser.add_argument("--profile-dir", type=Path, help="keep py-spy's raw stacks here (with --profile)")
    parser.add_argument("--json", type=Path, help="also write the results and the target ratios here")
    args = parser.parse_args()

    import ray
    from transformers import AutoTokenizer

    from tiny import build_tiny_tokenizer

    latency_s = args.latency_ms / 1000
    judge, judge_url = start_judge(latency_s, args.capacity, ranking_latency_per_candidate=True)
    tmp = tempfile.mkdtemp(prefix="bench-streaming-")
    tokenizer_dir = build_tiny_tokenizer(tmp, ["Platform train Mara Tom friends railway station clock good"] * 50)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    results = []
    try:
        for name in args.variants:
            config, n = config_for(name, tokenizer_dir, judge_url, latency_s, args, f"{tmp}/curriculum")
            step, warmup = Step(tokenizer, args.samples, n), Step(tokenizer, 16 * n, n)
            results.append(measure(name, config, step, warmup, judge_url, args))
    finally:
        ray.shutdown()
        judge.kill()

    ratios = report(results, args)
    if args.json:
        targets = {f"{n}/{b}/{p}": t for (n, b), t in TARGETS.items() for p in args.patterns}
        write_json(args.json, {"results": results, "ratios": ratios, "targets": targets})


# What the group path must reach in streaming mode: Writing-RL as shipped over verl's floor and the lean client.
TARGETS = {("writing_rl8", "floor"): 0.9, ("writing_rl8", "lean"): 0.95}


def report(results: list[dict], args) -> dict[str, float]:
    """The table (and the stages when profiled); returns the ratios that have targets, as
    "name/baseline/pattern"."""
    by_name = {r["name"]: r for r in results}
    print(
        f"\nstreaming mode: {args.samples} samples, one compute_score call each on a random one of {args.workers} "
        f"reward workers; judge {args.latency_ms:.0f} ms x {args.capacity} concurrent; spread = one sample every "
        f"{args.interval_ms:g} ms; best of {args.repeats}\n"
    )
    header = f"{'variant':<18}{'pattern':<8}{'samples/s':>10}{'vs floor':>9}{'vs lean':>8}{'calls/sample':>13}"
    print(header + f"{'worker CPU ms':>14}{'failed':>7}{'partial':>8}  all CPU ms/sample by role")
    for r in results:
        for pattern in args.patterns:
            m = r[pattern]
            floor = by_name.get("floor", {}).get(pattern, {}).get("rate")
            lean = by_name.get("lean", {}).get(pattern, {}).get("rate")
            vs_floor = f"{m['rate'] / floor:.2f}" if floor else "-"
            vs_lean = f"{m['rate'] / lean:.2f}" if lean else "-"
            print(
                f"{r['name']:<18}{pattern:<8}{m['rate']:>10.0f}{vs_floor:>9}{vs_lean:>8}{m['calls']:>13.2f}"
                f"{m['cpu_ms']:>14.2f}{m['failed']:>7}{m['partial']:>8}  "
                + " ".join(f"{role} {ms:.2f}" for role, ms in sorted(m["roles"].items()))
            )
    if args.profile:
        for pattern in args.patterns:
            print_stages(f"streaming, {pattern}", {r["name"]: r[pattern]["stages"] for r in results})
    if args.continuous_s > 0:
        report_continuous(results, args)
    measured = {}
    for (name, baseline), target in TARGETS.items():
        for pattern in args.patterns:
            ours, base = by_name.get(name, {}).get(pattern), by_name.get(baseline, {}).get(pattern)
            if ours and base:
                value = measured[f"{name}/{baseline}/{pattern}"] = ours["rate"] / base["rate"]
                verdict = "met" if value >= target else "NOT met"
                print(f"{name} / {baseline}, {pattern}: {value:.3f} (target >= {target}: {verdict})")
    return measured


def report_continuous(results: list[dict], args) -> None:
    by_name = {r["name"]: r["continuous"] for r in results}
    print(
        f"\ncontinuous: {args.rate:g} samples/s sent for {args.continuous_s:g} s, steps of {args.samples} back to "
        "back; latency: a group's last rollout sent -> its last reward back"
    )
    print(
        f"{'variant':<18}{'samples/s':>10}{'vs floor':>9}{'vs lean':>8}{'p50 ms':>8}{'p99 ms':>8}{'p99 vs ours':>12}"
        f"{'calls/sample':>13}{'worker CPU ms':>14}{'failed':>7}{'partial':>8}"
    )
    for name, m in by_name.items():
        floor, lean, ours = (by_name.get(k, {}) for k in ("floor", "lean", "ours"))

        def ratio(other: dict, key: str, m=m) -> str:
            return f"{m[key] / other[key]:.2f}" if other else "-"

        print(
            f"{name:<18}{m['rate']:>10.0f}{ratio(floor, 'rate'):>9}{ratio(lean, 'rate'):>8}{m['p50'] * 1000:>8.0f}"
            f"{m['p99'] * 1000:>8.0f}{ratio(ours, 'p99'):>12}{m['calls']:>13.2f}{m['cpu_ms']:>14.2f}"
            f"{m['failed']:>7}{m['partial']:>8}"
        )


if __name__ == "__main__":
    main()
