"""Small file helpers: all-or-nothing writes, and JSONL reading that names the bad line."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp path beside ``path``; renamed onto it when the block succeeds, deleted when it fails.

    Readers see the old file or the complete new one, never a partial write (rename is atomic on
    POSIX within one filesystem, and the temp file lives in the same directory). The directory is
    fsynced after the rename, so the new file is durable before whatever the caller does next (e.g.
    truncating a log the file replaces) reaches the disk.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~current_umask())  # mkstemp makes it 0600; a plain open() would not
        with open(tmp_path, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
        fsync_directory(path.parent)
    finally:
        tmp_path.unlink(missing_ok=True)


def fsync_directory(path: str | Path) -> None:
    """Make the entries of directory ``path`` (a rename, a new file) durable. Skipped where a directory
    cannot be opened or fsynced at all (Windows, some network filesystems); an I/O error is raised."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def current_umask() -> int:
    """The process umask, read without changing it where Linux shows it (os.umask can only set it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore at once
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
            yield number, record


class DirectoryLocked(RuntimeError):
    """Another process holds the lock of a directory."""


class DirectoryLock:
    """An exclusive lock on a directory between processes (``flock`` on ``<dir>/.lock``), held until every
    holder in this process has released it, or until the process ends (the kernel drops it even on
    kill -9). Within one process it is shared: one process is one owner. The holder writes who it is
    into the file, so a process that finds the lock taken can name the holder."""

    _held: dict[str, tuple[object, int]] = {}  # this process's locks: path -> (open file, holders)

    def __init__(self, directory: str | Path, holder: str):
        import fcntl

        self.key = str(Path(directory).resolve() / ".lock")
        self.released = False
        held = DirectoryLock._held.get(self.key)
        if held is not None:
            DirectoryLock._held[self.key] = (held[0], held[1] + 1)
            return
        file = open(self.key, "a+", encoding="utf-8")  # noqa: SIM115 (held open: it is the lock)
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            who = file.read().strip() or "a process that did not say who it is"
            file.close()
            raise DirectoryLocked(f"{directory} is locked by {who}") from None
        file.seek(0)
        file.truncate()
        file.write(holder)
        file.flush()
        DirectoryLock._held[self.key] = (file, 1)

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        file, holders = DirectoryLock._held.pop(self.key)
        if holders > 1:
            DirectoryLock._held[self.key] = (file, holders - 1)
        else:
            file.close()  # closing the file drops the flock
