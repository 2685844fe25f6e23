"""Where a (re)started reference scheduler begins: which levels, by the rule of docs/curriculum.md ("Restarts
follow verl"), from verl's tracker file, the snapshots and the write-ahead log in the state dir."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import ray

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.log import (
    LATEST,
    LevelTable,
    checkpoint_tag,
    load_levels,
    read_state,
    step_snapshots,
)

logger = logging.getLogger("writing_rl")

TRACKER = "latest_checkpointed_iteration.txt"


def checkpointed_step(checkpoint_dir: str | None) -> int | None:
    """The step verl's tracker file names (verl resumes from it with resume_mode=auto)."""
    if not checkpoint_dir:
        return None
    try:
        return int(Path(checkpoint_dir, TRACKER).read_text().strip())
    except (OSError, ValueError):
        return None


def checkpoint_marker(checkpoint_dir: str | None, known: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """(step, mtime_ns) of verl's tracker file; the file is read only when its mtime differs from
    ``known``'s. verl rewrites it at every save, so a save is noticed even when its step equals the one
    already there (a fresh run in an old run's checkpoint dir). None while it is missing or half written."""
    if not checkpoint_dir:
        return None
    try:
        mtime_ns = os.stat(os.path.join(checkpoint_dir, TRACKER)).st_mtime_ns
    except OSError:
        return None
    if known is not None and known[1] == mtime_ns:
        return known
    step = checkpointed_step(checkpoint_dir)
    return None if step is None else (step, mtime_ns)


@dataclass
class Start:
    """Where a scheduler starts: its levels and what the state dir keeps of the past."""

    table: LevelTable
    seq: int
    checkpoint: int | None
    marker: tuple[int, int] | None
    source: str
    drop_steps: list[int] = field(default_factory=list)  # step snapshots of a discarded history
    save_step: int | None = None  # the state at this step has no step snapshot yet
    groups: dict[str, list] = field(default_factory=dict)  # a restart within the run: the open groups' pins


def recover(settings: CurriculumConfig, run: str) -> Start:
    """The levels a (re)started scheduler begins with (the rule: module docstring)."""
    state_dir = settings.state_dir
    log = read_state(state_dir)
    current = checkpoint_marker(settings.checkpoint_dir)
    steps = step_snapshots(state_dir)
    replayed = f"{LATEST} + {log.applied} WAL records"
    if log.meta.run == run:
        source = f"{replayed} (restarted within the run)"
        return Start(log.table, log.seq, log.checkpoint, log.marker, source, groups=log.groups)
    if not settings.resume:
        return Start(LevelTable(), log.seq, None, current, "fresh (trainer.resume_mode=disable)", list(steps))
    step = settings.resume_step if settings.resume_step is not None else (current[0] if current else None)
    if step is None:
        return Start(log.table, log.seq, log.checkpoint, current, f"{replayed} (no checkpoint to resume from)")
    later = [s for s in steps if s > step]
    if step in steps:
        table = load_levels(steps[step])
        return Start(table, log.seq, step, current, f"{steps[step].name} (verl resumes from step {step})", later)
    # No snapshot of step S (the run died before writing it, or between writing checkpoint S and the
    # scheduler's next request): the records before the cut of S are step S's state, as long as the base
    # snapshot predates that cut and the WAL saw checkpoint S as a cut or not at all (a WAL that began
    # after this tracker file was written holds no state of step S).
    cut = any(record.get("checkpoint") == step for record in log.records)
    if checkpoint_tag(log.meta.checkpoint) < step and (cut or log.marker != current):
        table = read_state(state_dir, before_checkpoint=step).table
        source = f"{LATEST} + WAL before checkpoint {step} (verl resumes from step {step})"
        return Start(table, log.seq, step, current, source, later, save_step=step)
    logger.warning("curriculum: verl resumes from step %s but %s holds no state of it", step, state_dir)
    return Start(log.table, log.seq, step, current, f"{replayed} (no state of step {step} kept)", later)


def run_identity(settings: CurriculumConfig) -> str:
    """Which trainer run a scheduler serves: the Ray session, job and namespace (a restarted trainer is a
    new job, and its driver a new namespace), with the resume settings. Same identity: a scheduler
    restarted within the run."""
    context = ray.get_runtime_context()
    try:  # the session tells clusters apart (job ids restart at 01000000); no public API has it
        session = ray._private.worker.global_worker.node.session_name
    except AttributeError:
        session = ""
    return f"{session}/{context.get_job_id()}/{context.namespace}/resume={settings.resume}:{settings.resume_step}"
