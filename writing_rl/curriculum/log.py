"""The curriculum's durable state: level snapshots, and a write-ahead log (WAL) of the changes since.

The files in ``state_dir`` and their formats: docs/curriculum.md ("The files"). Replay: the snapshot, then the
WAL's records with a larger ``seq``, in order. A last line cut short or unreadable is a record never
acknowledged (a kill during its write: an acknowledgement waits for its fsync) and is ignored; an unreadable
line with readable ones after it is damage and an error.

Durability (fsync before acknowledgement, group commit: docs/curriculum.md): snapshot jobs run in the WAL's
queue, so a job never overtakes a record queued before it. Compaction writes the snapshot holding every record
up to ``seq`` N, then truncates the WAL: a kill between the two leaves records <= N in the WAL, which replay skips.

A failed write or fsync of the WAL is fatal to the log: its owner's memory may be ahead of the disk in ways only
a replay sorts out (a later record or a compaction's snapshot may already hold a level the failed record set),
so the failed batch, everything queued after it and every later append fail with ``WALWriteError``, and the
owner starts again from the disk (scheduler.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from writing_rl.files import atomic_path, fsync_directory

logger = logging.getLogger("writing_rl")

LATEST = "levels.latest.npz"
WAL = "levels.wal"
_STEP_FILE = re.compile(r"^levels\.step_(\d+)\.npz$")


class CurriculumStateError(RuntimeError):
    """The state dir holds something replay cannot trust."""


class WALWriteError(RuntimeError):
    """The WAL could not be written: this log (and its scheduler) takes no more records."""


class LevelTable:
    """Level and reference count per id: an index of ids into numpy arrays, so a snapshot of a million
    ids is two array copies (the ids are converted once, as they appear)."""

    def __init__(self, ids: Sequence[str] = (), levels: Sequence[int] = (), references: Sequence[int] = ()):
        self.ids = [str(i) for i in ids]
        self.index = {key: i for i, key in enumerate(self.ids)}
        self._ids_array = np.array(self.ids, dtype=str)
        capacity = max(1024, len(self.ids))
        self.levels = np.zeros(capacity, dtype=np.int32)
        self.references = np.ones(capacity, dtype=np.int32)
        self.levels[: len(self.ids)] = levels
        self.references[: len(self.ids)] = references

    def __len__(self) -> int:
        return len(self.ids)

    def slot(self, key: str, references: int) -> int:
        """The row of ``key``, added at level 0 the first time it is seen."""
        row = self.index.get(key)
        if row is None:
            row = len(self.ids)
            if row == len(self.levels):
                self.levels = np.concatenate([self.levels, np.zeros_like(self.levels)])
                self.references = np.concatenate([self.references, np.ones_like(self.references)])
            self.ids.append(key)
            self.index[key] = row
        self.references[row] = references
        return row

    def level(self, key: str) -> int:
        row = self.index.get(key)
        return 0 if row is None else int(self.levels[row])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, levels, references), copies safe to write from another thread."""
        n = len(self.ids)
        if len(self._ids_array) < n:
            self._ids_array = np.concatenate([self._ids_array, np.array(self.ids[len(self._ids_array) :], dtype=str)])
        return self._ids_array[:n], self.levels[:n].copy(), self.references[:n].copy()

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.ids, self.levels[: len(self.ids)].tolist()))


def step_path(state_dir: str | Path, step: int) -> Path:
    return Path(state_dir, f"levels.step_{step}.npz")


def step_snapshots(state_dir: str | Path) -> dict[int, Path]:
    """Per-checkpoint snapshots in ``state_dir``, by step."""
    state_dir = Path(state_dir)
    if not state_dir.is_dir():
        return {}
    found = {}
    for path in state_dir.iterdir():
        match = _STEP_FILE.match(path.name)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


@dataclass
class Meta:
    """What a snapshot says about itself (docs/curriculum.md, "The files")."""

    seq: int = 0
    checkpoint: int | None = None
    marker: tuple[int, int] | None = None
    run: str | None = None
    groups: dict[str, list] = field(default_factory=dict)  # uid -> [id, level, expected, deadline]: open groups


def save_levels(path: str | Path, arrays: tuple[np.ndarray, np.ndarray, np.ndarray], meta: Meta | None = None) -> None:
    ids, levels, references = arrays
    meta = meta or Meta()
    text = json.dumps({**meta.__dict__, "marker": list(meta.marker) if meta.marker else None})
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, ids=ids, levels=levels, references=references, meta=np.array(text))


def load_snapshot(path: str | Path) -> tuple[LevelTable, Meta]:
    with np.load(path, allow_pickle=False) as data:
        table = LevelTable(data["ids"].tolist(), data["levels"], data["references"])
        raw = json.loads(str(data["meta"])) if "meta" in data.files else {}  # snapshots before the WAL: no meta
    marker = raw.get("marker")
    meta = Meta(int(raw.get("seq", 0)), raw.get("checkpoint"), tuple(marker) if marker else None, raw.get("run"))
    meta.groups = dict(raw.get("groups") or {})
    return table, meta


def load_levels(path: str | Path) -> LevelTable:
    return load_snapshot(path)[0]


def read_wal(path: str | Path, after_seq: int = 0) -> tuple[list[dict], bool]:
    """The records after ``after_seq``, and whether a torn last record was ignored."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return [], False
    lines = data.split(b"\n")
    records: list[dict] = []
    last = after_seq
    for number, line in enumerate(lines, start=1):
        if number == len(lines):  # after the last newline: empty, or a record cut short
            return records, bool(line)
        try:
            record = json.loads(line)
            seq = int(record["seq"])
        except (ValueError, KeyError, TypeError):
            if number == len(lines) - 1 and not lines[-1]:  # the last line, unreadable: torn
                return records, True
            raise CurriculumStateError(
                f"{path}: line {number} is not a WAL record and records follow it; the file is damaged "
                "(remove it to start from levels.latest.npz, losing the changes it held)"
            ) from None
        if seq <= last:
            continue  # already in the snapshot (a kill between compaction's rename and truncation)
        records.append(record)
        last = seq
    return records, False


@dataclass
class LogState:
    """A state dir read back: the snapshot with the WAL's records applied, and where that ends."""

    table: LevelTable
    meta: Meta
    seq: int
    checkpoint: int | None
    marker: tuple[int, int] | None
    applied: int = 0
    torn: bool = False
    records: list[dict] = field(default_factory=list)
    groups: dict[str, list] = field(default_factory=dict)  # open groups' pins (uid -> [id, level, expected, deadline])


def checkpoint_tag(step: int | None) -> int:
    return -1 if step is None else int(step)


def read_state(state_dir: str | Path, before_checkpoint: int | None = None) -> LogState:
    """Snapshot + WAL of ``state_dir`` (read only). ``before_checkpoint=S``: only the records written
    before verl's checkpoint S was seen, i.e. the state at the end of step S."""
    state_dir = Path(state_dir)
    latest = state_dir / LATEST
    table, meta = load_snapshot(latest) if latest.exists() else (LevelTable(), Meta())
    records, torn = read_wal(state_dir / WAL, meta.seq)
    state = LogState(table, meta, meta.seq, meta.checkpoint, meta.marker, torn=torn, records=records)
    state.groups = dict(meta.groups)
    for record in records:
        state.seq = max(state.seq, int(record["seq"]))
        if before_checkpoint is not None and checkpoint_tag(record.get("ckpt")) >= before_checkpoint:
            continue
        apply_record(state, record)
    return state


def apply_record(state: LogState, record: dict) -> None:
    if "id" in record:
        row = state.table.slot(str(record["id"]), int(record["refs"]))
        state.table.levels[row] = int(record["level"])
    elif "checkpoint" in record:
        state.checkpoint = int(record["checkpoint"])
        state.marker = (state.checkpoint, int(record["mtime_ns"]))
    elif "group" in record and "closed" in record:
        state.groups.pop(str(record["group"]), None)
    elif "group" in record:
        state.groups[str(record["group"])] = list(record["pin"])
    state.applied += 1


@dataclass
class _Job:
    prepare: Callable[[], Callable[[], Any]]  # on the event loop, in queue order; returns the blocking part
    truncate: bool
    done: asyncio.Future


class WriteAheadLog:
    """Durable appends to one file, one fsync per batch of records in flight, and snapshot jobs in order.

    ``fsync`` is injectable (tests count the calls). A failed write is cut back off the file (so no torn
    record stays in it where that is possible) and breaks the log (module docstring): its batch and all
    that is queued fail with ``WALWriteError``, and ``on_failure`` is called with it once.
    """

    def __init__(
        self,
        path: str | Path,
        fsync: Callable[[int], None] = os.fsync,
        on_failure: Callable[[WALWriteError], None] | None = None,
    ):
        self.path = Path(path)
        created = not self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._close_fd = weakref.finalize(self, os.close, self._fd)  # at close(), or when collected
        self._fsync = fsync
        self._on_failure = on_failure
        if created:
            fsync_directory(self.path.parent)
        self._size = os.fstat(self._fd).st_size
        self._queue: deque = deque()
        self._writer: asyncio.Task | None = None
        self.fsyncs = 0
        self.written = 0
        self.since_truncation = 0  # records in the file since it was last truncated
        self.broken: WALWriteError | None = None  # set by the first failed write; the log takes no more

    def append(self, record: dict, wait: bool = True) -> asyncio.Future | None:
        """Queue ``record``; with ``wait``, a future that resolves once it is on disk."""
        if self.broken is not None:
            raise self.broken
        line = json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n"
        done = asyncio.get_running_loop().create_future() if wait else None
        self._queue.append((line, done))
        self._start()
        return done

    def job(self, prepare: Callable[[], Callable[[], Any]], truncate: bool = False) -> asyncio.Future:
        """Run ``prepare()`` once every record queued before it is written, then its result in a thread;
        ``truncate``: then empty the WAL (``prepare`` wrote a snapshot holding everything so far)."""
        if self.broken is not None:
            raise self.broken
        done = asyncio.get_running_loop().create_future()
        self._queue.append(_Job(prepare, truncate, done))
        self._start()
        return done

    async def idle(self) -> None:
        """Return once everything queued so far is written (``WALWriteError`` if the log broke)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)
        if self.broken is not None:
            raise self.broken

    def truncate(self) -> None:
        """Empty the WAL now (blocking; only while nothing is queued, e.g. at start)."""
        os.ftruncate(self._fd, 0)
        self._size = 0  # even if the fsync fails: a failed write must not cut back to a stale length
        self.since_truncation = 0
        self._fsync(self._fd)

    def close(self) -> None:
        """Release the file (idempotent); the log takes no more records."""
        if self._close_fd.alive:
            self._close_fd()
            self.broken = self.broken or WALWriteError(f"{self.path}: the write-ahead log is closed")

    def _start(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            if isinstance(self._queue[0], _Job):
                job = self._queue.popleft()
                try:
                    await loop.run_in_executor(None, job.prepare())
                    if job.truncate:
                        await loop.run_in_executor(None, self.truncate)
                except Exception as err:  # noqa: BLE001 - handed to whoever awaits the job
                    _settle(job.done, err)
                else:
                    _settle(job.done, None)
                continue
            batch = []
            while self._queue and not isinstance(self._queue[0], _Job):
                batch.append(self._queue.popleft())
            try:
                await loop.run_in_executor(None, self._write, b"".join(line for line, _ in batch))
            except Exception as err:  # noqa: BLE001 - every waiter gets it; none may hang
                self._break(err, batch)
                return
            else:
                self.written += len(batch)
                self.since_truncation += len(batch)
                for _, done in batch:
                    _settle(done, None)

    def _break(self, err: Exception, batch: list) -> None:
        """A failed batch: it, everything queued after it and every later call fail with one error."""
        self.broken = WALWriteError(
            f"curriculum: could not write the write-ahead log {self.path} ({type(err).__name__}: {err}); "
            "the curriculum scheduler takes no more requests and starts again from what is on disk "
            "(an advance that failed with this error may or may not be recorded there)"
        )
        self.broken.__cause__ = err
        logger.error("%s", self.broken)
        waiting = [done for _, done in batch]
        while self._queue:
            item = self._queue.popleft()
            waiting.append(item.done if isinstance(item, _Job) else item[1])
        for done in waiting:
            if done is not None and not done.done():
                done.set_exception(self.broken)
        if self._on_failure is not None:
            self._on_failure(self.broken)

    def _write(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            self._fsync(self._fd)
            self.fsyncs += 1
        except BaseException:
            try:  # best effort: the replay at the restart then never sees the unacknowledged records
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass
            raise
        self._size += len(data)


def _settle(done: asyncio.Future | None, err: BaseException | None) -> None:
    if done is None or done.done():
        if done is None and err is not None:  # nobody waits (a new id seen by pin): still loud
            logger.error("curriculum: could not write the WAL: %s", err)
        return
    if err is None:
        done.set_result(None)
    else:
        done.set_exception(err)
