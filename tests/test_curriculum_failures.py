"""A WAL that cannot be written stops the curriculum scheduler, which starts again from the disk (in-process,
and as a Ray actor that exits so Ray restarts it); pins hand out durable levels only; atomic writes fsync
their directory; a closed scheduler gives its file back."""

import asyncio
import errno
import inspect
import os
import stat
import threading

import pytest
import ray

from writing_rl import files
from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.log import LATEST, LevelTable, WALWriteError, read_state, save_levels
from writing_rl.curriculum.scheduler import ReferenceScheduler

from waiting import until, wait_until


def settings(tmp_path, **kw):
    return CurriculumConfig(state_dir=str(tmp_path / "state"), checkpoint_dir=str(tmp_path / "ckpt"), **kw)


def on_disk(tmp_path) -> dict:
    return read_state(tmp_path / "state").table.as_dict()


class Disk:
    """os.fsync, counted; held while ``opened`` is clear; fails (ENOSPC) from call number ``full_from``."""

    def __init__(self):
        self.calls = 0
        self.full_from: int | None = None
        self.opened = threading.Event()
        self.opened.set()

    def __call__(self, fd):
        self.calls += 1
        assert self.opened.wait(120)
        if self.full_from is not None and self.calls >= self.full_from:
            raise OSError(errno.ENOSPC, "No space left on device")
        os.fsync(fd)


@pytest.fixture
def schedulers():
    """Builds schedulers in-process and closes them at teardown."""
    built = []

    def build(*args, **kwargs) -> ReferenceScheduler:
        built.append(ReferenceScheduler(*args, **kwargs))
        return built[-1]

    yield build
    for scheduler in built:
        scheduler.close()


def test_a_failed_write_stops_the_scheduler_and_its_restart_has_exactly_the_disk(tmp_path, schedulers):
    disk, fatal = Disk(), []

    async def run():
        scheduler = schedulers(settings(tmp_path), run="r", fsync=disk, on_fatal=fatal.append)
        for key in "kab":
            await scheduler.pin(key, 4)
        assert await scheduler.advance("a", 0)
        disk.full_from = disk.calls + 1
        first = asyncio.ensure_future(scheduler.advance("k", 0))
        await until(lambda: scheduler.table.level("k") == 1)  # applied in memory, its record not yet durable
        # Another group of k pins now: it waits for that record instead of reading level 1 (which it would
        # then advance to 2 in the same failing batch: the live level and the disk would part).
        second = asyncio.ensure_future(scheduler.pin("k", 4))
        results = await asyncio.gather(first, second, return_exceptions=True)
        assert [type(result) for result in results] == [WALWriteError, WALWriteError]
        assert "No space left on device" in str(results[0]) and fatal == [scheduler.failed]
        for call in (scheduler.pin("b", 4), scheduler.advance("b", 0), scheduler.flush(), scheduler.compact()):
            with pytest.raises(WALWriteError, match="could not write the write-ahead log"):
                await call  # every later call: the memory of a failed scheduler is never served

    asyncio.run(run())
    assert on_disk(tmp_path) == {"k": 0, "a": 1, "b": 0}
    disk.full_from = None

    async def restarted():
        scheduler = schedulers(settings(tmp_path), run="r", fsync=disk)  # what Ray's restart does
        assert scheduler.table.as_dict() == {"k": 0, "a": 1, "b": 0}
        assert await scheduler.pin("k", 4) == 0 and await scheduler.advance("k", 0)
        await scheduler.pin("other", 4)  # a later record does not bring back the failed advance's level
        assert await scheduler.advance("other", 0)
        return scheduler.table.as_dict()

    assert asyncio.run(restarted()) == on_disk(tmp_path) == {"k": 1, "a": 1, "b": 0, "other": 1}


def test_a_compaction_prepared_before_a_failed_record_still_restarts_consistent(tmp_path, schedulers):
    disk = Disk()

    async def run():
        scheduler = schedulers(settings(tmp_path, compact_records=10**9), run="r", fsync=disk, on_fatal=lambda _: None)
        for key in "ab":
            await scheduler.pin(key, 3)
        await scheduler.flush()
        disk.opened.clear()
        calls = disk.calls
        first = asyncio.ensure_future(scheduler.advance("a", 0))
        await until(lambda: disk.calls > calls)  # a's batch is being fsynced
        compaction = asyncio.ensure_future(scheduler.compact())  # queued after a's record
        late = asyncio.ensure_future(scheduler.advance("b", 0))  # queued after the compaction
        await until(lambda: scheduler.table.level("b") == 1)
        disk.full_from = calls + 3  # a's batch and the compaction's truncation pass; b's batch fails
        disk.opened.set()
        assert await first
        await compaction
        with pytest.raises(WALWriteError):
            await late

    asyncio.run(run())
    # The compaction's snapshot holds b's level, taken while b's record was queued: the failed advance
    # is on disk (its caller got an error and paid nothing); the restart serves exactly the disk.
    disk.full_from = None
    restarted = schedulers(settings(tmp_path), run="r", fsync=disk)
    assert restarted.table.as_dict() == on_disk(tmp_path) == {"a": 1, "b": 1}


def test_a_pin_waits_until_the_level_it_returns_is_durable(tmp_path, schedulers):
    disk = Disk()

    async def run():
        scheduler = schedulers(settings(tmp_path), run="r", fsync=disk)
        await scheduler.pin("k", 3)
        await scheduler.flush()
        disk.opened.clear()
        calls = disk.calls
        advance = asyncio.ensure_future(scheduler.advance("k", 0))
        await until(lambda: disk.calls > calls)  # k's record is being fsynced, and held there
        pin = asyncio.ensure_future(scheduler.pin("k", 3))
        await until(lambda: inspect.getcoroutinestate(pin.get_coro()) == inspect.CORO_SUSPENDED)
        assert await scheduler.pin("other", 3) == 0  # another id does not wait
        assert not pin.done() and not advance.done()  # the fsync is still held
        disk.opened.set()
        assert await advance and await pin == 1

    asyncio.run(run())


def test_close_gives_the_wal_file_back(tmp_path):
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(40):
        ReferenceScheduler(settings(tmp_path), run="r").close()
    assert len(os.listdir("/proc/self/fd")) == before
    scheduler = ReferenceScheduler(settings(tmp_path), run="r")
    scheduler.close()
    scheduler.close()  # idempotent
    with pytest.raises(WALWriteError, match="is closed"):
        asyncio.run(scheduler.pin("a", 3))


def test_an_atomic_write_fsyncs_the_directory_after_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    def replace(src, dst):
        events.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", replace)
    save_levels(tmp_path / LATEST, LevelTable(["a"], [1], [3]).arrays())
    assert events == ["file", "rename", "directory"]


@pytest.mark.parametrize("code, raised", [(errno.EINVAL, False), (errno.EIO, True)])
def test_a_directory_fsync_is_skipped_where_unsupported_and_an_io_error_raised(tmp_path, monkeypatch, code, raised):
    real_fsync = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    if raised:
        with pytest.raises(OSError, match=os.strerror(code)):
            files.atomic_write_text(tmp_path / "x.txt", "x")
    else:
        files.atomic_write_text(tmp_path / "x.txt", "x")
    assert (tmp_path / "x.txt").read_text() == "x"  # renamed before the directory's fsync either way


def failing_fsync(flag: str, once: bool):
    """os.fsync that fails (ENOSPC) while ``flag`` exists; ``once``: the failure removes it."""

    def fsync(fd):
        if os.path.exists(flag):
            if once:
                os.unlink(flag)
            raise OSError(errno.ENOSPC, "No space left on device")
        os.fsync(fd)

    return fsync


def restarting_actor(config, fsync):
    """The scheduler as get_or_create_scheduler runs it (restarted by Ray when its process dies)."""
    options = dict(num_cpus=0, max_concurrency=1000, max_restarts=-1, max_task_retries=3)
    return ray.remote(ReferenceScheduler).options(**options).remote(config, "run", fsync)


def actor_pid(actor) -> int:
    return ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))


def test_a_failed_wal_write_restarts_the_actor_from_the_disk(ray_cluster, tmp_path):
    flag = tmp_path / "disk-full"
    actor = restarting_actor(settings(tmp_path), failing_fsync(str(flag), once=True))
    ray.get([actor.pin.remote(key, 3) for key in "ab"])
    assert ray.get(actor.advance.remote("a", 0))
    pid = actor_pid(actor)
    flag.touch()
    try:  # the error; or, when the exit cut its reply off, Ray's retry on the restarted actor
        ray.get(actor.advance.remote("b", 0))
    except ray.exceptions.RayTaskError as err:
        assert "could not write the write-ahead log" in str(err)
    assert wait_until(lambda: actor_pid(actor) != pid)  # the process exited; Ray started it again
    live = ray.get(actor.snapshot.remote())["levels"]
    assert live == on_disk(tmp_path) and live["a"] == 1
    level = ray.get(actor.pin.remote("b", 3))
    ray.get(actor.advance.remote("b", level))
    assert ray.get(actor.snapshot.remote())["levels"] == on_disk(tmp_path) == {"a": 1, "b": level + 1}
    ray.kill(actor, no_restart=True)


def test_a_disk_that_stays_full_fails_every_call_with_a_clear_error(ray_cluster, tmp_path):
    flag = tmp_path / "disk-full"
    actor = restarting_actor(settings(tmp_path), failing_fsync(str(flag), once=False))
    ray.get(actor.pin.remote("a", 3))
    ray.get(actor.flush.remote())
    flag.touch()
    with pytest.raises(ray.exceptions.RayError, match="could not write the write-ahead log|cannot start the scheduler"):
        ray.get(actor.advance.remote("a", 0))

    def dead_with_the_reason() -> bool:
        try:
            ray.get(actor.pin.remote("a", 3))
        except ray.exceptions.ActorDiedError as err:  # the restart could not start: Ray gives up on it
            return "cannot start the scheduler" in str(err) and "No space left on device" in str(err)
        except ray.exceptions.RayTaskError as err:  # the failed instance, before its exit
            assert "could not write the write-ahead log" in str(err)
        return False

    assert wait_until(dead_with_the_reason)


def test_a_worker_finds_a_new_scheduler_when_the_old_one_is_gone_without_a_new_batch(
    ray_cluster, tokenizer_dir, tmp_path
):
    """Under continuous streaming no batch ever starts again, so a worker cannot wait for one to look the
    scheduler up: after a call fails on a scheduler that is gone for good (its owner died), a later call
    finds or creates another, which starts from the disk. Both ways a fn reaches it: the group manager's
    direct calls and the per-sample managers' batched ones."""
    from types import SimpleNamespace

    from writing_rl.reward_loop.config import ManagerConfig
    from writing_rl.reward_loop.fn_extras import FnExtras
    from writing_rl.reward_loop.reward_fn import load_reward_fn

    from conftest import compose_writing_rl

    state = f"reward.reward_kwargs.curriculum.state_dir={tmp_path / 'state'}"
    config = compose_writing_rl(tokenizer_dir, "http://127.0.0.1:9/v1", state, per_sample=False)
    scoring = SimpleNamespace(  # batches_started never changes
        settings=ManagerConfig.from_verl(config, None), batches_started=1, reward_fn=load_reward_fn(config)
    )
    curriculum = FnExtras(config, scoring).service("curriculum")

    def kill_the_scheduler() -> None:
        ray.kill(curriculum.scheduler.get(scoring.batches_started), no_restart=True)

    async def after_a_kill(call) -> int:
        kill_the_scheduler()
        with pytest.raises(ray.exceptions.RayActorError):
            await call()
        deadline = asyncio.get_running_loop().time() + 60
        while True:  # the dead actor's name is freed once no handle to it is left
            try:
                return await call()
            except ray.exceptions.RayActorError:
                assert asyncio.get_running_loop().time() < deadline, "the worker never found a live scheduler"
                await asyncio.sleep(0.1)

    async def stream() -> tuple[int, int]:
        assert await curriculum.for_call().advance("row-1", await curriculum.for_call().pin("row-1", 3))
        direct = await after_a_kill(lambda: curriculum.for_call().pin("row-1", 3))
        batched = await after_a_kill(lambda: curriculum.for_call().pin_group("row-1", 3, "uid-1", 1))
        return direct, batched

    assert asyncio.run(stream()) == (1, 1)  # each new scheduler read row-1's advance from the disk
    kill_the_scheduler()
