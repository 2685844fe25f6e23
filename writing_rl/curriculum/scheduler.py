"""Writing-RL's dynamic reference curriculum: which reference each prompt is currently judged against.

``ReferenceScheduler`` keeps each prompt's *level* (the index of the reference, easiest first, its rollouts are
judged against) in one named Ray actor that every reward worker talks to. How groups pin and advance a level:
docs/methods/writing-rl.md; what survives crashes, checkpoints and restarts: docs/curriculum.md. Beyond those:

- ``pin`` never hands out a level that is not durable: a pin of an id whose advance is still being written waits
  for that write. (A new id's level-0 record is written without waiting: level 0 is also what replay gives an
  id it has never seen.)
- A failed WAL write or fsync stops the scheduler (``_fail``, then ``on_fatal``). A failed advance may or may not
  be on disk (its record may have reached it, or a compaction taken meanwhile may hold it): either is a
  consistent state, since nothing was paid for it.
- Checkpoints are cut by an ordering rule, not by timing: before it applies any request, the scheduler stats
  verl's tracker file and first cuts a checkpoint it has not seen (``_observe_checkpoint``). verl's synchronous
  trainer returns every reward of step S, updates, saves checkpoint S (the tracker file last), validates
  (validation moves no level) and only then rolls out step S+1, so the state at the cut is that at the end of S.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import uuid
from pathlib import Path

import ray

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.groups import OpenGroups
from writing_rl.curriculum.log import (
    LATEST,
    WAL,
    Meta,
    WALWriteError,
    WriteAheadLog,
    save_levels,
    step_path,
    step_snapshots,
)
from writing_rl.curriculum.start import Start, checkpoint_marker, recover, run_identity
from writing_rl.files import DirectoryLock, DirectoryLocked
from writing_rl.reward_loop.actors import remote_class
from writing_rl.reward_loop.dropped_groups import listener_name
from writing_rl.reward_loop.placement import placement_options

logger = logging.getLogger("writing_rl")

EXIT_GRACE_S = 1.0  # after a fatal WAL failure, so the replies carrying the error go out before the exit


class ReferenceScheduler:
    """The levels of one run (a Ray actor; one asyncio loop, so each method runs to its next await).

    ``run`` names the trainer run (``run_identity``); None: a new run. ``fsync`` is injectable for tests,
    and so is ``on_fatal``, called with the ``WALWriteError`` that stops the scheduler (default: exit the
    process if it is a Ray actor, so Ray restarts it from the disk; elsewhere nothing more).
    """

    def __init__(self, settings: CurriculumConfig, run: str | None = None, fsync=os.fsync, on_fatal=None):
        self.settings = settings
        self.state_dir = Path(settings.state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.run = run or f"local-{uuid.uuid4().hex}"
        self.lock = lock_state_dir(self.state_dir, self.run)
        self.failed: WALWriteError | None = None
        self._on_fatal = on_fatal or exit_if_actor
        self._unacked: dict[str, asyncio.Future] = {}  # id -> its advance's record, until fsynced
        start = recover(settings, self.run)
        self.table, self.seq, self.checkpoint, self.marker = start.table, start.seq, start.checkpoint, start.marker
        self.source = start.source
        self.groups = OpenGroups()  # Writing-RL groups judged one rollout at a time (groups.py)
        for uid, pin in start.groups.items():
            self.groups.restore(uid, pin)
        try:
            self._begin(start, fsync)
        except OSError as err:  # e.g. a restart after a WAL failure, on a disk that is still full
            raise WALWriteError(f"curriculum: cannot start the scheduler over {self.state_dir} ({err})") from err
        self._compacting = False
        self.groups.on_close = self._log_closed
        self._unsaved_steps: dict[int, tuple] = {}  # step snapshots whose write failed, retried before compaction

    def _begin(self, start: Start, fsync) -> None:
        """Make the state dir hold exactly ``start``: a kill at any point leaves a dir that recovers to it."""
        for step in start.drop_steps:
            step_path(self.state_dir, step).unlink(missing_ok=True)
        if start.drop_steps:
            logger.warning("curriculum: dropped the snapshots of steps %s (a discarded history)", start.drop_steps)
        if start.save_step is not None:
            save_levels(step_path(self.state_dir, start.save_step), self.table.arrays(), self._meta())
        save_levels(self.state_dir / LATEST, self.table.arrays(), self._meta())  # holds every seq so far
        self.log = WriteAheadLog(self.state_dir / WAL, fsync, on_failure=self._fail)
        self.log.truncate()
        logger.info("curriculum: %d ids from %s", len(self.table), self.source)

    def _meta(self) -> Meta:
        groups = {uid: t.pin() for uid, t in self.groups.open.items()}
        return Meta(self.seq, self.checkpoint, self.marker, self.run, groups)

    def close(self) -> None:
        """Release the WAL's file and the state dir (idempotent); the scheduler takes no more requests."""
        self.log.close()
        self.lock.release()
        self.failed = self.failed or WALWriteError(f"curriculum: the scheduler over {self.state_dir} is closed")

    async def pin(self, key: str, references: int) -> int:
        """The current level of ``key`` (started at 0 the first time it is seen), once it is durable."""
        self._usable()
        self._observe_checkpoint()
        while (unacked := self._unacked.get(key)) is not None and not unacked.done():
            await asyncio.shield(unacked)  # raises the scheduler's WALWriteError if that write fails
        row = self.table.index.get(key)
        if row is None or self.table.references[row] != references:
            row = self.table.slot(key, references)
            self._record(key, row, wait=False)  # durable with the next batch; level 0 is also the default
        return min(int(self.table.levels[row]), references - 1)

    async def advance(self, key: str, pinned: int, uid: str | None = None) -> bool:
        """One step up, if ``key`` is still at the level the group ``uid`` was judged against (two groups of one
        id in flight move it once) and below its last reference; returns once the change is durable
        (``WALWriteError`` if it could not be written: module docstring)."""
        self._usable()
        self._observe_checkpoint()
        row = self.table.index.get(key)
        if row is None or self.table.levels[row] != pinned or pinned + 1 >= self.table.references[row]:
            return False
        if uid is not None:
            self.groups.moved(uid, key, pinned + 1)
        await asyncio.shield(self._set_level(key, row, pinned + 1))
        return True

    async def withdraw(self, uids: list[str]) -> int:
        """Groups verl dropped without training on them (evicted from its replay buffer: stale, failed or
        filtered; JudgeHealthSampler calls this): a group still open can no longer move its level, and a
        level a group moved goes back down while nothing has moved it since. Returns how many went back,
        once durable."""
        self._usable()
        self._observe_checkpoint()
        writes = []
        for uid in uids:
            moved = self.groups.withdraw(uid)
            row = None if moved is None else self.table.index.get(moved[0])
            if row is not None and self.table.levels[row] == moved[1]:
                writes.append(self._set_level(moved[0], row, moved[1] - 1))
        await asyncio.gather(*(asyncio.shield(written) for written in writes))
        return len(writes)

    async def dropped(self, uids: list[str]) -> dict[str, float]:
        """``withdraw``, as a dropped-groups listener answers (reward_loop/dropped_groups.py)."""
        return {"curriculum/withdrawn_advances_total": float(await self.withdraw(uids))}

    def _set_level(self, key: str, row: int, level: int) -> asyncio.Future:
        self.table.levels[row] = level
        written = self._record(key, row)
        self._unacked[key] = written
        written.add_done_callback(functools.partial(self._acknowledged, key))
        return written

    async def batch(self, requests: list[tuple]) -> list:
        """A reward worker's requests of one batch window, answered in order (an error in its place):
        ``("pin", key, references, uid, expected, timeout_s)`` -> the level pinned for the group ``uid``;
        ``("report", uid, wins, threshold[, reports])`` -> whether the group's last report moved its level up
        (``reports`` rollouts of the group, ``wins`` of them won; one rollout by default, ``wins`` a bool)."""
        calls = [self._pin_group(*r[1:]) if r[0] == "pin" else self._report(*r[1:]) for r in requests]
        return await asyncio.gather(*calls, return_exceptions=True)

    async def _pin_group(self, key: str, references: int, uid: str, expected: int, timeout_s: float) -> int:
        tally = self.groups.get(uid)
        if tally is None and uid in self.groups.finished:  # a rollout after its group finished: scored alone
            level = self.groups.finished[uid]
            return level if level >= 0 else await self.pin(key, references)
        if tally is None:
            level = await self.pin(key, references)
            if self.groups.get(uid) is None:  # (another pin may have won meanwhile)
                tally = self.groups.start(uid, key, level, expected, timeout_s)
                # Durable with the next batch: a level change after this pin is written after it.
                self._append({"group": uid, "pin": tally.pin()}, wait=False)
            tally = self.groups.get(uid)
        return tally.level

    async def _report(self, uid: str, wins: int, threshold: float, reports: int = 1) -> bool:
        tally = self.groups.get(uid)
        if tally is None or not tally.add(wins, reports):  # finished or expired; or more rollouts to come
            return False
        self.groups.finish(uid)
        return tally.qualifies(threshold) and await self.advance(tally.key, tally.level, uid)

    def _acknowledged(self, key: str, written: asyncio.Future) -> None:
        if self._unacked.get(key) is written:
            del self._unacked[key]

    def _usable(self) -> None:
        if self.failed is not None:
            raise self.failed

    def _fail(self, error: WALWriteError) -> None:
        """The WAL broke (it has failed every record and job queued): no more requests, then ``on_fatal``."""
        self.failed = error
        self._on_fatal(error)

    def snapshot(self) -> dict:
        """The current state (for tests and inspection)."""
        self._usable()
        return {"levels": self.table.as_dict(), "source": self.source, "checkpoint": self.checkpoint, "seq": self.seq}

    def stats(self) -> dict:
        """WAL counters (bench/curriculum_scheduler.py) and the groups judged one rollout at a time still open."""
        return {
            "records": self.log.written,
            "fsyncs": self.log.fsyncs,
            "seq": self.seq,
            "open_groups": len(self.groups.open),
            "withdrawn_groups": self.groups.withdrawn,
        }

    async def flush(self) -> None:
        """Return once everything applied so far is on disk."""
        self._usable()
        await self.log.idle()

    async def compact(self) -> None:
        """Fold the WAL into ``levels.latest.npz`` now (it happens by itself every ``compact_records``)."""
        self._usable()
        await self._compact()

    def _compact(self) -> asyncio.Future:
        self._compacting = True
        done = self.log.job(self._prepare_compaction, truncate=True)
        done.add_done_callback(_log_failure("a compaction"))
        done.add_done_callback(lambda _: setattr(self, "_compacting", False))
        return done

    def _record(self, key: str, row: int, wait: bool = True):
        level, references = int(self.table.levels[row]), int(self.table.references[row])
        return self._append({"id": key, "level": level, "refs": references}, wait)

    def _log_closed(self, uid: str) -> None:
        """A group finished, expired or was withdrawn: a restarted scheduler must not open it again."""
        self._append({"group": uid, "closed": 1}, wait=False)

    def _append(self, record: dict, wait: bool = True):
        self.seq += 1
        done = self.log.append({"seq": self.seq, "ckpt": self.checkpoint, **record}, wait)
        if self.log.since_truncation >= self.settings.compact_records and not self._compacting:
            self._compact()
        return done

    def _observe_checkpoint(self) -> None:
        marker = checkpoint_marker(self.settings.checkpoint_dir, self.marker)
        if marker is None or marker == self.marker:
            return
        # The cut: the state now is the state at the end of step S (every advance of step S has returned).
        step = marker[0]
        arrays = self.table.arrays()
        self.seq += 1
        self.checkpoint, self.marker = step, marker
        self.log.append({"seq": self.seq, "ckpt": step, "checkpoint": step, "mtime_ns": marker[1]}, wait=False)
        meta = self._meta()
        self.log.job(lambda: functools.partial(self._write_step, step, arrays, meta)).add_done_callback(
            _log_failure(f"the snapshot of step {step}")
        )

    def _write_step(self, step: int, arrays, meta: Meta) -> None:
        self._unsaved_steps[step] = (arrays, meta)
        self._save_unsaved_steps()

    def _save_unsaved_steps(self) -> None:
        """Write pending step snapshots (before a compaction, which would drop what rebuilds them)."""
        for step, (arrays, meta) in sorted(self._unsaved_steps.items()):
            save_levels(step_path(self.state_dir, step), arrays, meta)
            del self._unsaved_steps[step]
        for old in list(step_snapshots(self.state_dir))[: -self.settings.keep_steps]:
            step_path(self.state_dir, old).unlink(missing_ok=True)

    def _prepare_compaction(self):
        arrays, meta = self.table.arrays(), self._meta()  # every record up to seq, in the queue order

        def write() -> None:
            self._save_unsaved_steps()
            save_levels(self.state_dir / LATEST, arrays, meta)

        return write


class CurriculumInUse(RuntimeError):
    """Another scheduler (another training run) writes the same state dir."""


def lock_state_dir(state_dir: Path, run: str) -> DirectoryLock:
    """The state dir for this scheduler alone: two schedulers appending to one WAL would interleave their
    levels. A second one fails at start, naming the holder (a scheduler restarted by Ray after its process
    died finds the lock free: the kernel dropped it with the process)."""
    holder = f"the curriculum scheduler of run {run} (pid {os.getpid()} on {socket.gethostname()})"
    try:
        return DirectoryLock(state_dir, holder)
    except DirectoryLocked as err:
        raise CurriculumInUse(
            f"curriculum: {err}; two training runs cannot share one state dir (each would overwrite the "
            "other's levels): give this run its own reward.reward_kwargs.curriculum.state_dir (by default "
            "{trainer.default_local_dir}/curriculum), or stop the other run"
        ) from None


def exit_if_actor(error: WALWriteError) -> None:
    """In a Ray actor: exit shortly (``EXIT_GRACE_S``), so Ray starts the actor again from the disk. The
    pause lets the replies carrying ``error`` go out first; a reply the exit still cuts off only makes
    Ray retry that call on the restarted actor."""
    if not ray.is_initialized() or ray.get_runtime_context().get_actor_id() is None:
        return
    logger.error("curriculum: the scheduler exits, to be restarted by Ray from %s", error)
    asyncio.get_running_loop().call_later(EXIT_GRACE_S, os._exit, 1)


def _log_failure(what: str):
    def check(done: asyncio.Future) -> None:
        if not done.cancelled() and isinstance(done.exception(), WALWriteError):
            return  # the WAL's failure, logged once where it happened
        if not done.cancelled() and done.exception() is not None:
            logger.error("curriculum: could not write %s: %s", what, done.exception())

    return check


def scheduler_name() -> str:
    """A dropped-groups listener's name (reward_loop/dropped_groups.py): verl's evictions reach ``dropped``."""
    return listener_name("reference_scheduler")


def get_or_create_scheduler(settings: CurriculumConfig):
    """The run's scheduler. When its process dies, Ray starts it again under the same handle (a dead
    named actor keeps its name while handles to it live, so it could not be replaced); it recovers
    everything acknowledged, and calls in flight are sent again: ``pin`` is idempotent and a repeated
    ``advance`` finds the level already moved (or moves it, if the first one was lost). Created on a node
    offering ``curriculum.actor_resources`` (reward_loop/placement.py)."""
    name = scheduler_name()
    placement = placement_options(name, settings.actor_resources, "reward.reward_kwargs.curriculum.actor_resources")
    return (
        remote_class(ReferenceScheduler)
        .options(
            name=name,
            get_if_exists=True,
            num_cpus=0,
            max_concurrency=100_000,
            max_restarts=-1,
            max_task_retries=3,
            **placement,
        )
        .remote(settings, run_identity(settings))
    )
