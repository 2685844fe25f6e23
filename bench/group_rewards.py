"""Group rewards per training step, measured in one run inside verl's own reward loop.

    python bench/group_rewards.py [--prompts 16] [--sizes 4 8 16] [--latency-ms 50] [--capacity 64]

verl's RewardLoopManager (local Ray, 2 reward workers, colocated path: the batch is chunked over the
workers, so groups straddle them) scores one step of `prompts` x n rollouts with GroupRewardManager:

  brpo         reward_fns.brpo, k=1 reference, both orders: 2(n-1) judge calls per group
  round-robin  every pair in both orders, reward = mean outcome: n(n-1) calls per group
  ranking      reward_fns.group_ranking: one GenRM call per group

The simulated judge (tests/judge_server.py, own process) answers a pairwise request after
`latency-ms` and a group-ranking request after `latency-ms` x n / 2 (its answer covers every
candidate), at most `capacity` at a time. Collector overhead: judge-free fns through
GroupRewardManager vs ParallelRewardManager, per sample.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from judge_throughput import start_judge  # noqa: E402


def make_step(tokenizer, prompts: int, n: int):
    from writing_rl.reward_loop.batch import build_reward_batch

    rows, texts, uids = [], [], []
    for p in range(prompts):
        uid = str(uuid.uuid4())
        for r in range(n):
            rows.append(
                {
                    "data_source": "writing",
                    "prompt": [{"role": "user", "content": f"Write a toast, take {p}."}],
                    "reward_model": {"ground_truth": {"prompt": f"Write a toast, take {p}."}},
                    "extra_info": {"index": p, "group_size": n},
                }
            )
            texts.append(f"Toast {r} for take {p}: " + "good " * (r % 4) + "bad " * (r % 3) + "cheers.")
            uids.append(uid)
    return build_reward_batch(tokenizer, rows, texts, uids)


VARIANTS = {
    "brpo": (
        "GroupRewardManager",
        "pkg://reward_fns.brpo",
        "compute_score",
    ),
    "round-robin": (
        "GroupRewardManager",
        str(REPO / "bench/group_baselines.py"),
        "round_robin",
    ),
    "ranking": (
        "GroupRewardManager",
        "pkg://reward_fns.group_ranking",
        "compute_score",
    ),
    "group-noop": (
        "GroupRewardManager",
        str(REPO / "bench/group_baselines.py"),
        "group_noop",
    ),
    "sample-noop": (
        "ParallelRewardManager",
        str(REPO / "bench/group_baselines.py"),
        "sample_noop",
    ),
}


def config_for(variant: str, tokenizer_dir, judge_url: str):
    from writing_rl.offline.compose import compose

    manager, fn_path, fn_name = VARIANTS[variant]
    overrides = [
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        "reward.num_workers=2",
        f"reward.reward_kwargs.judge.base_url={judge_url}",
        "reward.reward_kwargs.judge.model=sim",
        "reward.reward_kwargs.judge.max_concurrency=64",
        f"reward.reward_manager.name={manager}",
        f"reward.custom_reward_function.path={fn_path}",
        f"reward.custom_reward_function.name={fn_name}",
    ]
    if variant not in ("brpo", "ranking"):  # bench/group_baselines.py: fns with no options and no METHOD
        overrides += ["~reward.custom_reward_function.reward_kwargs", "reward.reward_kwargs.failure_score=-1.0"]
    return compose("brpo" if variant != "ranking" else "grrm_mt_grpo", overrides)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--overhead-samples", type=int, default=1024)
    args = parser.parse_args()

    import ray
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop import RewardLoopManager

    from tiny import build_tiny_tokenizer

    judge, judge_url = start_judge(args.latency_ms / 1000, args.capacity, ranking_latency_per_candidate=True)
    tokenizer_dir = build_tiny_tokenizer(tempfile.mkdtemp(prefix="bench-groups-"), ["Toast good bad cheers take"] * 50)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    overhead = {}
    try:
        for variant in VARIANTS:
            manager = RewardLoopManager(config_for(variant, tokenizer_dir, judge_url))
            try:
                manager.compute_rm_score(make_step(tokenizer, 2, 4))  # warm up: connections, collector
                if variant.endswith("noop"):
                    step = make_step(tokenizer, args.overhead_samples // 8, 8)
                    start = time.perf_counter()
                    manager.compute_rm_score(step)
                    overhead[variant] = (time.perf_counter() - start) / len(step)
                    continue
                for n in args.sizes:
                    step = make_step(tokenizer, args.prompts, n)
                    calls_before = int(judge_calls(judge_url))
                    start = time.perf_counter()
                    manager.compute_rm_score(step)
                    wall = time.perf_counter() - start
                    rows.append((variant, n, int(judge_calls(judge_url)) - calls_before, wall, len(step) / wall))
                    print(f"  {variant} n={n}: {wall:.2f}s", file=sys.stderr)
            finally:
                for worker in manager.reward_loop_workers:
                    ray.kill(worker, no_restart=True)
                time.sleep(1)
    finally:
        ray.shutdown()
        judge.kill()

    print(
        f"\none step = {args.prompts} prompts x n rollouts; judge {args.latency_ms:.0f} ms per pairwise call "
        f"(ranking: x n/2), {args.capacity} concurrent; 2 reward workers\n"
    )
    print(f"{'variant':<13}{'n':>4}{'judge calls':>13}{'calls/group':>13}{'step s':>9}{'samples/s':>11}{'vs brpo':>9}")
    brpo = {n: wall for v, n, _, wall, _ in rows if v == "brpo"}
    for variant, n, calls, wall, rate in rows:
        print(
            f"{variant:<13}{n:>4}{calls:>13}{calls / args.prompts:>13.1f}{wall:>9.2f}{rate:>11.0f}{wall / brpo[n]:>9.2f}"
        )
    extra_ms = 1000 * (overhead["group-noop"] - overhead["sample-noop"])
    print(
        f"\ncollector overhead: {1000 * overhead['group-noop']:.2f} ms/sample with groups vs "
        f"{1000 * overhead['sample-noop']:.2f} ms/sample without ({extra_ms:+.2f} ms/sample, judge-free fns)"
    )


def judge_calls(judge_url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(judge_url.replace("/v1", "/stats")) as resp:
        return int(resp.read())


if __name__ == "__main__":
    main()
