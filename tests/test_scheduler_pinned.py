"""ReferenceScheduler called directly, without Ray: what each call answers and writes, when it returns, how it
fails; and the named actor it is created as (a stand-in for ``ray``)."""

import asyncio
import logging
import os
import threading
import types

import pytest
from curriculum_helpers import closed_at_teardown, settings  # noqa: F401  (an autouse fixture)
from ray_standin import recording_actor_factory

from writing_rl.curriculum import scheduler as scheduler_module
from writing_rl.curriculum.log import LATEST, WALWriteError, read_state
from writing_rl.curriculum.scheduler import ReferenceScheduler, exit_if_actor

from waiting import until


def run(body):
    return asyncio.run(body())


def gated_fsync():
    """An fsync that waits while the returned gate is closed (it starts open)."""
    gate = threading.Event()
    gate.set()

    def fsync(fd):
        assert gate.wait(30), "the test never opened the gate"
        os.fsync(fd)

    return gate, fsync


async def settle(turns: int = 3) -> None:
    """A few turns of the event loop: what can run without a write finishing, has."""
    for _ in range(turns):
        await asyncio.sleep(0)


class Records(logging.Handler):
    """The messages the ``writing_rl`` logger emits while attached."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def logged():
    handler = Records()
    logger = logging.getLogger("writing_rl")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.messages
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_pin_starts_a_new_id_at_0_and_caps_a_known_one_at_its_last_reference(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        assert await s.pin("k", 3) == 0
        for level in (0, 1):
            assert await s.advance("k", level) is True
        assert await s.pin("k", 3) == 2
        seq = s.seq
        assert await s.pin("k", 3) == 2 and s.seq == seq  # a known id, unchanged: nothing written
        assert await s.pin("k", 2) == 1  # fewer references now: the last one
        assert int(s.table.references[s.table.index["k"]]) == 2 and s.seq == seq + 1
        await s.flush()
        s.close()
        assert read_state(tmp_path / "state").table.as_dict() == {"k": 2}

    run(body)


def test_advance_moves_one_step_only_from_the_pinned_level_and_never_past_the_last(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        assert await s.advance("unknown", 0) is False
        await s.pin("k", 3)
        assert await s.advance("k", 1) is False  # judged at a level it is not at
        assert s.table.level("k") == 0
        assert await s.advance("k", 0) is True and s.table.level("k") == 1
        assert await s.advance("k", 0) is False  # a second group pinned at 0: already moved
        assert await s.advance("k", 1) is True and s.table.level("k") == 2
        assert await s.advance("k", 2) is False and s.table.level("k") == 2  # the last reference

    run(body)


def test_a_pin_waits_for_the_advance_being_written_and_advance_returns_once_it_is(tmp_path):
    gate, fsync = gated_fsync()

    async def body():
        s = ReferenceScheduler(settings(tmp_path), fsync=fsync)
        await s.pin("k", 3)
        await s.flush()
        gate.clear()
        advance = asyncio.ensure_future(s.advance("k", 0))
        await settle()
        pin = asyncio.ensure_future(s.pin("k", 3))
        await settle(10)
        assert not advance.done() and not pin.done()
        gate.set()
        assert await advance is True and await pin == 1
        assert s._unacked == {}  # a written advance is forgotten

    run(body)


def test_a_group_that_moved_a_level_takes_it_back_when_withdrawn_durably(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        assert await s.batch([("pin", "k", 3, "g1", 1, 60.0)]) == [0]
        assert await s.batch([("report", "g1", 1, 0.5)]) == [True]
        assert s.table.level("k") == 1
        assert await s.withdraw(["g1", "never-seen"]) == 1
        assert s.table.level("k") == 0
        assert await s.dropped(["g1"]) == {"curriculum/withdrawn_advances_total": 0.0}  # taken back once
        await s.flush()
        s.close()
        assert ReferenceScheduler(settings(tmp_path)).table.as_dict() == {"k": 0}

    run(body)


def test_a_withdrawn_move_stays_when_something_moved_the_level_since(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        await s.pin("k", 3)
        assert await s.advance("k", 0, uid="g1") is True
        assert await s.advance("k", 1, uid="g2") is True
        assert await s.withdraw(["g1"]) == 0 and s.table.level("k") == 2

    run(body)


def test_a_rollout_of_a_finished_group_gets_its_level_and_of_a_withdrawn_one_the_current(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        assert await s.batch([("pin", "k", 3, "g1", 1, 60.0), ("report", "g1", 1, 0.5)]) == [0, True]
        assert s.table.level("k") == 1
        assert await s.batch([("pin", "k", 3, "g1", 1, 60.0)]) == [0]  # the level its group was judged at
        assert await s.batch([("pin", "k", 3, "g2", 2, 60.0)]) == [1]
        await s.withdraw(["g2"])
        assert await s.batch([("pin", "k", 3, "g2", 2, 60.0)]) == [1]  # withdrawn: pinned afresh
        assert await s.batch([("report", "g2", 1, 0.5)]) == [False]  # it can no longer move the level

    run(body)


def test_a_batch_answers_each_request_in_order_with_an_error_in_its_place(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        bad, good = await s.batch([("pin", "k", 3, "g1", 2, "soon"), ("pin", "j", 3, "g2", 2, 60.0)])
        assert isinstance(bad, TypeError) and good == 0

    run(body)


def test_stats_count_the_wal_and_the_open_groups(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        await s.batch([("pin", "k", 3, "g1", 2, 60.0)])
        await s.flush()
        assert s.stats() == {"records": 2, "fsyncs": s.log.fsyncs, "seq": 2, "open_groups": 1, "withdrawn_groups": 0}
        assert s.log.fsyncs >= 1
        await s.withdraw(["g1"])
        assert s.stats()["open_groups"] == 0 and s.stats()["withdrawn_groups"] == 1

    run(body)


def test_a_closed_scheduler_refuses_every_call_naming_its_dir_and_keeps_an_earlier_failure(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        s.close()
        s.close()  # idempotent
        with pytest.raises(WALWriteError, match=f"the scheduler over {tmp_path / 'state'} is closed"):
            await s.pin("k", 3)
        t = ReferenceScheduler(settings(tmp_path))
        t.failed = WALWriteError("the disk is full")
        t.close()
        with pytest.raises(WALWriteError, match="the disk is full"):
            t.snapshot()

    run(body)


def test_the_state_dir_is_made_with_its_parents_and_locked_in_the_runs_name(tmp_path):
    """(Another process finding the lock names this holder: tests/test_curriculum.py.)"""
    state = tmp_path / "a" / "b" / "state"
    ReferenceScheduler(settings(tmp_path, state_dir=str(state)), run="first-run")
    assert (state / ".lock").read_text().startswith("the curriculum scheduler of run first-run (pid ")


def test_a_failed_wal_write_fails_the_advance_and_every_later_call_and_calls_on_fatal(tmp_path):
    fatal, broken = [], threading.Event()

    def fsync(fd):
        if broken.is_set():
            raise OSError(28, "No space left on device")
        os.fsync(fd)

    async def body():
        s = ReferenceScheduler(settings(tmp_path), fsync=fsync, on_fatal=fatal.append)
        await s.pin("k", 3)
        await s.flush()
        broken.set()
        with pytest.raises(WALWriteError):
            await s.advance("k", 0)
        assert len(fatal) == 1 and isinstance(fatal[0], WALWriteError)
        with pytest.raises(WALWriteError):
            await s.pin("j", 3)

    run(body)


def test_by_default_a_wal_failure_outside_ray_fails_the_calls_and_nothing_exits(tmp_path):
    broken = threading.Event()

    def fsync(fd):
        if broken.is_set():
            raise OSError(5, "Input/output error")
        os.fsync(fd)

    async def body():
        s = ReferenceScheduler(settings(tmp_path), fsync=fsync)
        await s.pin("k", 3)
        await s.flush()
        broken.set()
        with pytest.raises(WALWriteError):
            await s.advance("k", 0)
        with pytest.raises(WALWriteError):
            s.snapshot()

    run(body)


def test_a_scheduler_that_cannot_write_its_state_at_start_says_where_and_why(tmp_path):
    def fsync(fd):
        raise OSError(28, "No space left on device")

    with pytest.raises(WALWriteError, match=f"cannot start the scheduler over {tmp_path / 'state'} \\(.*No space left"):
        ReferenceScheduler(settings(tmp_path), fsync=fsync)


def test_the_start_is_logged_with_its_ids_and_source(tmp_path, logged):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        await s.pin("a", 2)
        await s.pin("b", 2)
        await s.flush()
        s.close()

    run(body)
    logged.clear()
    s = ReferenceScheduler(settings(tmp_path))
    assert f"curriculum: 2 ids from {s.source}" in logged


def test_a_restart_that_does_not_resume_drops_the_step_snapshots_and_says_which(tmp_path, logged):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        await s.pin("a", 2)
        checkpoints = tmp_path / "ckpt"
        checkpoints.mkdir()
        (checkpoints / "latest_checkpointed_iteration.txt").write_text("3")
        await s.pin("a", 2)  # sees checkpoint 3: a step snapshot
        await s.flush()
        s.close()

    run(body)
    assert (tmp_path / "state" / "levels.step_3.npz").exists()
    logged.clear()
    ReferenceScheduler(settings(tmp_path, resume=False))
    assert not (tmp_path / "state" / "levels.step_3.npz").exists()
    assert "curriculum: dropped the snapshots of steps [3] (a discarded history)" in logged


def test_the_wal_is_compacted_again_and_again_as_it_grows(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path, compact_records=4))
        for i in range(30):
            await s.pin(f"k{i}", 2)
            await s.advance(f"k{i}", 0)
            await s.flush()
        await s.flush()
        assert s.log.since_truncation < 8
        assert not s._compacting

    run(body)


def test_compaction_failures_are_logged_unless_the_wal_already_said_so(logged):
    async def body():
        loop = asyncio.get_running_loop()
        for error in (OSError("disk gone"), WALWriteError("the wal broke"), None):
            done = loop.create_future()
            done.set_exception(error) if error is not None else done.set_result(None)
            scheduler_module._log_failure("a compaction")(done)
        cancelled = loop.create_future()
        cancelled.cancel()
        scheduler_module._log_failure("a compaction")(cancelled)

    run(body)
    assert logged == ["curriculum: could not write a compaction: disk gone"]


def test_exit_if_actor_exits_a_ray_actor_after_the_grace_and_nothing_else(monkeypatch, logged):
    exits = []
    monkeypatch.setattr(scheduler_module, "EXIT_GRACE_S", 0.01)
    monkeypatch.setattr(os, "_exit", exits.append)
    actor_id = [None]
    context = types.SimpleNamespace(get_actor_id=lambda: actor_id[0])
    fake_ray = types.SimpleNamespace(is_initialized=lambda: True, get_runtime_context=lambda: context)
    monkeypatch.setattr(scheduler_module, "ray", fake_ray)

    async def body():
        exit_if_actor(WALWriteError("x"))  # a driver, not an actor
        await asyncio.sleep(0.05)
        assert exits == [] and logged == []
        actor_id[0] = "actor-1"
        exit_if_actor(WALWriteError("the disk is full"))
        await until(lambda: exits == [1])

    run(body)
    assert logged == ["curriculum: the scheduler exits, to be restarted by Ray from the disk is full"]


def test_exit_if_actor_without_ray_does_nothing(monkeypatch):
    monkeypatch.setattr(scheduler_module, "ray", types.SimpleNamespace(is_initialized=lambda: False))
    assert exit_if_actor(WALWriteError("x")) is None


def test_the_scheduler_is_one_named_restartable_actor_per_run(monkeypatch, tmp_path):
    made, Remote, placement_options = recording_actor_factory()
    monkeypatch.setattr(scheduler_module, "remote_class", Remote)
    monkeypatch.setattr(scheduler_module, "placement_options", placement_options)
    monkeypatch.setattr(scheduler_module, "listener_name", lambda role: f"listener-{role}")
    monkeypatch.setattr(scheduler_module, "run_identity", lambda config: f"run-of-{config.state_dir}")
    config = settings(tmp_path, actor_resources={"head": 0.01})
    assert scheduler_module.scheduler_name() == "listener-reference_scheduler"
    assert scheduler_module.get_or_create_scheduler(config) == "handle"
    assert made == {
        "cls": ReferenceScheduler,
        "placement": (
            "listener-reference_scheduler",
            {"head": 0.01},
            "reward.reward_kwargs.curriculum.actor_resources",
        ),
        "options": {
            "name": "listener-reference_scheduler",
            "get_if_exists": True,
            "num_cpus": 0,
            "max_concurrency": 100_000,
            "max_restarts": -1,
            "max_task_retries": 3,
            "resources": {"head": 0.01},
        },
        "args": (config, f"run-of-{config.state_dir}"),
    }


def test_snapshot_shows_the_levels_their_source_the_checkpoint_and_the_seq(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        await s.pin("k", 2)
        assert s.snapshot() == {"levels": {"k": 0}, "source": s.source, "checkpoint": s.checkpoint, "seq": 1}

    run(body)


def test_a_rollout_of_an_open_group_is_answered_at_once_and_writes_nothing_while_its_id_is_being_written(tmp_path):
    gate, fsync = gated_fsync()

    async def body():
        s = ReferenceScheduler(settings(tmp_path), fsync=fsync)
        assert await s.batch([("pin", "k", 3, "g1", 4, 60.0), ("pin", "k", 3, "g0", 1, 60.0)]) == [0, 0]
        await s.flush()
        gate.clear()
        moved = asyncio.ensure_future(s.batch([("report", "g0", 1, 0.5)]))  # g0 moves k: its write waits
        await settle()
        seq = s.seq
        assert await s.batch([("pin", "k", 3, "g1", 4, 60.0)]) == [0]  # g1's own level, not the write's
        assert s.seq == seq and not moved.done()
        gate.set()
        assert await moved == [True]

    run(body)


async def a_then_checkpoint_3_then_b(tmp_path):
    """A scheduler of run r1 that moved "a" to 1, then saw verl's checkpoint 3, then pinned "b"; all written."""
    s = ReferenceScheduler(settings(tmp_path), run="r1")
    await s.pin("a", 3)
    await s.advance("a", 0)
    tracker = tmp_path / "ckpt" / "latest_checkpointed_iteration.txt"
    tracker.parent.mkdir()
    tracker.write_text("3")
    await s.pin("b", 3)  # sees checkpoint 3 first
    await s.flush()
    return s, tracker


def test_a_checkpoint_seen_is_cut_into_the_wal_and_a_step_snapshot_of_the_state_before(tmp_path):
    from writing_rl.curriculum.log import WAL, load_snapshot, read_wal, step_path

    async def body():
        s, tracker = await a_then_checkpoint_3_then_b(tmp_path)
        mtime = tracker.stat().st_mtime_ns
        records, _ = read_wal(tmp_path / "state" / WAL)
        assert {"seq": 3, "ckpt": 3, "checkpoint": 3, "mtime_ns": mtime} in records
        table, meta = load_snapshot(step_path(tmp_path / "state", 3))
        assert table.as_dict() == {"a": 1}  # before b
        assert (meta.seq, meta.checkpoint, meta.marker, meta.run) == (3, 3, (3, mtime), "r1")
        assert s.seq == 4 and s.checkpoint == 3

    run(body)


def test_a_step_snapshot_that_cannot_be_written_is_logged_naming_its_step(tmp_path, logged):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        (tmp_path / "state" / "levels.step_5.npz").mkdir()  # a directory where the snapshot goes
        tracker = tmp_path / "ckpt" / "latest_checkpointed_iteration.txt"
        tracker.parent.mkdir()
        tracker.write_text("5")
        await s.pin("a", 3)
        await s.flush()

    run(body)
    assert any(m.startswith("curriculum: could not write the snapshot of step 5: ") for m in logged), logged


def test_a_compaction_that_cannot_be_written_fails_and_is_logged(tmp_path, logged):
    async def body():
        s = ReferenceScheduler(settings(tmp_path))
        await s.pin("a", 3)
        latest = tmp_path / "state" / LATEST
        latest.unlink()
        latest.mkdir()
        with pytest.raises(OSError):
            await s.compact()

    run(body)
    assert any(m.startswith("curriculum: could not write a compaction: ") for m in logged), logged


def test_the_wal_is_compacted_once_it_holds_compact_records(tmp_path):
    async def body():
        s = ReferenceScheduler(settings(tmp_path, compact_records=2))
        for key in ("a", "b"):
            await s.pin(key, 3)
            await s.flush()
        assert s.log.since_truncation == 2
        await s.pin("c", 3)  # the WAL holds 2: this record is followed by a compaction
        await s.flush()
        assert s.log.since_truncation == 0

    run(body)


def test_a_resume_from_a_checkpoint_whose_snapshot_was_lost_writes_it_from_the_wal_with_its_meta(tmp_path):
    from writing_rl.curriculum.log import load_snapshot, step_path

    async def body():
        s, _ = await a_then_checkpoint_3_then_b(tmp_path)
        s.close()

    run(body)
    snapshot = step_path(tmp_path / "state", 3)
    snapshot.unlink()  # the run died before the snapshot of step 3 was written
    resumed = ReferenceScheduler(settings(tmp_path), run="r2")
    assert resumed.table.as_dict() == {"a": 1}  # the state at step 3: b came after
    table, meta = load_snapshot(snapshot)
    assert table.as_dict() == {"a": 1} and meta is not None and meta.checkpoint == 3
