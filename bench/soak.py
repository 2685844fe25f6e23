"""A long run of training-like steps against misbehaving judges, through verl's own reward workers.

    python bench/soak.py [--minutes 20] [--clean-minutes 4] [--prompts 128] [--out soak/]
    python bench/soak.py --prompts 32 --clean-minutes 1 --minutes 2 --kill-every-s 45 --down-s 30 \
        --kill-in-chaos-only    # the fault run: 256 samples per step against a clean baseline

Steps as a training run sends them in verl's streaming mode: every step, ``--prompts`` prompts x 8
rollouts under new uids, each rollout alone to a random reward worker (``compute_score.remote``, one
sample), in shuffled order; hydra_configs/writing_rl.yaml as shipped (groups of 8, the reference
curriculum advancing, two judge endpoints, hedged requests). The judges (tests/judge_server.py, one
process each) answer cleanly for ``--clean-minutes``, then with chaos (``chaos_script``: every reply's
latency spread 1-4x, 1.5 s spikes, 429 bursts with and without Retry-After, 500s, bodies that are not
JSON, replies cut at max_tokens, replies with no verdict) for ``--minutes``; the second endpoint is
killed every ``--kill-every-s`` and restarted ``--down-s`` later on the same port, in both phases (or the
chaos phase only).

Reported per minute: samples/s, the RSS of every reward worker and of the collector and curriculum
actors, open groups, failures by kind. At the end: RSS growth from minute 2 to the end, throughput under
chaos over the clean phase, and the silent rewards: samples whose reward differs from what the judge
gives when it answers (the scripted verdict for the reference level the sample was judged against)
without a counted failure; the share of judge calls hedging added in each phase. A PNG of throughput
and RSS over time goes to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

GROUP = 8
LEVELS = 4  # references per prompt, easiest first
FAILURE_FLAGS = ("judge_error", "parse_error", "group_incomplete", "format_error")
ACTORS = ("RewardLoopWorker", "GroupCollector", "ReferenceScheduler")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Judge:
    """A scripted judge in its own process, on a fixed port (so it can be killed and come back)."""

    CODE = (
        "import os, sys, time; sys.path.insert(0, sys.argv[1]); import judge_server as js;"
        "port, seed, latency, capacity, flag = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6];"
        "faults = os.environ.get('CHAOS_FAULTS', ','.join(js.CHAOS_FAULTS)).split(',');"
        "script = js.chaos_script(seed, enabled=lambda: os.path.exists(flag), latency_s=latency, faults=faults);"
        "s = js.ScriptedJudgeServer(script=script, latency_s=latency, capacity=capacity, port=port, keep_requests=False).start();"
        "print(s.base_url, flush=True); time.sleep(10**7)"
    )

    def __init__(self, seed: int, latency_s: float, capacity: int, chaos_flag: str):
        self.args = [str(REPO / "tests"), str(free_port()), str(seed), str(latency_s), str(capacity), chaos_flag]
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE, *self.args], stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


class Killer(threading.Thread):
    """Kills ``judge`` every ``every_s`` seconds (while ``armed()``) and starts it again ``down_s`` later,
    until stopped."""

    def __init__(self, judge: Judge, every_s: float, down_s: float, armed=lambda: True):
        super().__init__(daemon=True)
        self.judge, self.every_s, self.down_s, self.armed = judge, every_s, down_s, armed
        self.stopped = threading.Event()
        self.kills = 0

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            if not self.armed():
                continue
            self.judge.kill()
            self.kills += 1
            self.stopped.wait(self.down_s)
            self.judge.start()

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def references(prompt_id: int) -> list[str]:
    return [f"Reference {level} for prompt {prompt_id}. " + "good " * level for level in range(LEVELS)]


def rollout_text(step: int, prompt_id: int, r: int, rng: random.Random) -> str:
    return (
        f"Step {step}, take {r} on prompt {prompt_id}: "
        + "good " * rng.randrange(0, LEVELS + 1)
        + "bad " * rng.randrange(0, 2)
    )


def step_rows(step: int, prompts: int, prompt_pool: int) -> tuple[list[dict], list[str], list[str], list[int]]:
    """A step's rows, rollout texts, uids (8 rollouts of a prompt share one, new each step) and prompt ids."""
    rng = random.Random(step)
    rows, texts, uids = [], [], []
    for j in range(prompts):
        prompt_id = (step * prompts + j) % prompt_pool
        uid = uuid.uuid4().hex
        prompt = f"Write a scene, number {prompt_id}."
        row = {
            "data_source": "writing",
            "prompt": [{"role": "user", "content": prompt}],
            "reward_model": {"ground_truth": {"prompt": prompt, "target": references(prompt_id), "id": prompt_id}},
            "extra_info": {"index": prompt_id},
        }
        for r in range(GROUP):
            rows.append(row)
            texts.append(rollout_text(step, prompt_id, r, rng))
            uids.append(uid)
    return rows, texts, uids, [row["reward_model"]["ground_truth"]["id"] for row in rows]


def make_step(tokenizer, step: int, prompts: int, prompt_pool: int):
    from writing_rl.reward_loop.batch import streaming_samples

    rows, texts, uids, ids = step_rows(step, prompts, prompt_pool)
    return streaming_samples(tokenizer, rows, texts, uids), texts, ids


def clean_reward(text: str, prompt_id: int, level: int) -> float:
    """What Writing-RL pays when the scripted judge answers: its verdict for this reference."""
    from judge_server import quality

    mine, theirs = quality(text), quality(references(prompt_id)[level])
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


async def stream(handles, samples, rng: random.Random, interval_s: float) -> tuple[list[dict], list[float]]:
    """Each sample alone to a random worker, in shuffled order, one every ``interval_s``: the results, and
    the seconds from the step's start at which each came back."""
    order = list(range(len(samples)))
    rng.shuffle(order)
    start = time.perf_counter()
    calls = {}
    for i in order:
        calls[i] = asyncio.ensure_future(_call(rng.choice(handles), samples[i], start))
        if interval_s:
            await asyncio.sleep(interval_s)
    done = [await calls[i] for i in range(len(samples))]
    return [result for result, _ in done], [seconds for _, seconds in done]


async def _call(handle, sample, start: float) -> tuple[dict, float]:
    result = await handle.compute_score.remote(sample)
    return result, time.perf_counter() - start


def step_tail(results: list[dict], done_s: list[float]) -> dict:
    """Where a step waited: when half and 95% of its samples were back, when the last was, and what the last one's
    judge call met (retries, 429s, hedges, the latency of its answering request, a counted failure)."""
    order = sorted(range(len(done_s)), key=done_s.__getitem__)
    last = results[order[-1]]["reward_extra_info"]
    return {
        "p50_s": done_s[order[len(order) // 2]],
        "p95_s": done_s[order[int(0.95 * (len(order) - 1))]],
        "last_s": done_s[order[-1]],
        "retries": int(last.get("judge_retries", 0)),
        "rate_limited": int(last.get("judge_rate_limited", 0)),
        "hedges": int(last.get("judge_hedges", 0)),
        "latency_s": float(last.get("judge_latency_s", 0.0)),
        "failed": [flag for flag in FAILURE_FLAGS if last.get(flag)],
    }


def actor_pids() -> dict[str, int]:
    """The pids of verl's reward workers and of our shared actors, by a readable name."""
    import psutil

    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        for kind in ACTORS:
            if f"{kind}" in cmd or (kind != "RewardLoopWorker" and kind.lower() in cmd.lower()):
                name = kind if kind != "RewardLoopWorker" else f"worker{sum(k.startswith('worker') for k in found)}"
                found.setdefault(name, proc.pid)
    return found


def rss_mb(pid: int) -> float:
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return float("nan")


@dataclass
class Minute:
    phase: str
    samples: int = 0
    seconds: float = 0.0
    failures: dict = field(default_factory=lambda: dict.fromkeys(FAILURE_FLAGS, 0))
    silent: int = 0
    rss: dict = field(default_factory=dict)
    open_groups: int = 0
    calls: int = 0  # judge calls the samples were counted for (a hedge's copy not included)
    hedges: int = 0  # copies of slow requests: the paid calls hedging added
    tails: list = field(default_factory=list)  # step_tail of each step


def open_groups() -> int:
    """Groups the curriculum scheduler holds open (Writing-RL judges each rollout as it arrives)."""
    import ray

    from writing_rl.curriculum.scheduler import scheduler_name

    try:
        return ray.get(ray.get_actor(scheduler_name()).stats.remote(), timeout=30)["open_groups"]
    except (ValueError, ray.exceptions.GetTimeoutError):
        return -1


def run_soak(
    minutes: float,
    clean_minutes: float,
    prompts: int = 128,
    prompt_pool: int = 1024,
    workers: int = 2,
    latency_s: float = 0.05,
    capacity: int = 64,
    kill_every_s: float = 60.0,
    down_s: float = 10.0,
    interval_s: float = 0.0005,
    minute_s: float = 60.0,
    seed: int = 0,
    kill_in_chaos_only: bool = False,
    overrides: tuple[str, ...] = (),
    log=print,
) -> dict:
    """Runs the soak (Ray must be initialised) and returns its report (see ``report``)."""
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop import RewardLoopManager

    from writing_rl.offline.compose import compose

    from tiny import build_tiny_tokenizer

    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    chaos_flag = str(tmp / "chaos-on")
    tokenizer_dir = build_tiny_tokenizer(tmp, ["Step take prompt Reference scene number good bad"] * 50)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    judges = [Judge(seed + i, latency_s, capacity, chaos_flag) for i in range(2)]
    armed = (lambda: os.path.exists(chaos_flag)) if kill_in_chaos_only else (lambda: True)
    killer = Killer(judges[1], kill_every_s, down_s, armed)
    config = compose(
        "writing_rl",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.num_workers={workers}",
            f"reward.reward_kwargs.judge.base_url=[{judges[0].base_url},{judges[1].base_url}]",
            "reward.reward_kwargs.judge.model=scripted-judge",
            f"reward.reward_kwargs.judge.max_concurrency={capacity}",
            f"reward.reward_kwargs.curriculum.state_dir={tmp / 'curriculum'}",
            f"actor_rollout_ref.rollout.n={GROUP}",
            *overrides,
        ],
    )
    manager = RewardLoopManager(config)
    handles = manager.reward_loop_workers
    rng = random.Random(seed)
    history: list[Minute] = []
    phases = [("clean", clean_minutes), ("chaos", minutes)]
    step = 0
    killer.start()
    try:
        for phase, length in phases:
            if phase == "chaos":
                Path(chaos_flag).touch()
            end = time.monotonic() + length * minute_s
            minute = Minute(phase)
            minute_end = time.monotonic() + minute_s
            while time.monotonic() < end:
                samples, texts, ids = make_step(tokenizer, step, prompts, prompt_pool)
                start = time.perf_counter()
                results, done_s = asyncio.run(stream(handles, samples, rng, interval_s))
                minute.tails.append(step_tail(results, done_s))
                minute.seconds += time.perf_counter() - start
                minute.samples += len(results)
                for text, prompt_id, result in zip(texts, ids, results):
                    info = result["reward_extra_info"]
                    minute.calls += int(info.get("judge_calls", 0))
                    minute.hedges += int(info.get("judge_hedges", 0))
                    failed = [flag for flag in FAILURE_FLAGS if info.get(flag)]
                    for flag in failed:
                        minute.failures[flag] += 1
                    expected = clean_reward(text, prompt_id, int(info["curriculum/level"]))
                    if result["reward_score"] != expected and not failed:
                        minute.silent += 1
                step += 1
                if time.monotonic() >= minute_end or time.monotonic() >= end:
                    minute.rss = {name: rss_mb(pid) for name, pid in actor_pids().items()}
                    minute.open_groups = open_groups()
                    history.append(minute)
                    log(minute_line(len(history), minute))
                    minute = Minute(phase)
                    minute_end = time.monotonic() + minute_s
    finally:
        killer.stop()
        for judge in judges:
            judge.kill()
        import ray

        for worker in handles:
            ray.kill(worker, no_restart=True)
    result = report(history)
    result["kills"] = killer.kills
    result["steps"] = step
    return result


def minute_line(number: int, m: Minute) -> str:
    rate = m.samples / m.seconds if m.seconds else 0.0
    rss = " ".join(f"{name} {mb:.0f}" for name, mb in sorted(m.rss.items()))
    failures = " ".join(f"{k} {v}" for k, v in m.failures.items())
    line = f"minute {number:>3} {m.phase:<5} {rate:7.0f} samples/s | RSS MB {rss} | open groups {m.open_groups} | {failures} | silent {m.silent}"
    return f"{line}\n{' ' * 11}{tail_line(m.tails)}" if m.tails else line


def tail_line(tails: list[dict]) -> str:
    """Means over the steps: when half, 95% and the last sample were back, what the last one's call met."""

    def mean(key: str) -> float:
        return sum(t[key] for t in tails) / len(tails)

    failed = sum(bool(t["failed"]) for t in tails)
    return (
        f"{len(tails)} steps: half back at {mean('p50_s'):.2f} s, 95% at {mean('p95_s'):.2f} s, the last at {mean('last_s'):.2f} s; the last one's call: "
        f"retries {mean('retries'):.2f}, 429s {mean('rate_limited'):.2f}, hedges {mean('hedges'):.2f}, "
        f"answer latency {mean('latency_s'):.2f} s, failed {failed}"
    )


def report(history: list[Minute]) -> dict:
    def rate(phase: str) -> float:
        ms = [m for m in history if m.phase == phase]
        seconds = sum(m.seconds for m in ms)
        return sum(m.samples for m in ms) / seconds if seconds else 0.0

    growth = {}
    if len(history) >= 3:
        base, last = history[1].rss, history[-1].rss  # from minute 2 to the end
        growth = {name: (last[name] - base[name]) / base[name] for name in base if name in last and base[name]}
    clean, chaos = rate("clean"), rate("chaos")
    return {
        "minutes": [m.__dict__ for m in history],
        "clean_samples_per_s": clean,
        "chaos_samples_per_s": chaos,
        "chaos_over_clean": chaos / clean if clean else 0.0,
        "rss_growth": growth,
        "silent": sum(m.silent for m in history),
        "samples": sum(m.samples for m in history),
        "failures": {flag: sum(m.failures[flag] for m in history) for flag in FAILURE_FLAGS},
        "hedged_share": {
            phase: sum(m.hedges for m in history if m.phase == phase)
            / max(1, sum(m.calls for m in history if m.phase == phase))
            for phase in ("clean", "chaos")
        },
    }


def plot(result: dict, path: Path) -> str:
    """Throughput (left axis) and the actors' RSS (right axis) per minute; the line to print about it."""
    from writing_rl.plot import PALETTE, legend_above, plot

    minutes = result["minutes"]
    xs = list(range(1, len(minutes) + 1))

    def draw(axes) -> None:
        axes.plot(xs, [m["samples"] / m["seconds"] if m["seconds"] else 0 for m in minutes], "o-", color="black")
        axes.set_xlabel("minute")
        axes.set_ylabel("samples/s (black)")
        chaos = next((x for x, m in zip(xs, minutes) if m["phase"] == "chaos"), None)
        if chaos is not None:
            axes.axvline(chaos - 0.5, color="grey", linestyle="--")
            axes.text(chaos - 0.4, 0.02, "chaos on", color="grey", transform=axes.get_xaxis_transform())
        rss = axes.twinx()
        for colour, name in zip(PALETTE, sorted(minutes[-1]["rss"])):
            rss.plot(xs, [m["rss"].get(name, float("nan")) for m in minutes], color=colour, label=name)
        rss.set_ylabel("RSS MB")
        rss.set_ylim(bottom=0)
        legend_above(rss)

    return plot(path, draw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="chaos phase")
    parser.add_argument("--clean-minutes", type=float, default=4.0)
    parser.add_argument("--prompts", type=int, default=128, help="prompts per step (x 8 rollouts)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--kill-every-s", type=float, default=60.0)
    parser.add_argument("--down-s", type=float, default=10.0)
    parser.add_argument(
        "--kill-in-chaos-only", action="store_true", help="the clean phase keeps both judges up: a clean baseline"
    )
    parser.add_argument("--out", type=Path, default=Path("soak"))
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of hydra_configs/writing_rl.yaml")
    args = parser.parse_args()

    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result = run_soak(
            args.minutes,
            args.clean_minutes,
            prompts=args.prompts,
            workers=args.workers,
            latency_s=args.latency_ms / 1000,
            capacity=args.capacity,
            kill_every_s=args.kill_every_s,
            down_s=args.down_s,
            kill_in_chaos_only=args.kill_in_chaos_only,
            overrides=tuple(args.overrides),
        )
    finally:
        ray.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "soak.json").write_text(json.dumps(result, indent=1))
    plotted = plot(result, args.out / "soak.png")
    growth = ", ".join(f"{name} {g:+.1%}" for name, g in sorted(result["rss_growth"].items()))
    print(
        f"\n{result['samples']} samples in {result['steps']} steps; endpoint killed {result['kills']} times\n"
        f"throughput: clean {result['clean_samples_per_s']:.0f}/s, chaos {result['chaos_samples_per_s']:.0f}/s "
        f"= {result['chaos_over_clean']:.2f}x (target >= 0.5)\n"
        f"RSS growth from minute 2 to the end: {growth} (target <= 10%)\n"
        f"failures: {result['failures']}\nsilent rewards: {result['silent']} (target 0)\n"
        f"calls hedging added: clean {result['hedged_share']['clean']:.1%}, chaos {result['hedged_share']['chaos']:.1%}\n"
        f"report: {args.out / 'soak.json'}; {plotted}"
    )


if __name__ == "__main__":
    main()
