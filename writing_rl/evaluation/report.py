"""The output files of ``writing-rl eval``'s kinds in ``--out``, each written whole or not at all, and the report's
failure section (``failures``). ``plot`` (``writing_rl.plot``'s) returns the line to print, which says how to get
the plots when matplotlib is missing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from writing_rl.files import atomic_write_text
from writing_rl.plot import BLUE, NO_MATPLOTLIB, plot

__all__ = [
    "NO_MATPLOTLIB",
    "SCORED_AS_THE_BENCHMARK",
    "bar_plot_with_intervals",
    "failures",
    "failures_line",
    "interval",
    "markdown_table",
    "plot",
    "rate",
    "share",
    "write_jsonl",
    "write_reports",
]


def write_reports(out: str | Path, report: dict[str, Any], markdown: str) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "report.json", json.dumps(_finite(report), indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out / "report.md", markdown.rstrip() + "\n")


def write_jsonl(path: str | Path, records: Sequence[dict]) -> None:
    """One JSON object per line (judgments.jsonl), written whole or not at all."""
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def failures(judge_errors: int, unreadable: int, calls: int) -> dict[str, float]:
    """Judge calls that failed and replies nothing could be read from, counted and as shares of the
    calls; both are left out of every score."""
    return {
        "judge_error": judge_errors,
        "unreadable": unreadable,
        "judge_error_rate": share(judge_errors, calls),
        "unreadable_rate": share(unreadable, calls),
    }


# The failures line of a benchmark whose own rules score an unreadable reply (no preference, a rating of -1, ...).
SCORED_AS_THE_BENCHMARK = (
    "counted; a failed call is not scored, an unreadable reply is scored as the benchmark scores it"
)


def failures_line(section: dict[str, float], rule: str = "counted, never scored") -> str:
    """``rule``: what became of them, where a benchmark scores an unreadable reply (as no preference, say)."""
    return (
        f"judge errors {section['judge_error']} ({rate(section['judge_error_rate'])}), unreadable "
        f"{section['unreadable']} ({rate(section['unreadable_rate'])}): {rule}"
    )


def share(count: float, total: float) -> float:
    return count / total if total else float("nan")


def rate(value: float) -> str:
    """``0.750``, or ``–`` for a share of nothing."""
    return "–" if math.isnan(value) else f"{value:.3f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return rate(value)
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def interval(stats: dict[str, float]) -> str:
    """``7.412 [7.123, 7.700]`` for a ``mean_with_ci`` result (``–`` when there is no mean)."""
    if math.isnan(stats["mean"]):
        return "–"
    return f"{stats['mean']:.3f} [{stats['low']:.3f}, {stats['high']:.3f}]"


def bar_plot_with_intervals(axes, labels: Sequence[str], stats: Sequence[dict[str, float]], title: str, y_label: str):
    means = [s["mean"] for s in stats]
    errors = [[s["mean"] - s["low"] for s in stats], [s["high"] - s["mean"] for s in stats]]
    axes.bar(range(len(labels)), means, yerr=errors, capsize=3, color=BLUE)
    axes.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    axes.set_title(title)
    axes.set_ylabel(y_label)


def _finite(value: Any) -> Any:
    """NaN and inf as null: JSON has no spelling for them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
