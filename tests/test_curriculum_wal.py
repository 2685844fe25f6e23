"""The curriculum's write-ahead log: group commit, torn tails, replay, compaction crash points, and the
checkpoint cut (the state at step S, exactly), without Ray."""

import asyncio
import os
import threading

import pytest
from curriculum_helpers import closed_at_teardown, settings  # noqa: F401  (an autouse fixture)

from writing_rl.curriculum import log as curriculum_log
from writing_rl.curriculum.log import (
    LATEST,
    WAL,
    CurriculumStateError,
    load_levels,
    load_snapshot,
    read_state,
    step_snapshots,
)
from writing_rl.curriculum.scheduler import ReferenceScheduler

from waiting import until


def on_disk(tmp_path) -> dict:
    return read_state(tmp_path / "state").table.as_dict()


def save_checkpoint(tmp_path, step: int) -> None:
    """What verl's _save_checkpoint leaves: global_step_S/, then the tracker file."""
    (tmp_path / "ckpt" / f"global_step_{step}").mkdir(parents=True, exist_ok=True)
    tracker = tmp_path / "ckpt" / "latest_checkpointed_iteration.txt"
    before = tracker.stat().st_mtime_ns if tracker.exists() else 0
    tracker.write_text(str(step))
    if tracker.stat().st_mtime_ns == before:  # a coarse clock: still a new save
        os.utime(tracker, ns=(before, before + 1_000_000))


async def advance_all(scheduler, keys, references=3):
    """One training step: every key pinned, then advanced from its pinned level (as groups do)."""
    pinned = [await scheduler.pin(k, references) for k in keys]
    return await asyncio.gather(*(scheduler.advance(k, p) for k, p in zip(keys, pinned)))


class GatedFsync:
    """os.fsync, counted, held until ``release`` while ``gate`` is set."""

    def __init__(self, gate: bool = False):
        self.calls = 0
        self.opened = threading.Event()
        if not gate:
            self.opened.set()

    def __call__(self, fd):
        self.calls += 1
        assert self.opened.wait(120)
        os.fsync(fd)


def test_an_advance_returns_only_once_durable_and_concurrent_advances_share_fsyncs(tmp_path):
    fsync = GatedFsync(gate=True)
    keys = [str(k) for k in range(40)]

    async def run():
        fsync.opened.set()  # start-up's truncation passes
        scheduler = ReferenceScheduler(settings(tmp_path), fsync=fsync)
        for key in keys:
            await scheduler.pin(key, 3)
        await scheduler.flush()
        start_calls = fsync.calls
        fsync.opened.clear()
        tasks = [asyncio.ensure_future(scheduler.advance(k, 0)) for k in keys]
        await until(lambda: fsync.calls > start_calls)  # the batch is being written, its fsync held
        assert not any(t.done() for t in tasks)  # nothing acknowledged before its fsync
        assert scheduler.table.level("0") == 1  # applied in memory, not yet acknowledged
        fsync.opened.set()
        assert all(await asyncio.gather(*tasks))
        return fsync.calls - start_calls

    used = asyncio.run(run())
    assert used < len(keys)  # group commit: one fsync per batch in flight, not one per advance
    assert on_disk(tmp_path) == {k: 1 for k in keys}


def test_a_torn_last_record_is_ignored_and_cut_off_at_start(tmp_path):
    async def first():
        scheduler = ReferenceScheduler(settings(tmp_path), run="r")
        await advance_all(scheduler, ["a", "b"])

    asyncio.run(first())
    wal = tmp_path / "state" / WAL
    with open(wal, "ab") as f:
        f.write(b'{"seq":99,"ckpt":null,"id":"c","lev')  # a kill in the middle of a write
    state = read_state(tmp_path / "state")
    assert state.torn and state.table.as_dict() == {"a": 1, "b": 1}

    async def second():
        scheduler = ReferenceScheduler(settings(tmp_path), run="r")  # the same run, restarted
        assert scheduler.table.as_dict() == {"a": 1, "b": 1}
        await advance_all(scheduler, ["c"])  # appended after the cut-off fragment, readable

    asyncio.run(second())
    assert on_disk(tmp_path) == {"a": 1, "b": 1, "c": 1} and not read_state(tmp_path / "state").torn


def test_a_damaged_line_with_records_after_it_is_an_error(tmp_path):
    (tmp_path / "state").mkdir()
    good = b'{"seq":1,"ckpt":null,"id":"a","level":1,"refs":3}\n'
    (tmp_path / "state" / WAL).write_bytes(good + b"\x00\x00garbage\n" + good.replace(b'"seq":1', b'"seq":2'))
    with pytest.raises(CurriculumStateError, match="line 2 is not a WAL record and records follow it"):
        read_state(tmp_path / "state")


def test_replay_equals_the_acknowledged_state_across_compactions_and_cuts(tmp_path):
    (tmp_path / "ckpt").mkdir()
    config = settings(tmp_path, compact_records=7, keep_steps=100)
    after_step = {}

    async def run():
        scheduler = ReferenceScheduler(config, run="r")
        for step in range(1, 7):
            keys = [str((step * 5 + k) % 13) for k in range(9)]
            await advance_all(scheduler, keys, references=4)
            after_step[step] = scheduler.table.as_dict()
            await scheduler.flush()
            assert on_disk(tmp_path) == scheduler.table.as_dict()
            save_checkpoint(tmp_path, step)
        await scheduler.pin("0", 4)  # the first request after checkpoint 6 cuts it
        await scheduler.flush()
        return scheduler.table.as_dict()

    final = asyncio.run(run())
    assert load_snapshot(tmp_path / "state" / LATEST)[1].seq > 20  # compacted as it went
    assert {s: load_levels(p).as_dict() for s, p in step_snapshots(tmp_path / "state").items()} == after_step
    assert ReferenceScheduler(config, run="r").table.as_dict() == final  # restarted within the run


@pytest.mark.parametrize("crash", ["before the snapshot's rename", "before the WAL's truncation"])
def test_a_crash_during_compaction_loses_nothing(tmp_path, monkeypatch, crash):
    config = settings(tmp_path, compact_records=10**9)

    class Crash(Exception):
        pass

    def crashing(*args, **kwargs):
        raise Crash(crash)

    async def run():
        scheduler = ReferenceScheduler(config, run="r")
        await advance_all(scheduler, [str(k) for k in range(20)])
        if crash == "before the snapshot's rename":
            monkeypatch.setattr(curriculum_log.os, "replace", crashing)
        else:
            monkeypatch.setattr(scheduler.log, "truncate", crashing)
        with pytest.raises(Crash):
            await scheduler.compact()
        monkeypatch.undo()
        await advance_all(scheduler, ["0", "20"])  # the log goes on after the failed compaction
        return scheduler.table.as_dict()

    acknowledged = asyncio.run(run())
    assert on_disk(tmp_path) == acknowledged and acknowledged["0"] == 2
    assert ReferenceScheduler(config, run="r").table.as_dict() == acknowledged


def steps_with_checkpoints(tmp_path, config, steps, run="first"):
    """Steps 1..N (checkpoint after each); returns the levels at the end of each step."""
    (tmp_path / "ckpt").mkdir(exist_ok=True)
    after = {}

    async def train():
        scheduler = ReferenceScheduler(config, run=run)
        for step in range(1, steps + 1):
            await advance_all(scheduler, [f"s{step}", "shared"], references=10)
            after[step] = scheduler.table.as_dict()
            save_checkpoint(tmp_path, step)
        await scheduler.flush()

    asyncio.run(train())
    return after


def test_the_snapshot_of_step_s_is_the_state_at_the_end_of_step_s(tmp_path):
    config = settings(tmp_path, keep_steps=2)
    after = steps_with_checkpoints(tmp_path, config, 4)
    # Cut at each step's first request: checkpoints 1-3 cut (2, 3 kept), checkpoint 4 not yet.
    assert sorted(step_snapshots(tmp_path / "state")) == [2, 3]
    assert load_levels(tmp_path / "state" / "levels.step_3.npz").as_dict() == after[3]
    # The run died after writing checkpoint 4, before any request saw it: rebuilt from the WAL.
    resumed = ReferenceScheduler(config, run="second")
    assert resumed.table.as_dict() == after[4] and "WAL before checkpoint 4" in resumed.source
    assert load_levels(tmp_path / "state" / "levels.step_4.npz").as_dict() == after[4]  # saved at once


def test_a_lost_step_snapshot_is_rebuilt_from_the_wal(tmp_path):
    config = settings(tmp_path, keep_steps=5)
    after = steps_with_checkpoints(tmp_path, config, 3)
    (tmp_path / "state" / "levels.step_2.npz").unlink()  # a kill before the step job ran
    resumed = ReferenceScheduler(settings(tmp_path, resume_step=2), run="second")
    assert resumed.table.as_dict() == after[2] and "WAL before checkpoint 2" in resumed.source


def test_resuming_an_older_checkpoint_discards_the_later_history(tmp_path):
    config = settings(tmp_path, keep_steps=5)
    after = steps_with_checkpoints(tmp_path, config, 3)

    async def resumed_run():
        # trainer.resume_mode=resume_path at global_step_1: the levels of step 1, not the later ones.
        scheduler = ReferenceScheduler(settings(tmp_path, resume_step=1), run="second")
        assert scheduler.table.as_dict() == after[1] and sorted(step_snapshots(tmp_path / "state")) == [1]
        await advance_all(scheduler, ["new"], references=10)
        return scheduler.table.as_dict()

    state = asyncio.run(resumed_run())
    assert state == {**after[1], "new": 1}
    # Restarted within that run, it continues; the abandoned steps 2 and 3 never come back.
    assert ReferenceScheduler(settings(tmp_path, resume_step=1), run="second").table.as_dict() == state
    assert "s2" not in on_disk(tmp_path) and "s3" not in on_disk(tmp_path)


def test_a_scheduler_restarted_within_the_run_keeps_what_came_after_the_checkpoint(tmp_path):
    config = settings(tmp_path)
    after = steps_with_checkpoints(tmp_path, config, 2, run="run-a")
    assert ReferenceScheduler(config, run="run-a").table.as_dict() == after[2]

    async def more():
        scheduler = ReferenceScheduler(config, run="run-a")
        await advance_all(scheduler, ["s3"], references=10)  # cuts checkpoint 2 first
        return scheduler.table.as_dict()

    live = asyncio.run(more())
    assert ReferenceScheduler(config, run="run-a").table.as_dict() == live  # the actor died, the run did not
    assert ReferenceScheduler(config, run="run-b").table.as_dict() == after[2]  # verl restarts from step 2


def test_a_fresh_run_drops_the_old_history(tmp_path):
    steps_with_checkpoints(tmp_path, settings(tmp_path), 2)
    fresh = settings(tmp_path, resume=False)

    async def run():
        scheduler = ReferenceScheduler(fresh, run="fresh")
        assert scheduler.table.as_dict() == {} and step_snapshots(tmp_path / "state") == {}
        await advance_all(scheduler, ["x"])
        save_checkpoint(tmp_path, 1)  # the fresh run's own checkpoint 1 (the old tracker said 2)
        await scheduler.pin("x", 3)
        await scheduler.flush()

    asyncio.run(run())
    assert load_levels(tmp_path / "state" / "levels.step_1.npz").as_dict() == {"x": 1}
    assert ReferenceScheduler(fresh, run="fresh").table.as_dict() == {"x": 1}
