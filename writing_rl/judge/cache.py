"""A judge wrapper that remembers replies on disk, so a rerun after a crash repeats no judge call.

What it keys, stores and survives (SQLite in WAL mode, shared by processes; failures never stored; identical
requests in flight sent once; at temperature > 0 the first sampled reply kept): docs/offline-tools.md ("Resuming:
the judgment cache"). All coroutines of an event loop share one connection: a lookup or insert takes tens of
microseconds, so it runs inline instead of hopping to a thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from writing_rl.judge.base import Judge, JudgeReply, Messages
from writing_rl.judge.config import PREFIX, JudgeConfig
from writing_rl.judge.errors import JudgeError
from writing_rl.settings import ConfigError

FORMAT_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def cache_key(model: str, messages: Messages, sampling: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the request's identity; dict order and JSON spacing do not matter."""
    identity = {"model": model, "messages": messages, "sampling": dict(sampling)}
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def sampling_of(config: JudgeConfig) -> dict[str, Any]:
    """The settings of a ``JudgeConfig`` that change what the judge answers (and so the cache key)."""
    return {
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "extra_body": dict(config.extra_body),
    }


@dataclass
class CacheStats:
    hits: int = 0  # answered from disk
    misses: int = 0  # sent to the judge (successful or not)
    shared: int = 0  # identical request already in flight: waited for its reply
    failures: int = 0  # JudgeErrors passed through, not stored

    def line(self) -> str:
        return f"cache hits {self.hits}, misses {self.misses}, shared in flight {self.shared}, failures {self.failures}"


class CachedJudge:
    """``complete(messages) -> JudgeReply``, answered from ``path`` when the same request was answered before."""

    def __init__(self, judge: Judge, path: str | Path, *, model: str, sampling: Mapping[str, Any]):
        self.judge = judge
        self.path = Path(path)
        self.model = model
        self.sampling = dict(sampling)
        self.stats = CacheStats()
        self._lock = threading.Lock()  # the connection may be used from more than one thread
        self._in_flight: dict[str, asyncio.Future] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._check_format()

    @classmethod
    def for_config(cls, judge: Judge, config: JudgeConfig, path: str | Path) -> CachedJudge:
        if config.ensemble.on:  # (its rows hold one reply's text: an ensemble's judges' replies would be lost)
            raise ConfigError(
                f"{PREFIX}.ensemble: the offline tools (select, order-references, eval, probe-judge) judge with one "
                f"judge, whose replies their cache keeps; leave the ensemble section out for them, or set one of its "
                f"judges' keys on {PREFIX} (docs/judges/ensembles.md)"
            )
        return cls(judge, path, model=config.model or "", sampling=sampling_of(config))

    def _check_format(self) -> None:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('format', ?)", (FORMAT_VERSION,))
            (found,) = self._db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
        if found != FORMAT_VERSION:
            raise ValueError(f"{self.path}: judge cache format {found}, this version reads {FORMAT_VERSION}")

    @property
    def concurrency_limit(self) -> int:
        """The wrapped client's concurrency limit (0 for a judge without one)."""
        return getattr(self.judge, "concurrency_limit", 0)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def lookup(self, key: str) -> JudgeReply | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, finish_reason, latency_s, attempts FROM replies WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else JudgeReply(text=row[0], finish_reason=row[1], latency_s=row[2], attempts=row[3])

    def _store(self, key: str, reply: JudgeReply) -> None:
        if reply.refusal:  # the table keeps text and finish_reason only: a refusal is asked again
            return
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, text, finish_reason, latency_s, attempts) VALUES (?, ?, ?, ?, ?)",
                (key, reply.text, reply.finish_reason, reply.latency_s, reply.attempts),
            )

    async def complete(self, messages: Messages) -> JudgeReply:
        key = cache_key(self.model, messages, self.sampling)
        while True:
            cached = self.lookup(key)
            if cached is not None:
                self.stats.hits += 1
                return cached
            pending = self._in_flight.get(key)
            if pending is None:
                return await self._ask(key, messages)
            self.stats.shared += 1
            await asyncio.wait([pending])  # our own cancellation propagates; the first caller's call goes on
            if not pending.cancelled():  # a cancelled first caller: ask again (as the first caller, if still none)
                return pending.result()  # its reply, or its JudgeError

    async def _ask(self, key: str, messages: Messages) -> JudgeReply:
        future = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        self.stats.misses += 1
        try:
            reply = await self.judge.complete(messages)
            self._store(key, reply)
        except JudgeError as err:
            self.stats.failures += 1
            future.set_exception(err)
            future.exception()  # retrieved: no "exception never retrieved" warning when nobody else waits
            raise
        except BaseException:  # cancelled, or the disk failed: waiters ask again rather than hang
            future.cancel()
            raise
        finally:
            self._in_flight.pop(key, None)
        future.set_result(reply)
        return reply

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> CachedJudge:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
