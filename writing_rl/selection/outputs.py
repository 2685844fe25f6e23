"""What ``writing-rl select`` writes in ``--out``, renamed into place together (the files: docs/offline-tools.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from writing_rl.offline.files import csv_text, written_together
from writing_rl.plot import BLUE, GREY, Series, histogram, render_png
from writing_rl.selection.margins import MARGIN_KINDS, IdMargin, MarginKind, Selection, bin_counts

CSV_COLUMNS = (
    "id", "domain", "margin", "rank", "responses", "comparisons", "parse_failures", "judge_errors",
    "format_errors", "status", "selected",
)  # fmt: skip


def margins_csv(items: Sequence[IdMargin]) -> str:
    """One line per id: ranked ids first (by rank), then ids without a margin (data order)."""
    ordered = sorted(items, key=lambda m: (m.rank is None, m.rank or 0, m.row))
    return csv_text(
        CSV_COLUMNS,
        (
            [m.id, m.domain, "" if m.margin is None else f"{m.margin:.6g}", m.rank or "", m.responses, m.comparisons,
             m.parse_failures, m.judge_errors, m.format_errors, m.status, int(m.selected)]
            for m in ordered
        ),
    )  # fmt: skip


def margin_histogram(
    axes, ranked: Sequence[IdMargin], choice: Selection, bins: int, kind: MarginKind = MARGIN_KINDS["win-rate"]
) -> None:
    """Draw the margins of the ranked ids, selected ones stacked under the rest, the cut of a global budget."""
    edges = [kind.low + (kind.high - kind.low) * i / bins for i in range(bins + 1)]

    def counts(selected: bool) -> list[int]:
        return bin_counts([m.margin for m in ranked if m.selected == selected], kind.low, kind.high, bins)

    cut = min((m.margin for m in choice.chosen), default=None) if choice.targets is None else None
    on, off = counts(True), counts(False)
    histogram(
        axes,
        edges,
        [Series(f"selected {sum(on)}", on, BLUE), Series(f"not selected {sum(off)}", off, GREY)],
        title=f"margin of {len(ranked)} ids",
        x_label=kind.label,
        y_label="ids",
        marker=cut,
        marker_label="" if cut is None else f"cut {cut:.3f}",
    )


def write_outputs(
    out: Path, table, items, ranked, choice: Selection, summary: dict, kind: MarginKind, bins: int
) -> dict[str, str]:
    """Write every output (``table``: the input rows) and return their paths by name."""
    import pyarrow.parquet as pq

    paths = {
        "selected": out / "selected.parquet",
        "margins": out / "margins.csv",
        "histogram": out / "margins.png",
        "summary": out / "summary.json",
    }
    rows = sorted(m.row for m in choice.chosen)
    png = render_png(lambda axes: margin_histogram(axes, ranked, choice, bins, kind))
    if png is None:  # no matplotlib: everything else is written, the report says why the plot is missing
        del paths["histogram"]
    with written_together(paths) as tmp:  # summary.json, named last, is renamed last
        pq.write_table(table.take(rows), tmp["selected"])
        tmp["margins"].write_text(margins_csv(items), encoding="utf-8")
        if png is not None:
            tmp["histogram"].write_bytes(png)
        tmp["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if png is None:  # one left by an earlier run would picture another selection
        (out / "margins.png").unlink(missing_ok=True)
    return {name: str(path) for name, path in paths.items()}
