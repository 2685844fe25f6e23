"""The release suite's speed guard: the group path's benchmarks against their targets, in up to three runs.

    python bench/guard.py [--runs 3] [--out guard/] [--skip-soak]

One run is three benchmarks at the load docs/benchmarks.md states (judge 50 ms, 64 at a time, 2 reward
workers, Writing-RL with its curriculum as shipped):

  streaming   bench/streaming.py: verl's streaming mode, 2,048 samples in a burst and spread; Writing-RL
              over verl's floor and over the lean client
  batch       bench/judge_throughput.py: verl hosts the judge, 2,048 samples; Writing-RL over floor@cap
  faults      bench/soak.py's fault run: 256-sample steps, clean then under the fault mix; the throughput
              under faults over the clean one, and no silent reward
  mixes       bench/faults.py's mixes only: the mix and five seeded draws of it, in streaming and batch mode;
              the worst draw's throughput over the clean runs around it, and no silent reward

Each benchmark measures its baselines in the same run and writes its ratios and their targets as JSON. A
target fails when its ratio falls below it in two runs out of three (the third run only when the first two
disagree); a silent reward in any run fails at once. Two floor targets this machine cannot reach are printed
but not enforced (``NOT_ENFORCED``). Printed: every ratio per run, the samples/s of ours
and of the baselines side by side, and the reward workers' CPU per sample (less noisy than wall time).
The exit status is 1 when a target fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOAD = ["--samples", "2048", "--latency-ms", "50", "--capacity", "64", "--workers", "2", "--repeats", "2"]
BENCHES = {
    "streaming": ["bench/streaming.py", *LOAD, "--variants", "floor", "lean", "writing_rl8"],
    "batch": ["bench/judge_throughput.py", *LOAD, "--rss-samples", "0", "--variants", "floor@cap", "lean",
              "ours+groups"],
    "faults": ["bench/soak.py", "--prompts", "32", "--clean-minutes", "1", "--minutes", "2", "--kill-every-s", "45",
               "--down-s", "30", "--kill-in-chaos-only"],
    "mixes": ["bench/faults.py", "--seconds", "10", "--prompts", "32", "--mixes", "5", "--types"],
}  # fmt: skip
FAULTS_TARGET = 0.5  # the fault run's throughput over its clean phase; the worst seeded mix's over its clean runs
# Printed with their targets but not failing the guard: not met on this project's 2-core machine, where the
# lean client (a bare POST) itself stays below them (docs/benchmarks.md: the floor sends no HTTP, and the
# judge's process shares the cores). A slower group path still fails the ratios to lean beside them.
NOT_ENFORCED = ("writing_rl8/floor/burst", "ours+groups/floor@cap")


def run_bench(name: str, out: Path) -> dict:
    """One benchmark in its own process; its ratios, their targets, and what to print beside them."""
    out.mkdir(parents=True, exist_ok=True)
    if name in ("faults", "mixes"):
        args = [*BENCHES[name], "--out", str(out / name)]
    else:
        args = [*BENCHES[name], "--json", str(out / f"{name}.json")]
    log = out / f"{name}.log"
    with log.open("w") as handle:
        rc = subprocess.run([sys.executable, *args], cwd=REPO, stdout=handle, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"{' '.join(args)} exited {rc}; its output: {log}")
    if name == "mixes":
        mixes = json.loads((out / name / "faults.json").read_text())
        worst = mixes["worst_mix"]
        return {
            "ratios": {f"mixes/worst {mode}": row["vs_clean"] for mode, row in worst.items()},
            "targets": {f"mixes/worst {mode}": FAULTS_TARGET for mode in worst},
            "silent": mixes["silent"],
            "beside": "; ".join(f"{mode} worst {row['condition']} {row['samples_per_s']:.0f}/s, step p95 "
                                f"{row['step_p95_s']:.2f} s, judge ceiling (est.) {row['judge_ceiling']:.2f}x"
                                for mode, row in worst.items()),
        }  # fmt: skip
    if name == "faults":
        soak = json.loads((out / name / "soak.json").read_text())
        return {
            "ratios": {"faults/clean": soak["chaos_over_clean"]},
            "targets": {"faults/clean": FAULTS_TARGET},
            "silent": soak["silent"],
            "beside": f"clean {soak['clean_samples_per_s']:.0f}/s, faults {soak['chaos_samples_per_s']:.0f}/s, "
            f"failures {soak['failures']}, silent rewards {soak['silent']}",
        }
    result = json.loads((out / f"{name}.json").read_text())
    return {"ratios": result["ratios"], "targets": result["targets"], "silent": 0, "beside": beside(result)}


def beside(result: dict) -> str:
    """samples/s and worker CPU ms per sample of each variant (per pattern in streaming mode)."""
    parts = []
    for r in result["results"]:
        for key in ("burst", "spread", None):
            m = r.get(key) if key else r
            if m and "rate" in m:
                where = f" {key}" if key else ""
                parts.append(f"{r['name']}{where} {m['rate']:.0f}/s {m['cpu_ms']:.2f} ms CPU")
    return "; ".join(parts)


def verdicts(runs: list[dict[str, float]], targets: dict[str, float]) -> dict[str, bool]:
    """Per target: below it in two runs or more."""
    return {key: sum(run[key] < target for run in runs if key in run) >= 2 for key, target in targets.items()}


def decided(runs: list[dict[str, float]], targets: dict[str, float]) -> bool:
    """Two runs agree on every target: a third cannot change a verdict."""
    return len(runs) >= 2 and all(
        len({run[key] >= t for run in runs[:2] if key in run}) <= 1 for key, t in targets.items()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("guard"))
    parser.add_argument("--skip-soak", action="store_true", help="streaming and batch mode only (no fault runs)")
    args = parser.parse_args()
    names = [n for n in BENCHES if not (args.skip_soak and n in ("faults", "mixes"))]

    runs: list[dict[str, float]] = []
    targets: dict[str, float] = {}
    silent = 0
    for number in range(1, args.runs + 1):
        start, run = time.monotonic(), {}
        for name in names:
            measured = run_bench(name, args.out / f"run{number}")
            run.update(measured["ratios"])
            targets.update(measured["targets"])
            silent += measured["silent"]
            print(f"run {number} {name}: {measured['beside']}", flush=True)
        runs.append(run)
        print(f"run {number} ({time.monotonic() - start:.0f} s): "
              + ", ".join(f"{k} {v:.3f}" for k, v in run.items()), flush=True)  # fmt: skip
        if silent or decided(runs, targets):
            break

    below = verdicts(runs, targets)
    failed = {key: b and key not in NOT_ENFORCED for key, b in below.items()}
    print(
        f"\n{'ratio':<34}{'target':>8}" + "".join(f"{'run ' + str(i + 1):>9}" for i in range(len(runs))) + "  verdict"
    )
    for key, target in targets.items():
        values = "".join(f"{run[key]:>9.3f}" if key in run else f"{'-':>9}" for run in runs)
        verdict = "FAILED" if failed[key] else "below (not enforced)" if below[key] else "ok"
        print(f"{key:<34}{target:>8}{values}  {verdict}")
    if silent:
        print(f"silent rewards: {silent} (target 0): FAILED")
    return 1 if silent or any(failed.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
