"""Does a tiny policy learn what the judge prefers, through verl's real trainer and our rewards? Every judged
method, several seeds, the trainers asked for, and a control that must move the other way.

Each run is ``LEARN=1 bash scripts/tiny_train.sh METHOD`` (docs/train-on-a-laptop.md, "A policy that learns"):
the stand-in judge with a taste, the taste measured on verl's dump of the rollouts (not by the judge), and the
learning check (the taste's value over the first and the last 3 steps, z >= 3). Printed per case: the measure at
the start and the end (mean and spread over seeds), the gain the judge's way, the smallest z and how many seeds
passed the check; written: learning.json and learning.png (the measure per step, a line per seed).

    python bench/learning.py                                  # every case, 3 seeds, v1-sync (about 40 min)
    python bench/learning.py --cases brpo,control --seeds 1   # some
    python bench/learning.py --cases writing_rl --trainers legacy,fully-async

The runs go one at a time (each uses both cores); each run's whole output stays under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    method: str  # tiny_train.sh METHOD
    taste: str = "letter:e"  # TASTE: what the judge prefers and the measure follows
    judge_taste: str = ""  # JUDGE_TASTE: what the judge prefers, when not the taste (none: indifferent)
    overrides: tuple[str, ...] = ()
    flip: float = 0.0  # JUDGE_FLIP: the share of verdicts the judge reverses
    what: str = ""

    def env(self) -> dict[str, str]:
        """The variables ``tiny_train.sh`` reads for this case (LEARN=1 with its taste, the judge's own)."""
        env = {"LEARN": "1", "TASTE": self.taste}
        env.update({"JUDGE_TASTE": self.judge_taste} if self.judge_taste else {})
        env.update({"JUDGE_FLIP": str(self.flip)} if self.flip else {})
        return env


CASES = {
    "writing_rl": Case("writing_rl", what="pairwise vs graded references, the curriculum climbing"),
    "brpo": Case("brpo", what="each rollout vs a bootstrapped sibling"),
    "tournament": Case("tournament", what="a round robin of siblings, Bradley-Terry rewards"),
    "grrm_mt_grpo": Case("grrm_mt_grpo", what="one ranking and scores per group (MT rows)"),
    "rubric": Case("rubric", what="a score per weighted criterion"),
    "noisy": Case("brpo", flip=0.2, what="BRPO, the judge reversing 20% of its verdicts"),
    # The judge indifferent (every verdict a tie): the length term alone teaches, words within 3-9.
    "term": Case(
        "brpo",
        taste="length:3-9",
        judge_taste="none",
        overrides=("reward.reward_kwargs.terms.length.weight=1.0", "reward.reward_kwargs.terms.length.target_length=6"),
        what="the length term alone (the judge indifferent)",
    ),
    # The control: the taste reversed, the measure must fall.
    "control": Case("brpo", taste="-letter:e", what="BRPO, the taste reversed (fewer e's)"),
    "tournament_control": Case("tournament", taste="-letter:e", what="the tournament, the taste reversed"),
}


# What the calling shell may hold that would change a run: dropped before the case sets its own.
UNWANTED = ("JUDGE_BASE_URL", "JUDGE_MODEL", "GENRM", "RAY_ADDRESS", "STEPS", "JUDGE_TASTE", "JUDGE_FLIP", "TRAINER",
            "MODEL_PATH", "GENRM_PATH", "ROWS", "HF_CHECKPOINT", "POLICY", "JUDGE")  # fmt: skip


def run_env(case: Case, trainer: str, seed: int, out: Path, environ=os.environ) -> dict[str, str]:
    """``tiny_train.sh``'s environment for one run: the shell's, less UNWANTED, then the case's settings."""
    env = {name: value for name, value in environ.items() if name not in UNWANTED}
    env.update({**case.env(), "SEED": str(seed), "OUT": str(out), "SKIP_VENV": "1"})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    env.update({"TRAINER": trainer} if trainer != "v1-sync" else {})
    return env


def run(case: Case, trainer: str, seed: int, out: Path) -> dict:
    """One ``tiny_train.sh`` run; its summary.json (with the exit status and the taste's figures)."""
    env = run_env(case, trainer, seed, out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "tiny_train.out").open("w") as log:
        rc = subprocess.run(
            ["bash", "scripts/tiny_train.sh", case.method, *case.overrides], cwd=REPO, env=env, stdout=log, stderr=log
        ).returncode
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return {**summary, "exit": rc}


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def table(results: dict) -> list[str]:
    lines = [f"{'case':<14}{'trainer':<20}{'seeds':>6}{'start':>14}{'end':>14}{'gain':>14}{'min z':>8}{'learned':>9}"]
    for (name, trainer), runs in results.items():
        taste = [r.get("taste", {}) for r in runs]
        checked = [t for t in taste if "learned" in t]
        lines.append(
            f"{name:<14}{trainer:<20}{len(runs):>6}"
            f"{spread([t['start'] for t in checked]):>14}{spread([t['end'] for t in checked]):>14}"
            f"{spread([t['gain'] for t in checked]):>14}"
            f"{min((t['z'] for t in checked), default=float('nan')):>8.1f}"
            f"{sum(t['learned'] for t in checked):>6}/{len(runs):<2}"
        )
    return lines


def plot(results: dict, path: Path) -> str:
    from writing_rl.plot import PALETTE
    from writing_rl.plot import plot as draw_png

    def draw(axes) -> None:
        for color, ((name, trainer), runs) in zip(PALETTE * 3, results.items()):
            for i, r in enumerate(runs):
                measure = sorted((int(k), v) for k, v in r.get("taste", {}).get("measure", {}).items())
                if measure:
                    label = f"{name} ({trainer}, {r['taste']['taste']})" if i == 0 else None
                    axes.plot(*zip(*measure), color=color, alpha=0.8, linewidth=1.2, label=label)
        axes.set_xlabel("training step")
        axes.set_ylabel("the taste's measure on the rollouts (mean per step)")
        axes.set_title("a tiny policy learns the stand-in judge's taste (a line per seed)", fontsize="small")
        axes.legend(fontsize="x-small", loc="upper left", frameon=False)

    return draw_png(path, draw)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--trainers", default="v1-sync", help="comma-separated (docs/trainers.md); default v1-sync")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    parser.add_argument("--out", default=str(REPO / "runs" / "learning"), help="where the runs go")
    args = parser.parse_args()
    names = args.cases.split(",")
    unknown = [name for name in names if name not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}: expected some of {', '.join(CASES)}")
    out = Path(args.out).resolve()
    results: dict = {}
    start = time.monotonic()
    for name in names:
        for trainer in args.trainers.split(","):
            for seed in map(int, args.seeds.split(",")):
                began = time.monotonic()
                summary = run(CASES[name], trainer, seed, out / name / trainer / f"seed-{seed}")
                results.setdefault((name, trainer), []).append(summary)
                taste = summary.get("taste", {})
                figures = f"{taste['start']:.1f} -> {taste['end']:.1f} (z {taste['z']:.1f})" if "z" in taste else "-"
                print(f"{name} {trainer} seed {seed}: exit {summary['exit']}, {figures}, "
                      f"{time.monotonic() - began:.0f}s", flush=True)  # fmt: skip
    print("\n".join(table(results)))
    print(f"total {time.monotonic() - start:.0f}s")
    (out / "learning.json").write_text(
        json.dumps({f"{n}/{t}": runs for (n, t), runs in results.items()}, indent=2) + "\n"
    )
    print(plot(results, out / "learning.png"))
    return 0 if all(r.get("exit") == 0 for runs in results.values() for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
