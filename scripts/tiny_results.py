"""What a tiny run left behind, read back (scripts/tiny_train.py): verl's metrics per step, verl's dumps of the
rollouts and validations, the taste measured on their texts (not from the judge), the learning check, the per-step
table and the plot."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

# What the per-step table shows, besides the reward: (metric, column heading).
COLUMNS = [
    ("judge/calls_per_sample", "calls/sample"),
    ("judge/error_rate", "judge err"),
    ("judge/parse_error_rate", "parse err"),
    ("judge/latency_p50_s", "judge p50 s"),
    ("curriculum/level_mean", "ref level"),
    ("actor/grad_norm", "grad norm"),
    ("timing_s/step", "step s"),
]

# The learning check: the taste's value over the first and the last WINDOW steps' rollouts.
WINDOW = 3
MIN_Z = 3.0


def say(message: str) -> None:
    print(message, flush=True)


def read_metrics(path: Path) -> dict[int, dict]:
    """verl's metrics of each training step. fully-async logs the records of its rollouter beside them, and a
    step's training metrics under the weight version current when it logs them: its training/global_step
    names the step."""
    steps = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                data = record["data"]
                if "critic/score/mean" in data:
                    steps[int(data.get("training/global_step", record["step"]))] = data
    return steps


def read_dump(folder: Path) -> dict[int, list[str]]:
    """verl's dump of each step's rollouts (trainer.rollout_data_dir) or validation
    (trainer.validation_data_dir): the texts it generated, by step."""
    texts = {}
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        if path.stem.isdigit():
            texts[int(path.stem)] = [json.loads(line)["output"] for line in path.open(encoding="utf-8") if line.strip()]
    return texts


def taste_of(spec: str, out: Path) -> dict:
    """The taste's measure on the texts verl generated, per step (not from the judge): verl's rollout dump and,
    where the trainer validated, its validation dump; and the learning check, on the taste's value (higher is
    what the judge likes) over the first and the last WINDOW steps' rollouts."""
    from taste import parse_taste

    taste = parse_taste(spec)
    rollouts, validation = read_dump(out / "rollouts"), read_dump(out / "validation")
    result = {
        "taste": spec,
        "measure": {step: mean(map(taste.measure, texts)) for step, texts in sorted(rollouts.items())},
        "validation": {step: mean(map(taste.measure, texts)) for step, texts in sorted(validation.items())},
    }
    steps = sorted(rollouts)
    if len(steps) >= 2 * WINDOW:
        first = [taste.value(t) for step in steps[:WINDOW] for t in rollouts[step]]
        last = [taste.value(t) for step in steps[-WINDOW:] for t in rollouts[step]]
        gain, z = difference(first, last)
        result.update(
            start=mean(taste.measure(t) for step in steps[:WINDOW] for t in rollouts[step]),
            end=mean(taste.measure(t) for step in steps[-WINDOW:] for t in rollouts[step]),
            gain=gain, z=z, learned=z >= MIN_Z,
        )  # fmt: skip
    return result


def learning_line(measured: dict) -> str:
    """One line: the measure over the first and the last WINDOW steps' rollouts, and the check."""
    verdict = "learned" if measured["learned"] else "NOT learned"
    return (
        f"   taste {measured['taste']}: {measured['start']:.1f} per rollout in the first {WINDOW} steps, "
        f"{measured['end']:.1f} in the last {WINDOW} (the judge's way: {measured['gain']:+.2f}, "
        f"z = {measured['z']:.1f}): {verdict}"
    )


def write_json(path: Path, value: dict) -> None:
    from writing_rl.files import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(value, indent=2) + "\n")


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def difference(first: list[float], last: list[float]) -> tuple[float, float]:
    """mean(last) - mean(first) and its size in standard errors (Welch)."""
    gain = mean(last) - mean(first)
    error = (statistics.variance(first) / len(first) + statistics.variance(last) / len(last)) ** 0.5
    return gain, (gain / error if error else (math.inf if gain > 0 else 0.0))


def report(steps: dict[int, dict], out: Path, taste: dict | None, title: str) -> None:
    terms = sorted({key for data in steps.values() for key in data if key.startswith("reward_terms/")})
    columns = COLUMNS + [(key, key.split("/", 1)[1]) for key in terms]
    present = [(key, head) for key, head in columns if any(key in data for data in steps.values())]
    heads = ["step", "reward"] + (["taste"] if taste else []) + [head for _, head in present]
    say("   " + "  ".join(f"{h:>12}" for h in heads))
    for step, data in sorted(steps.items()):
        cells = [f"{step:>12}", f"{data.get('critic/score/mean', float('nan')):>12.4f}"]
        if taste:
            cells.append(f"{taste['measure'].get(step, float('nan')):>12.4g}")
        cells += [f"{data.get(key, float('nan')):>12.4g}" for key, _ in present]
        say("   " + "  ".join(cells))
    plot_rewards(steps, out / "reward.png", taste, title)


def plot_rewards(steps: dict[int, dict], path: Path, taste: dict | None, title: str) -> None:
    from writing_rl.plot import BLUE, PALETTE, plot

    xs = sorted(steps)

    def draw(axes) -> None:
        axes.plot(xs, [steps[x].get("critic/score/mean") for x in xs], marker="o", color=BLUE, label="mean reward")
        low, high = ([steps[x].get(f"critic/score/{end}") for x in xs] for end in ("min", "max"))
        axes.fill_between(xs, low, high, color=BLUE, alpha=0.2, label="min to max")
        axes.set_xlabel("training step")
        axes.set_ylabel("reward (verl's critic/score)")
        if len(xs) <= 12:
            axes.set_xticks(xs)
        lines = [axes]
        if taste:
            right = axes.twinx()
            measured = sorted(taste["measure"].items())
            right.plot(*zip(*measured), marker=".", color=PALETTE[1], label=f"taste {taste['taste']} (rollouts)")
            if taste["validation"]:
                right.plot(*zip(*sorted(taste["validation"].items())), marker="s", linestyle="", color=PALETTE[2],
                           label="taste (validation)")  # fmt: skip
            right.set_ylabel(f"taste measure, on the text ({taste['taste']})")
            lines.append(right)
        handles = [h for ax in lines for h in ax.get_legend_handles_labels()[0]]
        labels = [lab for ax in lines for lab in ax.get_legend_handles_labels()[1]]
        axes.legend(
            handles, labels, fontsize="small", loc="lower left", bbox_to_anchor=(0, 1.01), ncol=4, frameon=False
        )
        axes.set_title(title, fontsize="small", pad=24)

    say(f"   reward per step: {plot(path, draw)}")
