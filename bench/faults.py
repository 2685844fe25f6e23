"""What each judge fault costs a training step, alone and in seeded mixes, through verl's own reward workers.

    python bench/faults.py [--seconds 30] [--prompts 32] [--mixes 5] [--modes streaming batch] [--out faults/]

Steps as bench/soak.py sends them (``--prompts`` prompts x 8 rollouts, hydra_configs/writing_rl.yaml as shipped,
two scripted judges of 50 ms and 64 at a time, ``judge.max_concurrency=128``: both judges' slots), in verl's
streaming mode (each rollout alone to a random reward worker) and in batch mode (``RewardLoopManager.compute_rm_score`` on the whole
step). Each condition runs for ``--seconds`` on the same workers and judges, with a clean run before and after
it: each fault type alone at the mix's rate (``judge_server.chaos_script``: 429 bursts without and with
Retry-After, 500s, bodies that are not JSON, replies cut at max_tokens, replies with no verdict, the latency
spread of every reply, 1.5 s spikes; and the second judge killed 1 s into the condition, down 30 s, then up 45 s
between kills, the condition lasting at least until it is back) and at twice it; the whole
mix; ``--mixes`` seeded mixes, each type's rate between half and twice the mix's (log-uniform, seed = the mix's
number).

Per condition (after one unmeasured step): samples/s against the clean runs just before and after it (the
machine drifts over a run; the "clean" row pools them all), each step's time (median and 95th percentile), the
judge requests per sample (answered calls, retries, 429s and hedged copies), the failures counted, and the silent
rewards (a reward that differs from the scripted judge's clean verdict without a counted failure); from the judges'
own counters: how busy their slots were, how long a request waited for one, and the condition's judge ceiling
(``Measured.row``: an estimate of what it could keep were the rest of a step as quick as in the clean runs). At the end: the
reward workers', collectors' and curriculum actor's RSS after each condition (growth from a quarter of the run in, and
from the start), the fault type that costs the most in each mode and the worst mix.
Writes ``--out``/faults.json and a Markdown table (faults.md).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from soak import FAILURE_FLAGS, GROUP, Judge, Killer, actor_pids, clean_reward, rss_mb, step_rows, stream  # noqa: E402


class EarlyKiller(Killer):
    """Kills the judge ``first_s`` into a condition, then as the soak's killer does: up ``every_s``, down
    ``down_s``. (The soak's waits a whole ``every_s`` first: a condition shorter than that would see no kill.)"""

    def __init__(self, judge, every_s: float, down_s: float, first_s: float = 1.0):
        super().__init__(judge, every_s, down_s)
        self.first_s = first_s

    def run(self) -> None:
        wait = self.first_s
        while not self.stopped.wait(wait):
            self.judge.kill()
            self.kills += 1
            self.stopped.wait(self.down_s)
            self.judge.start()
            wait = self.every_s


SCRIPTED = ("429", "429_retry_after", "500", "html", "cut", "no_verdict", "spread", "spike")
KILL = "kill"
FAULTS = (*SCRIPTED, KILL)
# Each sent request is one of these: an answered call, a retry after a failure, a 429, a hedged copy.
REQUESTS = ("judge_calls", "judge_retries", "judge_rate_limited", "judge_hedges")
KILL_EVERY_S, DOWN_S = 45.0, 30.0  # the mix's: the second judge down for 30 s of every 45


@dataclass
class Occupancy:
    """A judge's counters (``ScriptedJudgeServer.occupancy``) since it first started, a killed process's kept,
    and the seconds it was down."""

    requests: int = 0
    busy_s: float = 0.0  # slot-seconds: seconds of requests answered
    queued_s: float = 0.0  # seconds of requests waiting for a slot
    down_s: float = 0.0


class ControlledJudge(Judge):
    """A scripted judge whose faults follow a control file, read again whenever it changes: no file, clean;
    ``{"faults": [...], "scale": {...}}``, ``chaos_script`` with those, its clock started at the change (so that
    every condition meets its 429 bursts at the same times, not where the previous one left them). The bursts are
    windows of time: counted in requests, a burst would last as long as a client that backs off takes to send
    them, and a wait meant to let a rate limit pass would only stretch it."""

    CODE = (
        "import json, os, sys, time; sys.path.insert(0, sys.argv[1]); import judge_server as js;"
        "port, seed, latency, capacity, control = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6];"
        "state = {'seen': None, 'script': js.default_script, 'start': 0, 'began': 0.0}\n"
        "def script(request, index):\n"
        "    try: seen = os.stat(control).st_mtime_ns\n"
        "    except FileNotFoundError: seen = None\n"
        "    if seen != state['seen']:\n"
        "        state['seen'], state['start'], state['began'] = seen, index, time.monotonic()\n"
        "        if seen is None: state['script'] = js.default_script\n"
        "        else:\n"
        "            c = json.loads(open(control).read())\n"
        "            clock = lambda: time.monotonic() - state['began']\n"
        "            state['script'] = js.chaos_script(seed, latency_s=latency, faults=c['faults'], scale=c['scale'], clock=clock)\n"
        "    return state['script'](request, index - state['start'])\n"
        "s = js.ScriptedJudgeServer(script=script, latency_s=latency, capacity=capacity, port=port, keep_requests=False).start()\n"
        "print(s.base_url, flush=True); time.sleep(10**7)"
    )

    def __init__(self, *args):
        self._lock = threading.Lock()  # (the killer's thread kills and starts it while the bench reads it)
        self._previous_lives = Occupancy()  # what the killed processes counted, and the time down
        self._down_at: float | None = None
        self.lost_reads = 0  # kills whose last counts could not be read (those requests are not counted)
        super().__init__(*args)

    def occupancy(self) -> Occupancy:
        with self._lock:
            return self._occupancy()

    def _occupancy(self) -> Occupancy:
        total = dataclasses.replace(self._previous_lives)
        if self._down_at is not None:
            total.down_s += time.monotonic() - self._down_at
            return total
        with urllib.request.urlopen(self.base_url.replace("/v1", "/occupancy"), timeout=10) as resp:
            now = json.load(resp)
        total.requests += now["requests"]
        total.busy_s += now["busy_s"]
        total.queued_s += now["queued_s"]
        return total

    def kill(self) -> None:
        """Killed whether or not its counters (which go with the process) could be read first."""
        with self._lock:
            try:
                self._previous_lives = self._occupancy()
            except OSError:
                self.lost_reads += 1
            super().kill()
            self._down_at = time.monotonic()

    def start(self) -> None:
        with self._lock:
            super().start()  # (down until it serves again: its start-up is time down)
            if self._down_at is not None:
                self._previous_lives.down_s += time.monotonic() - self._down_at
                self._down_at = None


@dataclass(frozen=True)
class Condition:
    name: str
    faults: tuple[str, ...] = ()  # the kinds injected (KILL: the second judge killed and restarted)
    scale: dict = field(default_factory=dict)  # a kind's rate times this (1 when not named)


def conditions(mixes: int, types: tuple[str, ...] = FAULTS) -> list[Condition]:
    found = []
    for kind in types:
        found += [Condition(kind, (kind,)), Condition(f"{kind} x2", (kind,), {kind: 2.0})]
    found.append(Condition("the mix", FAULTS))
    for seed in range(mixes):
        rng = random.Random(seed)
        scale = {kind: round(math.exp(rng.uniform(math.log(0.5), math.log(2.0))), 2) for kind in FAULTS}
        found.append(Condition(f"mix {seed}", FAULTS, scale))
    return found


# Measured's counts that add up when runs are pooled.
SUMMED = (
    "samples",
    "requests",
    "silent",
    "judge_busy_s",
    "judge_slot_s",
    "judge_queued_s",
    "judge_requests",
    "judge_wall_s",
)


@dataclass
class Measured:
    condition: str
    mode: str
    step_s: list = field(default_factory=list)
    samples: int = 0
    requests: int = 0  # judge requests sent for the samples: calls, retries, 429s and hedged copies
    failures: dict = field(default_factory=lambda: dict.fromkeys(FAILURE_FLAGS, 0))
    silent: int = 0
    kills: int = 0  # times the second judge was killed during the condition
    # The judges over the measured steps: slot-seconds answering, slot-seconds up (capacity x seconds each
    # was up), seconds requests waited for a slot, requests received.
    judge_busy_s: float = 0.0
    judge_slot_s: float = 0.0
    judge_queued_s: float = 0.0
    judge_requests: int = 0
    judge_wall_s: float = 0.0  # the wall-clock seconds they were read over

    @classmethod
    def pooled(cls, condition: str, mode: str, parts: list[Measured]) -> Measured:
        whole = cls(condition, mode)
        for part in parts:
            whole.step_s += part.step_s
            for name in SUMMED:
                setattr(whole, name, getattr(whole, name) + getattr(part, name))
            for flag, count in part.failures.items():
                whole.failures[flag] += count
        return whole

    @property
    def samples_per_s(self) -> float:
        return self.samples / sum(self.step_s) if self.step_s else 0.0

    @property
    def judge_s_per_sample(self) -> float:
        """The judges' work per sample packed on their slots up: the step time a sample costs the judges
        alone (slot-seconds over the slots up on average)."""
        if not (self.samples and self.judge_slot_s):
            return float("nan")
        return self.judge_busy_s / self.judge_slots_up / self.samples

    @property
    def judge_slots_up(self) -> float:
        """The judges' slots up on average over the seconds they were read over."""
        return self.judge_slot_s / self.judge_wall_s if self.judge_wall_s else float("nan")

    def measure_judges(self, before: list[Occupancy], after: list[Occupancy], capacity: int, seconds: float) -> None:
        """The judges' counters read ``before`` and ``after`` the measured steps, ``seconds`` of wall clock
        apart. (A request counts when it ends: one in flight at a kill is lost, and one left over from the
        unmeasured step counts here.)"""
        self.judge_wall_s += seconds
        for was, now in zip(before, after, strict=True):
            self.judge_busy_s += now.busy_s - was.busy_s
            self.judge_queued_s += now.queued_s - was.queued_s
            self.judge_requests += now.requests - was.requests
            self.judge_slot_s += capacity * max(0.0, seconds - (now.down_s - was.down_s))

    def row(self, clean: float, clean_judge_s: float = float("nan")) -> dict:
        """Against ``clean`` samples/s; ``clean_judge_s``: the clean runs' ``judge_s_per_sample``."""
        steps = sorted(self.step_s)
        # What this condition could keep were the rest of a step (the client, verl, the machine) as quick as in
        # the clean runs, and the judges' part of a sample (grown from clean_judge_s to its own) paid after it:
        # an estimate in a serial model, not a bound (a client that overlaps the two, or sends fewer requests,
        # keeps more).
        rest = 1 / clean - clean_judge_s if clean else float("nan")
        if not rest > 0:
            rest = float("nan")
        return {
            "condition": self.condition,
            "mode": self.mode,
            "samples_per_s": self.samples_per_s,
            "vs_clean": self.samples_per_s / clean if clean else float("nan"),
            "steps": len(steps),
            "step_p50_s": statistics.median(steps) if steps else float("nan"),
            "step_p95_s": steps[min(len(steps) - 1, math.ceil(0.95 * len(steps)) - 1)] if steps else float("nan"),
            "requests_per_sample": self.requests / self.samples if self.samples else float("nan"),
            "failures": {k: v for k, v in self.failures.items() if v},
            "silent": self.silent,
            "kills": self.kills,
            "judge_busy": self.judge_busy_s / self.judge_slot_s if self.judge_slot_s else float("nan"),
            "judge_queue_ms": 1000 * self.judge_queued_s / self.judge_requests if self.judge_requests else 0.0,
            "judge_s_per_sample": self.judge_s_per_sample,
            "judge_slots_up": self.judge_slots_up,
            "judge_ceiling": (1 / clean) / (rest + self.judge_s_per_sample) if clean else float("nan"),
        }

    def count(self, texts, ids, scores, infos) -> None:
        for text, prompt_id, score, info in zip(texts, ids, scores, infos):
            self.samples += 1
            self.requests += sum(int(info.get(key, 0)) for key in REQUESTS)
            failed = [flag for flag in FAILURE_FLAGS if info.get(flag)]
            for flag in failed:
                self.failures[flag] += 1
            if score != clean_reward(text, prompt_id, int(info["curriculum/level"])) and not failed:
                self.silent += 1


class Bench:
    """The reward workers and the two judges, kept across the conditions of a run."""

    def __init__(
        self,
        prompts: int,
        workers: int,
        latency_s: float,
        capacity: int,
        seed: int = 0,
        kill_every_s: float = KILL_EVERY_S,
        down_s: float = DOWN_S,
        overrides: tuple[str, ...] = (),
    ):
        from transformers import AutoTokenizer
        from verl.experimental.reward_loop import RewardLoopManager

        from writing_rl.offline.compose import compose

        from tiny import build_tiny_tokenizer

        self.tmp = Path(tempfile.mkdtemp(prefix="faults-"))
        self.control = self.tmp / "faults.json"
        tokenizer_dir = build_tiny_tokenizer(self.tmp, ["Step take prompt Reference scene number good bad"] * 50)
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        self.judges = [ControlledJudge(seed + i, latency_s, capacity, str(self.control)) for i in range(2)]
        self.capacity = capacity
        config = compose(
            "writing_rl",
            [
                f"actor_rollout_ref.model.path={tokenizer_dir}",
                f"reward.num_workers={workers}",
                f"reward.reward_kwargs.judge.base_url=[{self.judges[0].base_url},{self.judges[1].base_url}]",
                "reward.reward_kwargs.judge.model=scripted-judge",
                # What the two judges serve at once, as docs/judges/concurrency.md says to size it.
                f"reward.reward_kwargs.judge.max_concurrency={len(self.judges) * capacity}",
                f"reward.reward_kwargs.curriculum.state_dir={self.tmp / 'curriculum'}",
                f"actor_rollout_ref.rollout.n={GROUP}",
                *overrides,
            ],
        )
        self.manager = RewardLoopManager(config)
        self.prompts, self.step, self.rng = prompts, 0, random.Random(seed)
        self.kill_every_s, self.down_s = kill_every_s, down_s  # at twice the rate: twice as often, half as long

    def set_faults(self, condition: Condition) -> None:
        scripted = [kind for kind in condition.faults if kind in SCRIPTED]
        if not scripted:
            self.control.unlink(missing_ok=True)
            return
        spec = json.dumps({"faults": scripted, "scale": {k: condition.scale.get(k, 1.0) for k in scripted}})
        temporary = self.control.with_suffix(".tmp")
        temporary.write_text(spec)
        os.replace(temporary, self.control)

    def run(self, condition: Condition, mode: str, seconds: float) -> Measured:
        self.set_faults(condition)
        killer = None
        if KILL in condition.faults:
            more = condition.scale.get(KILL, 1.0)
            killer = EarlyKiller(self.judges[1], self.kill_every_s / more, self.down_s / more)
            seconds = max(seconds, killer.first_s + killer.down_s + 2.0)  # at least one kill, and the judge back
        measured = Measured(condition.name, mode)
        self.one_step(mode)  # unmeasured: the condition's first step meets what the previous one left
        judges_before, began = [judge.occupancy() for judge in self.judges], time.monotonic()
        if killer is not None:
            killer.start()
        end = began + seconds
        try:
            while time.monotonic() < end:
                texts, ids, scores, infos, took = self.one_step(mode)
                measured.step_s.append(took)
                measured.count(texts, ids, scores, infos)
            judges_after = [judge.occupancy() for judge in self.judges]
            measured.measure_judges(judges_before, judges_after, self.capacity, time.monotonic() - began)
        finally:
            if killer is not None:
                killer.stop()  # (a judge it had killed is started again first)
                measured.kills = killer.kills
            self.set_faults(Condition("clean"))
        return measured

    def one_step(self, mode: str):
        from writing_rl.reward_loop.batch import build_reward_batch, streaming_samples

        rows, texts, uids, ids = step_rows(self.step, self.prompts, 1024)
        self.step += 1
        start = time.perf_counter()
        if mode == "streaming":
            samples = streaming_samples(self.tokenizer, rows, texts, uids)
            results, _ = asyncio.run(stream(self.manager.reward_loop_workers, samples, self.rng, 0.0005))
            took = time.perf_counter() - start
            return texts, ids, [r["reward_score"] for r in results], [r["reward_extra_info"] for r in results], took
        out = self.manager.compute_rm_score(build_reward_batch(self.tokenizer, rows, texts, uids))
        took = time.perf_counter() - start
        scores = out.batch["rm_scores"].sum(-1).tolist()
        extra = out.non_tensor_batch
        infos = [{key: extra[key][i] for key in extra} for i in range(len(texts))]
        return texts, ids, scores, infos, took

    def actors_rss(self) -> dict[str, float]:
        """The RSS of the reward workers, the group collectors and the curriculum's actor."""
        return {name: rss_mb(pid) for name, pid in actor_pids().items()}

    def close(self) -> None:
        import ray

        for judge in self.judges:
            if judge.proc is not None and judge.proc.poll() is None:
                judge.kill()
        for worker in self.manager.reward_loop_workers:
            ray.kill(worker, no_restart=True)


def run_faults(seconds: float, prompts: int, mixes: int, modes, types=FAULTS, workers=2, log=print, **settings) -> dict:
    bench = Bench(prompts, workers, latency_s=0.05, capacity=64, **settings)
    rows, rss = [], []  # rss: after each condition, the actors' RSS
    try:
        for mode in modes:  # unmeasured: actors started, the curriculum's ids created, connections opened
            for _ in range(3):
                bench.one_step(mode)
        rss.append(("start", bench.actors_rss()))
        for mode in modes:
            runs, cleans = [], [bench.run(Condition("clean"), mode, seconds)]
            for condition in conditions(mixes, types):
                runs.append(bench.run(condition, mode, seconds))
                cleans.append(bench.run(Condition("clean"), mode, seconds))
                rss.append((f"{mode} {condition.name}", bench.actors_rss()))
                log(f"{mode:<9} {condition.name:<22} {runs[-1].samples_per_s:7.0f} samples/s ({len(runs[-1].step_s)} "
                    f"steps); clean before and after {cleans[-2].samples_per_s:.0f}, {cleans[-1].samples_per_s:.0f}")  # fmt: skip
            pooled = Measured.pooled("clean", mode, cleans)
            judge_s = pooled.judge_s_per_sample
            rows.append(pooled.row(pooled.samples_per_s, judge_s))
            # Each condition against the clean runs just before and after it: the machine drifts over a run.
            for m, before, after in zip(runs, cleans, cleans[1:]):
                rows.append(m.row((before.samples_per_s + after.samples_per_s) / 2, judge_s))
    finally:
        bench.close()
    return summarise(rows, rss)


def rss_growth(trace: list[tuple[str, dict]], since: int = 0) -> dict[str, float]:
    """Each actor's RSS growth from ``trace[since]`` to the last entry."""
    if len(trace) <= since:
        return {}
    base, last = trace[since][1], trace[-1][1]
    return {name: (last[name] - mb) / mb for name, mb in base.items() if name in last and mb}


def summarise(rows: list[dict], rss: list[tuple[str, dict]]) -> dict:
    alone = [r for r in rows if r["condition"] in FAULTS]
    mixes = [r for r in rows if r["condition"].startswith("mix ")]
    modes = sorted({r["mode"] for r in rows})
    return {
        "rows": rows,
        "costliest": {
            m: min((r for r in alone if r["mode"] == m), key=lambda r: r["vs_clean"])["condition"]
            for m in modes
            if any(r["mode"] == m for r in alone)
        },  # fmt: skip
        "worst_mix": {
            m: min((r for r in mixes if r["mode"] == m), key=lambda r: r["vs_clean"])
            for m in modes
            if any(r["mode"] == m for r in mixes)
        },  # fmt: skip
        "silent": sum(r["silent"] for r in rows),
        # From a quarter of the run in (the bounded caches filled: the collectors keep 4,096 finished groups),
        # and from the start.
        "rss_growth": rss_growth(rss, len(rss) // 4),
        "rss_growth_from_start": rss_growth(rss),
        "rss_trace": rss,
    }


def markdown(result: dict) -> str:
    lines = [
        "| fault | mode | samples/s | vs clean | step p50 s | step p95 s | requests / sample | failures counted | silent "
        "| judge kills | judges busy | wait for a judge's slot ms | judge ceiling (est.) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        failures = ", ".join(f"{v} {k}" for k, v in r["failures"].items()) or "0"
        lines.append(
            f"| {r['condition']} | {r['mode']} | {r['samples_per_s']:.0f} | {r['vs_clean']:.2f}× | "
            f"{r['step_p50_s']:.2f} | {r['step_p95_s']:.2f} | {r['requests_per_sample']:.2f} | {failures} | {r['silent']} "
            f"| {r['kills']} | {r['judge_busy']:.0%} | {r['judge_queue_ms']:.0f} | {r['judge_ceiling']:.2f}× |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="per condition and mode")
    parser.add_argument("--prompts", type=int, default=32, help="prompts per step (x 8 rollouts)")
    parser.add_argument("--mixes", type=int, default=5, help="seeded mixes (each type between half and twice)")
    parser.add_argument("--modes", nargs="+", default=["streaming", "batch"], choices=["streaming", "batch"])
    parser.add_argument("--types", nargs="*", default=list(FAULTS), choices=list(FAULTS),
                        help="fault types alone (none: the mixes only)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("faults"))
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of hydra_configs/writing_rl.yaml")
    args = parser.parse_args()

    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result = run_faults(
            args.seconds, args.prompts, args.mixes, args.modes, tuple(args.types), overrides=tuple(args.overrides)
        )
    finally:
        ray.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "faults.json").write_text(json.dumps(result, indent=1, default=str))
    (args.out / "faults.md").write_text(markdown(result))
    print("\n" + markdown(result))
    worst = {m: f"{r['condition']} {r['vs_clean']:.2f}×" for m, r in result["worst_mix"].items()}
    growth = ", ".join(f"{name} {g:+.1%}" for name, g in sorted(result["rss_growth"].items()))
    print(
        f"costliest alone: {result['costliest']}; worst mix: {worst}; silent rewards {result['silent']}; "
        f"RSS from a quarter of the run in: {growth}"
    )


if __name__ == "__main__":
    main()
