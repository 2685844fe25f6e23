"""What `writing-rl curriculum show` prints and plots: the levels of a run's curriculum state dir, read
only (the snapshot with the write-ahead log replayed, as a restarted scheduler would see them)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from writing_rl.curriculum.log import LATEST, WAL, load_levels, read_state, step_snapshots


def describe_state(state_dir: str | Path, top: int = 5) -> str:
    """Level histogram, share at the top level, the most and least advanced ids, the steps with
    snapshots, and how much of it the WAL holds."""
    latest, wal = Path(state_dir, LATEST), Path(state_dir, WAL)
    if not latest.exists() and not wal.exists():
        raise FileNotFoundError(f"no curriculum state in {state_dir} (expected {LATEST} or {WAL})")
    state = read_state(state_dir)
    ids, levels, references = state.table.arrays()
    changed = max((os.path.getmtime(p) for p in (latest, wal) if p.exists()))
    lines = [f"{state_dir}  (last written {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(changed))})"]
    checkpoint = "none yet" if state.checkpoint is None else f"step {state.checkpoint}"
    torn = "; a torn last record ignored" if state.torn else ""
    lines.append(f"{LATEST} + {state.applied} WAL records; last verl checkpoint seen: {checkpoint}{torn}")
    if not len(ids):
        return "\n".join(lines + ["no ids seen yet"])
    total = len(ids)
    at_top = int((levels >= references - 1).sum())
    lines.append(f"{total} ids; {at_top} ({at_top / total:.1%}) at their hardest reference")
    counts = np.bincount(levels)
    for level, count in enumerate(counts):
        bar = "#" * max(1 if count else 0, round(40 * count / counts.max()))
        lines.append(f"  level {level:>3}: {count:>8} ({count / total:6.1%}) {bar}")
    progress = levels / np.maximum(1, references - 1)
    by_key = np.argsort(ids, kind="stable")  # ties broken by id
    most = by_key[np.argsort(-progress[by_key], kind="stable")][:top]
    least = by_key[np.argsort(progress[by_key], kind="stable")][:top]
    show = lambda rows: ", ".join(f"{ids[r]} ({levels[r]}/{references[r] - 1})" for r in rows)  # noqa: E731
    lines.append(f"most advanced: {show(most)}")
    lines.append(f"least advanced: {show(least)}")
    steps = step_snapshots(state_dir)
    if steps:
        lines.append(f"step snapshots: {', '.join(map(str, steps))}")
    return "\n".join(lines)


def histogram_over_steps(state_dir: str | Path) -> tuple[list[int], np.ndarray]:
    """Steps with snapshots and, per step, the count of ids at each level (rows: steps)."""
    steps = step_snapshots(state_dir)
    per_step = [np.bincount(load_levels(p).arrays()[1]) for p in steps.values()]
    width = max((len(c) for c in per_step), default=0)
    table = np.zeros((len(per_step), width), dtype=np.int64)
    for row, counts in enumerate(per_step):
        table[row, : len(counts)] = counts
    return list(steps), table
