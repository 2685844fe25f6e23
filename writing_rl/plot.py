"""PNG charts drawn with matplotlib, the optional ``plot`` extra (``pip install 'writing-rl[plot]'``).

matplotlib is not a dependency of verl or of this package, so it is imported only when a chart is drawn.
Without it nothing is drawn: ``render_png`` returns None and ``plot`` returns NO_MATPLOTLIB, the line a
command prints instead of ``wrote <path>``; the command's other outputs (CSV, JSON, reports) are written
as always and hold the numbers. Figures are drawn on matplotlib's Agg canvas without pyplot, so no global
backend is switched and no figure is left open.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from writing_rl.files import atomic_path

NO_MATPLOTLIB = "plots skipped: matplotlib is not installed (pip install 'writing-rl[plot]')"

BLUE, GREY, RED = "#316eb4", "#bebebe", "#c82828"
PALETTE = (BLUE, "#e68c28", "#3ca05a", RED, "#8c5ab4", "#785a3c", GREY)


def render_png(draw: Callable[[Any], None], figsize: tuple[float, float] = (8, 4.5), dpi: int = 120) -> bytes | None:
    """The PNG bytes of a figure with one axes that ``draw(axes)`` fills; None without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(figure)
    draw(figure.subplots())
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def legend_above(axes, columns: int = 4) -> None:
    """The legend in a row above the axes, where it covers no data (tight_layout keeps room for it)."""
    axes.legend(fontsize="small", loc="lower left", bbox_to_anchor=(0, 1.01), ncol=columns, frameon=False)


def plot(path: str | Path, draw: Callable[[Any], None]) -> str:
    """Draw with ``draw(axes)`` into a PNG at ``path`` (written atomically); the line to print about it."""
    png = render_png(draw)
    if png is None:
        return NO_MATPLOTLIB
    with atomic_path(path) as tmp:
        tmp.write_bytes(png)
    return f"wrote {path}"


@dataclass(frozen=True)
class Series:
    label: str
    counts: Sequence[int]  # one per bar
    color: Any  # a matplotlib colour: "#316eb4", an RGBA tuple


def _stack(axes, lefts: Sequence[float], widths: Sequence[float], series: Sequence[Series]) -> None:
    """Bars starting at ``lefts``, ``series`` stacked bottom-up."""
    if any(len(s.counts) != len(lefts) for s in series):
        raise ValueError(f"need {len(lefts)} counts in every series, one per bar")
    base = [0] * len(lefts)
    for s in series:
        axes.bar(lefts, s.counts, widths, bottom=base, align="edge", color=s.color, label=s.label)
        base = [b + c for b, c in zip(base, s.counts)]


def _finish(axes, title: str, x_label: str, y_label: str) -> None:
    from matplotlib.ticker import MaxNLocator

    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(title)
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    handles, labels = axes.get_legend_handles_labels()
    # top of the stack first, beside the axes: a legend inside would hide bars
    axes.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


def histogram(
    axes,
    edges: Sequence[float],
    series: Sequence[Series],
    title: str,
    x_label: str,
    y_label: str = "count",
    marker: float | None = None,
    marker_label: str = "",
) -> None:
    """Bars over ``edges`` (len = bins + 1), ``series`` stacked bottom-up, an optional dashed vertical marker."""
    if len(edges) < 2:
        raise ValueError("histogram: need at least two edges")
    widths = [hi - lo for lo, hi in zip(edges, edges[1:])]
    _stack(axes, edges[:-1], widths, series)
    axes.set_xlim(edges[0], edges[-1])
    if marker is not None:
        axes.axvline(marker, color=RED, linestyle="--", linewidth=1.5, label=marker_label or None)
    _finish(axes, title, x_label, y_label)


def stacked_bars(
    axes,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[int]]],
    title: str,
    x_label: str,
    y_label: str = "count",
) -> None:
    """One bar per category, ``series`` (label, one count per category) stacked bottom-up: PALETTE colours
    in order, or an even sampling of viridis when there are more series than PALETTE has colours."""
    if len(series) <= len(PALETTE):
        colors: Sequence[Any] = PALETTE
    else:
        from matplotlib import colormaps

        colors = colormaps["viridis"].resampled(len(series))(range(len(series)))
    coloured = [Series(label, counts, colors[i]) for i, (label, counts) in enumerate(series)]
    _stack(axes, [i - 0.4 for i in range(len(categories))], [0.8] * len(categories), coloured)
    every = -(-len(categories) // 30)  # at most 30 labels
    labelled = range(0, len(categories), every)
    axes.set_xticks(labelled, [categories[i] for i in labelled], rotation=90 if len(labelled) > 15 else 0, fontsize=8)
    _finish(axes, title, x_label, y_label)
