"""``writing-rl monitor``: judge health per training step, read from a run's rollout dumps.

verl writes one ``<step>.jsonl`` per training step to ``trainer.rollout_data_dir``; each line holds ``input``,
``output``, ``gts``, ``score``, ``step`` and the sample's reward extra info. From them: judge errors, unreadable
replies by kind, position consistency, judge calls and latency, retries / 429s / tokens / cost where the run
has those keys (and the cost over the steps so far, ``judge/cost_cumulative``), the mean reward and response length and their correlation (reward_loop/health/metrics.py). The length is
the line's ``response_length`` (tokens) when it has one, else the response's word count.

verl's v1 trainer (``trainer.use_v1=true``) dumps no reward extra info (only ``uid``): from its dumps only
reward, length and their correlation can be read; the tracker route (reward_loop/health/sampler.py) has the
judge numbers of such a run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from writing_rl.offline.files import InputError, lines
from writing_rl.reward_loop.health.metrics import (
    COST_CUMULATIVE,
    COST_TOTAL,
    PREFIX,
    HealthInputError,
    judge_health,
    number,
)
from writing_rl.reward_loop.health.shadow import PREFIX as SHADOW
from writing_rl.reward_loop.results import UNREADABLE_KEYS
from writing_rl.reward_loop.shadow.keys import SHADOW_KEYS
from writing_rl.settings import ConfigError

# Keys whose values feed the health numbers: checked per line so a bad value names its file:line.
HEALTH_KEYS = (
    "judge_error",
    *UNREADABLE_KEYS,
    "format_error",
    "judge_calls",
    "judge_latency_s",
    "judge_retries",
    "judge_rate_limited",
    "judge_tokens",
    "judge_prompt_tokens",
    "judge_completion_tokens",
    "judge_tokens_estimated",
    "judge_cost",
    "judge_hedges",
    "judge_concurrency_limit",
    "position_consistent",
    "response_length",
    *SHADOW_KEYS,
)
JUDGE_KEYS = ("judge_error", "judge_calls", *UNREADABLE_KEYS)


@dataclass
class StepHealth:
    step: int
    file: str
    samples: int
    length_unit: str  # "tokens" or "words"
    metrics: dict[str, float] = field(default_factory=dict)  # judge/... plus reward_mean, response_length_mean
    has_judge_keys: bool = False


def dump_files(directory: str | Path) -> list[tuple[int, Path]]:
    """The ``<step>.jsonl`` files of a rollout dump directory, by step."""
    path = Path(directory).expanduser()
    if not path.exists():
        raise ConfigError(f"{directory}: no such directory (a run's trainer.rollout_data_dir)")
    if not path.is_dir():
        raise ConfigError(f"{directory}: not a directory; expected a run's trainer.rollout_data_dir")
    steps = sorted((int(p.stem), p) for p in path.glob("*.jsonl") if p.stem.isdigit())
    if not steps:
        raise ConfigError(
            f"{directory}: no <step>.jsonl rollout dumps; verl writes them when trainer.rollout_data_dir is set"
        )
    return steps


def step_health(step: int, path: Path) -> StepHealth:
    rows, scores, lengths = [], [], []
    length_unit = None
    for where, record in lines(path):
        score = record.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise InputError(f"{where}: score must be a number, got {score!r}")
        for key in HEALTH_KEYS:
            try:
                number(key, record.get(key))
            except HealthInputError as err:
                raise InputError(f"{where}: {err}") from None
        unit, length = _length(record, where)
        if length_unit not in (None, unit):
            raise InputError(f"{where}: response_length is on some lines of {path} but not on others")
        length_unit = unit
        rows.append(record)
        scores.append(float(score))
        lengths.append(length)
    if not rows:
        raise InputError(f"{path}: no samples (an empty dump)")
    metrics = judge_health(rows, scores, lengths)
    metrics["reward_mean"] = sum(scores) / len(scores)
    metrics["response_length_mean"] = sum(lengths) / len(lengths)
    has_judge = any(key in row for row in rows for key in JUDGE_KEYS)
    return StepHealth(step, str(path), len(rows), length_unit or "words", metrics, has_judge)


def _length(record: dict, where: str) -> tuple[str, float]:
    if record.get("response_length") is not None:
        return "tokens", float(record["response_length"])
    output = record.get("output")
    if not isinstance(output, str):
        raise InputError(f"{where}: output must be the response text, got {type(output).__name__}")
    return "words", float(len(output.split()))


def monitor(directory: str | Path) -> list[StepHealth]:
    steps = [step_health(step, path) for step, path in dump_files(directory)]
    cost = 0.0
    for step in steps:  # the dumps hold trained samples only: the cost of dropped ones is in the tracker
        if COST_TOTAL in step.metrics:
            cost += step.metrics[COST_TOTAL]
            step.metrics[COST_CUMULATIVE] = cost
    return steps


# (header, metric key, format). A metric a step lacks prints as "-".
COLUMNS = (
    ("samples", None, "{:d}"),
    ("reward", "reward_mean", "{:.3f}"),
    ("length", "response_length_mean", "{:.0f}"),
    ("r(len,reward)", f"{PREFIX}reward_length_corr", "{:+.2f}"),
    ("judge err", f"{PREFIX}error_rate", "{:.1%}"),
    ("unreadable", f"{PREFIX}unreadable_rate", "{:.1%}"),
    ("format err", f"{PREFIX}format_error_rate", "{:.1%}"),
    ("pos consist", f"{PREFIX}position_consistency", "{:.1%}"),
    ("calls", f"{PREFIX}calls_total", "{:.0f}"),
    ("p50 s", f"{PREFIX}latency_p50_s", "{:.2f}"),
    ("p95 s", f"{PREFIX}latency_p95_s", "{:.2f}"),
    ("retries", f"{PREFIX}retries_total", "{:.0f}"),
    ("429s", f"{PREFIX}rate_limited_total", "{:.0f}"),
    ("tokens", f"{PREFIX}tokens_total", "{:.0f}"),
    ("prompt tok", f"{PREFIX}prompt_tokens_total", "{:.0f}"),
    ("compl tok", f"{PREFIX}completion_tokens_total", "{:.0f}"),
    ("est calls", f"{PREFIX}tokens_estimated_total", "{:.0f}"),
    ("cost", COST_TOTAL, "{:.4f}"),
    ("cost so far", COST_CUMULATIVE, "{:.4f}"),
    ("shadowed", f"{SHADOW}samples_total", "{:.0f}"),
    ("shadow agree", f"{SHADOW}agreement", "{:.1%}"),
    ("reward gap", f"{SHADOW}reward_gap", "{:+.3f}"),
    ("drift", f"{SHADOW}drift_max", "{:.0f}"),
)


def table(steps: list[StepHealth]) -> str:
    """One row per step; columns no step has are left out."""
    columns = [c for c in COLUMNS if c[1] is None or any(c[1] in s.metrics for s in steps)]
    header = ["step"] + [name for name, _, _ in columns]
    body = [[str(s.step)] + [_cell(s, key, fmt) for _, key, fmt in columns] for s in steps]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    out = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in [header, *body]]
    units = sorted({s.length_unit for s in steps})
    out.append(f"length in {' / '.join(units)}; unreadable = a judge reply with no usable verdict")
    if any(f"{PREFIX}tokens_estimated_total" in s.metrics for s in steps):
        out.append(
            "est calls = judge calls whose tokens were counted by writing-rl (the endpoint reported no usage); "
            "cost is at reward.reward_kwargs.judge.price (0: not priced), see docs/judges/cost.md"
        )
    if any(f"{SHADOW}samples_total" in s.metrics for s in steps):
        out.append(
            "shadowed = samples the shadow judge also scored (reported with the samples after them); reward gap = "
            "the training judge's mean reward minus the shadow's on them; drift 1 = a worker saw drift "
            "(docs/trust-your-judge.md)"
        )
    if not any(s.has_judge_keys for s in steps):
        out.append(
            "no judge keys in these dumps: verl's v1 trainer (trainer.use_v1=true) dumps no reward extra info; "
            "its judge health is in the tracker (trainer.v1.sampler.custom_sampler, see docs/judges/health.md)"
        )
    return "\n".join(out)


def _cell(step: StepHealth, key: str | None, fmt: str) -> str:
    if key is None:
        return fmt.format(step.samples)
    value = step.metrics.get(key)
    return "-" if value is None else fmt.format(value)


def as_json(steps: list[StepHealth]) -> str:
    records: list[dict[str, Any]] = [
        {"step": s.step, "file": s.file, "samples": s.samples, "length_unit": s.length_unit, **_finite(s.metrics)}
        for s in steps
    ]
    return json.dumps(records, indent=2, allow_nan=False)


def _finite(metrics: dict[str, Any]) -> dict[str, Any]:
    """NaN and infinities as null: JSON has no NaN."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


# (label, metric key) of the plotted lines: shares (0-1) and the correlation (-1..1) on one axis.
PLOTTED = (
    ("judge error rate", f"{PREFIX}error_rate"),
    ("unreadable rate", f"{PREFIX}unreadable_rate"),
    ("position consistency", f"{PREFIX}position_consistency"),
    ("r(length, reward)", f"{PREFIX}reward_length_corr"),
    ("mean reward", "reward_mean"),
    ("shadow agreement", f"{SHADOW}agreement"),
    ("reward gap to the shadow", f"{SHADOW}reward_gap"),
)


def plot_health(steps: list[StepHealth], path: str | Path) -> str:
    """A line per health number over the steps; the line to print about the PNG."""
    from writing_rl.plot import PALETTE, legend_above, plot

    def draw(axes) -> None:
        for (label, key), color in zip(PLOTTED, PALETTE):
            points = [(s.step, s.metrics[key]) for s in steps if key in s.metrics]
            if points:
                xs, ys = zip(*points)
                axes.plot(xs, ys, marker="o", label=label, color=color)
        axes.axhline(0.0, color="#bebebe", linewidth=0.8)
        axes.set_title("judge health per training step")
        axes.set_xlabel("step")
        axes.set_ylabel("share / correlation / reward")
        legend_above(axes, columns=3)

    return plot(path, draw)
