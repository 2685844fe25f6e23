"""The curriculum as a reward fn sees it, pinned without Ray: the handle (curriculum/handle.py), a worker's
way to the scheduler (curriculum/extra.py), the group bookkeeping (curriculum/groups.py) and where a
scheduler starts (curriculum/start.py). Actor handles are stand-ins that record their calls."""

import asyncio
import os
import re
import time
from types import SimpleNamespace

import pytest
import ray.exceptions

from writing_rl.curriculum import groups as groups_module
from writing_rl.curriculum import start as start_module
from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.extra import CURRICULUM, REPORT_WINDOW_S, CurriculumExtra, WorkerCurriculum
from writing_rl.curriculum.groups import Batched, GroupPins, GroupTally, OpenGroups, merge_reports
from writing_rl.curriculum.handle import Curriculum, PinnedCurriculum
from writing_rl.curriculum.log import read_state
from writing_rl.reward_loop.actors import SharedActor


class Method:
    """``handle.<name>.remote(*args)``: records the call and answers ``answer`` (raises it if an exception)."""

    def __init__(self, calls: list, name: str, answer):
        self.calls, self.name, self.answer = calls, name, answer

    async def _reply(self):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer(*self.calls[-1][1:]) if callable(self.answer) else self.answer

    def remote(self, *args):
        self.calls.append((self.name, *args))
        return self._reply()


class Handle:
    """An actor handle double: each method answers as ``answers`` says."""

    _actor_id = "scheduler-1"

    def __init__(self, **answers):
        self.calls: list = []
        self.answers = answers

    def __getattr__(self, name):
        if name not in self.answers:
            raise AttributeError(name)
        return Method(self.calls, name, self.answers[name])


def run(coroutine):
    return asyncio.run(coroutine)


# ---------------------------------------------------------------- handle.py


def test_pin_and_advance_call_the_scheduler_with_their_arguments():
    handle = Handle(pin=2, advance=True)
    curriculum = Curriculum(handle)
    assert run(curriculum.pin("prompt-7", 4)) == 2
    assert run(curriculum.advance("prompt-7", 2, "group-1")) is True
    assert run(curriculum.advance("prompt-7", 3)) is True
    assert handle.calls == [
        ("pin", "prompt-7", 4),
        ("advance", "prompt-7", 2, "group-1"),
        ("advance", "prompt-7", 3, None),
    ]


def test_a_curriculum_that_cannot_advance_never_asks_the_scheduler():
    handle = Handle(advance=True)
    assert run(Curriculum(handle, can_advance=False).advance("prompt-7", 0, "g")) is False
    assert handle.calls == []


def test_a_failed_call_is_reported_then_raised():
    error = RuntimeError("actor gone")
    told = []
    curriculum = Curriculum(Handle(pin=error), failed=told.append)
    with pytest.raises(RuntimeError, match="actor gone"):
        run(curriculum.pin("k", 2))
    assert told == [error]
    with pytest.raises(RuntimeError, match="actor gone"):  # with no one to tell, it is still raised
        run(Curriculum(Handle(advance=error)).advance("k", 0))


def test_pin_group_asks_through_the_batched_calls_with_the_groups_timeout():
    sent = []

    async def batched(request):
        sent.append(request)
        return 1

    curriculum = Curriculum(None, batched=batched, timeout_s=90.0)
    assert run(curriculum.pin_group("k", 3, "u", 8)) == 1
    assert sent == [("pin", "k", 3, "u", 8, 90.0)]
    assert Curriculum(None).timeout_s == 1800.0


def test_pin_group_asks_once_per_group_when_the_worker_keeps_pins():
    sent = []

    async def batched(request):
        sent.append(request)
        return 2

    async def go(curriculum):
        return [await curriculum.pin_group("k", 3, uid, 8) for uid in ("u", "u", "w", "u")]

    assert run(go(Curriculum(None, batched=batched, pins=GroupPins()))) == [2, 2, 2, 2]
    assert sent == [("pin", "k", 3, "u", 8, 1800.0), ("pin", "k", 3, "w", 8, 1800.0)]


def test_reports_go_through_the_report_calls_or_else_the_batched_ones():
    sent = []

    def channel(name):
        async def call(request):
            sent.append((name, request))
            return True

        return call

    assert run(Curriculum(None, batched=channel("pins"), reports=channel("reports")).report("u", True, 0.5))
    assert run(Curriculum(None, batched=channel("pins")).report("v", False, 0.0))
    assert sent == [("reports", ("report", "u", True, 0.5)), ("pins", ("report", "v", False, 0.0))]


@pytest.mark.parametrize("level, references, pinned", [(0, 3, 0), (1, 3, 1), (5, 3, 2), (2, 1, 0)])
def test_a_shadow_judge_pins_the_training_level_capped_at_the_last_reference(level, references, pinned):
    shadow = PinnedCurriculum(level)
    assert run(shadow.pin("k", references)) == pinned
    assert run(shadow.pin_group("k", references, "u", 4)) == pinned


def test_a_shadow_judge_never_moves_a_level():
    shadow = PinnedCurriculum(1)
    assert run(shadow.advance("k", 1, "u")) is False
    assert run(shadow.report("u", True, 0.0)) is False
    assert shadow.can_advance is False and shadow.handle is None


# ---------------------------------------------------------------- extra.py


def scoring(tmp_path, enable=True, timeout_s=45.0):
    curriculum = CurriculumConfig(enable=enable, state_dir=str(tmp_path / "state"))
    settings = SimpleNamespace(extras={"curriculum": curriculum}, groups=SimpleNamespace(timeout_s=timeout_s))
    return SimpleNamespace(settings=settings, batches_started=3)


def worker(tmp_path, handle, **kw) -> WorkerCurriculum:
    """A WorkerCurriculum whose scheduler lookup finds ``handle`` (counting the lookups)."""
    made = WorkerCurriculum(scoring(tmp_path, **kw))
    made.lookups = []
    made.scheduler = SharedActor(lambda: made.lookups.append(1) or handle)
    return made


def test_the_extra_starts_a_worker_curriculum_only_when_the_curriculum_is_on(tmp_path):
    assert CURRICULUM.name == "curriculum" and isinstance(CURRICULUM, CurriculumExtra)
    assert isinstance(CURRICULUM.start(None, scoring(tmp_path)), WorkerCurriculum)
    assert CURRICULUM.start(None, scoring(tmp_path, enable=False)) is None


def test_a_worker_needs_a_state_dir_to_reach_a_scheduler(tmp_path):
    from writing_rl.settings import ConfigError

    lacking = scoring(tmp_path)
    lacking.settings.extras["curriculum"] = CurriculumConfig(state_dir=None)
    with pytest.raises(ConfigError, match="state_dir"):
        WorkerCurriculum(lacking)


def test_a_worker_looks_up_the_runs_scheduler_once_per_batch(tmp_path, monkeypatch):
    from writing_rl.curriculum import scheduler as scheduler_module

    asked, handle = [], Handle()
    monkeypatch.setattr(scheduler_module, "get_or_create_scheduler", lambda found: asked.append(found) or handle)
    scored = scoring(tmp_path)
    made = WorkerCurriculum(scored)
    assert made.for_call().handle is handle and made.for_call().handle is handle
    scored.batches_started += 1
    assert made.for_call().handle is handle
    assert asked == [scored.settings.extras["curriculum"]] * 2


def test_a_pin_is_sent_at_once_and_reports_wait_a_short_window_for_company(tmp_path):
    made = WorkerCurriculum(scoring(tmp_path))
    assert made.batched.window_s == 0
    assert made.reports.window_s == REPORT_WINDOW_S and 0 < REPORT_WINDOW_S < 0.1
    assert made.batched is not made.reports and isinstance(made.pins, GroupPins)


def test_a_batch_goes_to_the_scheduler_with_its_reports_merged_and_answers_each_request(tmp_path):
    handle = Handle(batch=lambda merged: [f"answer to {request[0]} {request[1]}" for request in merged])
    made = worker(tmp_path, handle)
    requests = [("pin", "k", 3, "u", 4, 60.0), ("report", "u", True, 0.0), ("report", "u", False, 0.0)]
    answers = run(made._send(requests))
    assert handle.calls == [("batch", [requests[0], ("report", "u", 1, 0.0, 2)])]
    assert answers == ["answer to pin k", "answer to report u", "answer to report u"]


def test_a_scheduler_that_died_is_looked_up_again_but_one_restarting_is_kept(tmp_path):
    for error, forgotten in [
        (ray.exceptions.ActorDiedError(), True),
        (ray.exceptions.ActorUnavailableError("restarting", None), False),
        (RuntimeError("a bad request"), False),
    ]:
        made = worker(tmp_path, Handle(batch=error))
        with pytest.raises(type(error)):
            run(made._send([("pin", "k", 3, "u", 4, 60.0)]))
        made.scheduler.get(3)  # the same batch: looked up again only if the handle was forgotten
        assert len(made.lookups) == 1 + forgotten, error


def test_a_call_gets_a_curriculum_wired_to_this_workers_scheduler_and_queues(tmp_path):
    handle = Handle()
    made = worker(tmp_path, handle, timeout_s=45.0)
    on_time, late = made.for_call(), made.for_call(late=True)
    assert on_time.handle is handle and on_time.can_advance is True and late.can_advance is False
    assert on_time.batched is made.batched and on_time.reports is made.reports and on_time.pins is made.pins
    assert on_time.timeout_s == 45.0
    on_time.failed(ray.exceptions.ActorDiedError())  # the call's errors reach the worker
    made.scheduler.get(3)
    assert len(made.lookups) == 2


def test_a_shadow_call_is_pinned_at_the_level_the_training_call_was_judged_at(tmp_path):
    made = worker(tmp_path, Handle())
    assert run(made.for_shadow({"curriculum/level": 2}).pin("k", 4)) == 2
    assert run(made.for_shadow({}).pin("k", 4)) == 0
    assert made.for_shadow({"curriculum/level": 2}).can_advance is False


def test_batched_requests_reach_the_scheduler_through_the_worker(tmp_path):
    handle = Handle(batch=lambda merged: [len(merged)] * len(merged))
    made = worker(tmp_path, handle)

    async def go():
        curriculum = made.for_call()
        return await asyncio.gather(curriculum.pin_group("k", 3, "u", 2), curriculum.report("u", True, 0.0))

    assert run(go()) == [1, 1]
    assert [call[0] for call in handle.calls] == ["batch", "batch"]


# ---------------------------------------------------------------- groups.py


def tally(expected=3, deadline_in=100.0, level=1):
    return GroupTally("prompt-7", level, expected, time.monotonic() + deadline_in)


def test_a_tally_is_complete_once_every_expected_rollout_has_reported():
    counted = tally(expected=3)
    assert counted.add(True) is False and counted.add(0, reports=1) is False
    assert counted.add(2, reports=2) is True
    assert (counted.wins, counted.reported) == (3, 4)


@pytest.mark.parametrize(
    "wins, reported, threshold, qualifies",
    [(1, 2, 0.5, True), (1, 2, 0.51, False), (0, 2, 0.0, False), (1, 4, 0.0, True), (4, 4, 1.0, True)],
)
def test_a_group_qualifies_with_a_win_and_a_win_rate_at_the_threshold(wins, reported, threshold, qualifies):
    counted = tally(expected=reported)
    counted.add(wins, reports=reported)
    assert counted.qualifies(threshold) is qualifies


def test_a_tallys_pin_carries_its_deadline_as_unix_time_and_restores_to_the_same_group():
    pinned = tally(expected=4, deadline_in=100.0, level=2).pin()
    assert pinned[:3] == ["prompt-7", 2, 4]
    assert 99 < pinned[3] - time.time() <= 100
    groups = OpenGroups()
    groups.restore("u", ["prompt-7", "2", "4", str(pinned[3])])  # (the WAL's JSON may carry any of these as text)
    restored = groups.get("u")
    assert (restored.key, restored.level, restored.expected) == ("prompt-7", 2, 4)
    assert 99 < restored.deadline - time.monotonic() <= 100


def test_a_group_past_its_deadline_is_not_restored():
    groups = OpenGroups()
    groups.restore("u", ["prompt-7", 1, 4, time.time() - 1])
    assert groups.get("u") is None and not groups.open


def test_starting_a_group_keeps_the_first_pin_and_needs_at_least_one_rollout():
    groups = OpenGroups()
    first = groups.start("u", "prompt-7", 1, 0, 60.0)
    assert first.expected == 1 and first.level == 1 and 59 < first.deadline - time.monotonic() <= 60
    assert groups.start("u", "prompt-7", 2, 8, 60.0) is first and first.level == 1


def record_closes(groups):
    closed = []
    groups.on_close = closed.append
    return closed


def test_a_finished_group_leaves_open_keeps_its_level_and_is_told():
    groups = OpenGroups()
    closed = record_closes(groups)
    started = groups.start("u", "prompt-7", 2, 1, 60.0)
    assert groups.finish("u") is started
    assert groups.get("u") is None and groups.finished["u"] == 2 and closed == ["u"]


def test_finished_and_moved_groups_are_kept_up_to_a_bound_oldest_dropped_first(monkeypatch):
    monkeypatch.setattr(groups_module, "FINISHED_GROUPS", 2)
    groups = OpenGroups()
    for uid in ("a", "b", "c"):
        groups.start(uid, "k", 0, 1, 60.0)
        groups.finish(uid)
        groups.moved(uid, "k", 1)
    assert list(groups.finished) == ["b", "c"] and list(groups.advanced) == ["b", "c"]


def test_withdrawing_a_group_closes_it_and_hands_back_the_move_it_made():
    groups = OpenGroups()
    closed = record_closes(groups)
    groups.start("open", "k", 0, 2, 60.0)
    assert groups.withdraw("open") is None
    assert groups.get("open") is None and groups.finished["open"] == -1 and closed == ["open"]
    groups.moved("done", "k", 1)
    assert groups.withdraw("done") == ("k", 1) and groups.withdraw("done") is None
    assert groups.withdrawn == 3 and closed == ["open"]  # a group already closed is not closed again


def test_expired_groups_are_dropped_oldest_first_up_to_the_first_still_open():
    groups = OpenGroups()
    closed = record_closes(groups)
    groups.open["old"] = tally(deadline_in=-2.0)
    groups.open["older-but-later"] = tally(deadline_in=-1.0)
    groups.open["live"] = tally(deadline_in=60.0)
    groups.open["expired-behind-live"] = tally(deadline_in=-1.0)
    groups.expire()
    assert list(groups.open) == ["live", "expired-behind-live"]
    assert closed == ["old", "older-but-later"] and groups.dropped == 2
    assert groups.finished == {"old": -1, "older-but-later": -1}


def test_a_worker_keeps_a_bounded_number_of_pins_oldest_forgotten_first():
    async def go():
        pins = GroupPins(size=2)

        async def one():
            return 1

        for uid in ("a", "b", "c"):
            await pins.level(uid, one, 60.0)
        return list(pins.pinned)

    assert run(go()) == ["b", "c"]


def test_a_question_is_settled_only_if_it_is_still_the_groups_question():
    async def go():
        pins = GroupPins()
        loop = asyncio.get_running_loop()
        failed, current = loop.create_future(), loop.create_future()
        failed.set_exception(RuntimeError("gone"))
        current.set_result(3)
        pins.pinned["u"] = (current, time.monotonic() + 60)
        pins._settled("u", failed)  # an older question's failure
        kept = "u" in pins.pinned
        pins.pinned["v"] = (failed, time.monotonic() + 60)
        pins._settled("v", failed)
        cancelled = loop.create_future()
        cancelled.cancel()
        pins.pinned["w"] = (cancelled, time.monotonic() + 60)
        pins._settled("w", cancelled)
        pins._settled("unknown", failed)
        pins._settled("u", current)  # an answer is kept, as its level alone
        return kept, sorted(pins.pinned), pins.pinned["u"][0]

    assert run(go()) == (True, ["u"], 3)


def test_reports_merge_per_group_and_threshold_counting_each_rollouts_reports():
    requests = [("report", "u", True, 0.5, 3), ("report", "u", True, 0.0), ("report", "u", False, 0.5, 2)]
    merged, positions = merge_reports(requests)
    assert merged == [("report", "u", 1, 0.5, 5), ("report", "u", 1, 0.0, 1)]
    assert positions == [0, 1, 0]


def test_batched_sends_one_call_at_a_time_and_the_requests_that_wait_go_together():
    sent, release = [], []

    async def send(requests):
        sent.append(list(requests))
        gate = asyncio.get_running_loop().create_future()
        release.append(gate)
        await gate
        return [f"{r}!" for r in requests]

    async def go():
        batched = Batched(send, window_s=0.0)
        first = asyncio.ensure_future(batched("a"))
        await until_true(lambda: sent)
        later = [asyncio.ensure_future(batched(r)) for r in ("b", "c")]
        await asyncio.sleep(0)
        assert sent == [["a"]]  # the second call waits for the first
        release[0].set_result(None)
        await until_true(lambda: len(sent) == 2)
        release[1].set_result(None)
        return await asyncio.gather(first, *later), batched.busy

    answers, busy = run(go())
    assert answers == ["a!", "b!", "c!"] and sent == [["a"], ["b", "c"]] and busy is False


async def until_true(condition):
    """Let the loop run until ``condition()`` holds (a bounded number of turns, never a clock)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def test_batched_hands_each_request_its_own_error_or_the_calls_error_to_all():
    async def answers_with_one_error(requests):
        return [ValueError(f"bad {r}") if r == "bad" else r for r in requests]

    async def fails(requests):
        raise RuntimeError("the call failed")

    async def go():
        mixed = Batched(answers_with_one_error, window_s=0.0)
        results = await asyncio.gather(mixed("ok"), mixed("bad"), return_exceptions=True)
        failing = Batched(fails, window_s=0.0)
        errors = await asyncio.gather(failing("x"), failing("y"), return_exceptions=True)
        after = await mixed("again")  # a failed call leaves the queue usable
        return results, errors, after

    results, errors, after = run(go())
    assert results[0] == "ok" and isinstance(results[1], ValueError) and str(results[1]) == "bad bad"
    assert [str(e) for e in errors] == ["the call failed"] * 2 and after == "again"


def test_batched_a_cancelled_call_cancels_the_waiting_requests():
    async def go():
        calls = []

        async def send(requests):
            calls.append(asyncio.current_task())
            await asyncio.get_running_loop().create_future()  # never answers

        batched = Batched(send, window_s=0.0)
        waiting = asyncio.ensure_future(batched("x"))
        await until_true(lambda: calls)
        calls[0].cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return batched.busy

    assert run(go()) is False


def test_a_group_with_under_a_second_left_is_still_restored():
    groups = OpenGroups()
    groups.restore("u", ["prompt-7", 1, 4, time.time() + 0.5])
    assert groups.get("u") is not None


def test_batched_still_answers_the_rest_of_a_call_when_one_caller_gave_up():
    async def go():
        gate, sent = asyncio.get_running_loop().create_future(), []

        async def send(requests):
            sent.append(list(requests))
            await gate
            return [f"{r}!" for r in requests]

        batched = Batched(send, window_s=0.0)
        gave_up, waiting = asyncio.ensure_future(batched("a")), asyncio.ensure_future(batched("b"))
        await until_true(lambda: sent)
        assert sent == [["a", "b"]]  # both went out in one call
        gave_up.cancel()
        gate.set_result(None)
        await until_true(waiting.done)
        return waiting.result()

    assert run(go()) == "b!"


# ---------------------------------------------------------------- start.py


def write_tracker(directory, text, mtime_ns=None):
    tracker = directory / start_module.TRACKER
    tracker.write_text(text)
    if mtime_ns is not None:
        os.utime(tracker, ns=(mtime_ns, mtime_ns))
    return tracker


@pytest.mark.parametrize("text, step", [(" 12\n", 12), ("", None), ("12.5", None), ("step 3", None)])
def test_the_checkpointed_step_is_the_integer_in_verls_tracker_file(tmp_path, text, step):
    write_tracker(tmp_path, text)
    assert start_module.checkpointed_step(str(tmp_path)) == step


def test_no_checkpoint_dir_or_no_tracker_file_is_no_checkpointed_step(tmp_path):
    assert start_module.checkpointed_step(None) is None and start_module.checkpointed_step("") is None
    assert start_module.checkpointed_step(str(tmp_path)) is None
    assert start_module.checkpoint_marker(None) is None and start_module.checkpoint_marker(str(tmp_path)) is None


def test_a_checkpoint_marker_is_the_step_and_the_trackers_mtime(tmp_path):
    write_tracker(tmp_path, "4", mtime_ns=1_000_000_000)
    assert start_module.checkpoint_marker(str(tmp_path)) == (4, 1_000_000_000)
    assert start_module.checkpoint_marker(str(tmp_path), (3, 999)) == (4, 1_000_000_000)


def test_a_tracker_with_the_known_mtime_is_not_read_again(tmp_path):
    write_tracker(tmp_path, "half writ", mtime_ns=2_000_000_000)
    known = (7, 2_000_000_000)
    assert start_module.checkpoint_marker(str(tmp_path), known) == known


def test_a_half_written_tracker_gives_no_marker(tmp_path):
    write_tracker(tmp_path, "", mtime_ns=3_000_000_000)
    assert start_module.checkpoint_marker(str(tmp_path), (2, 1)) is None


def test_a_runs_identity_is_its_session_job_namespace_and_resume_settings(monkeypatch):
    context = SimpleNamespace(get_job_id=lambda: "02000000", namespace="driver-ns")
    monkeypatch.setattr(start_module.ray, "get_runtime_context", lambda: context)
    node = SimpleNamespace(node=SimpleNamespace(session_name="session_2026"))
    monkeypatch.setattr(start_module.ray._private.worker, "global_worker", node)
    config = CurriculumConfig(resume=True, resume_step=40)
    assert start_module.run_identity(config) == "session_2026/02000000/driver-ns/resume=True:40"
    monkeypatch.setattr(start_module.ray._private.worker, "global_worker", SimpleNamespace())  # not connected
    assert start_module.run_identity(CurriculumConfig(resume=False)) == "/02000000/driver-ns/resume=False:None"


def scheduled_run(tmp_path, name: str):
    """A run that moved "x" to level 1, then saved checkpoint 1 and saw it (a cut): its state dir."""
    from writing_rl.curriculum.scheduler import ReferenceScheduler

    config = CurriculumConfig(state_dir=str(tmp_path / "state"), checkpoint_dir=str(tmp_path / "ckpt"))

    async def go():
        scheduler = ReferenceScheduler(config, run=name)
        try:
            await scheduler.advance("x", await scheduler.pin("x", 3))
            (tmp_path / "ckpt").mkdir()
            write_tracker(tmp_path / "ckpt", "1", mtime_ns=5_000_000_000)
            await scheduler.pin("x", 3)  # the cut of checkpoint 1
            await scheduler.flush()
        finally:
            scheduler.close()

    run(go())
    return config


def test_a_scheduler_restarted_within_its_run_starts_where_it_stopped(tmp_path):
    config = scheduled_run(tmp_path, "run-a")
    start = start_module.recover(config, "run-a")
    assert start.table.as_dict() == {"x": 1} and start.checkpoint == 1
    assert start.marker == (1, 5_000_000_000)
    assert re.fullmatch(r"levels\.latest\.npz \+ \d+ WAL records \(restarted within the run\)", start.source)


def test_a_fresh_run_starts_empty_at_the_current_checkpoint_and_drops_old_step_snapshots(tmp_path):
    config = scheduled_run(tmp_path, "run-a")
    fresh = CurriculumConfig(state_dir=config.state_dir, checkpoint_dir=config.checkpoint_dir, resume=False)
    start = start_module.recover(fresh, "run-b")
    assert start.table.as_dict() == {} and start.checkpoint is None and start.marker == (1, 5_000_000_000)
    assert start.source == "fresh (trainer.resume_mode=disable)" and start.drop_steps == [1]


def checkpoint(tmp_path, step: int, second: int) -> tuple[int, int]:
    """verl's tracker file naming ``step``, written at ``second`` (its mtime): the marker it makes."""
    (tmp_path / "ckpt").mkdir(exist_ok=True)
    write_tracker(tmp_path / "ckpt", str(step), mtime_ns=second * 10**9)
    return step, second * 10**9


def in_run(config, name: str, *steps):
    """Run ``steps`` (each: a callable, or "advance" to move "x" up one) in a scheduler of run ``name``."""
    from writing_rl.curriculum.scheduler import ReferenceScheduler

    async def go():
        scheduler = ReferenceScheduler(config, run=name)
        try:
            for step in steps:
                if step == "advance":
                    await scheduler.advance("x", await scheduler.pin("x", 9))
                elif step == "pin":
                    await scheduler.pin("x", 9)
                else:
                    step()
            await scheduler.flush()
        finally:
            scheduler.close()

    run(go())


def two_checkpoints(tmp_path, **settings):
    """Run "a": "x" at 1 at checkpoint 1, at 2 at checkpoint 2, then 3; step snapshots 1 and 2."""
    config = CurriculumConfig(state_dir=str(tmp_path / "state"), checkpoint_dir=str(tmp_path / "ckpt"), **settings)
    in_run(
        config,
        "a",
        "advance",
        lambda: checkpoint(tmp_path, 1, 5),
        "advance",
        lambda: checkpoint(tmp_path, 2, 6),
        "advance",
    )
    return config


def resumed(config, **settings) -> CurriculumConfig:
    return CurriculumConfig(state_dir=config.state_dir, checkpoint_dir=config.checkpoint_dir, **settings)


def test_with_no_checkpoint_to_resume_from_a_new_run_takes_the_latest_levels(tmp_path):
    config = two_checkpoints(tmp_path)
    (tmp_path / "ckpt" / start_module.TRACKER).unlink()
    start = start_module.recover(config, "b")
    assert start.table.as_dict() == {"x": 3} and start.checkpoint == 2 and start.marker is None
    assert re.fullmatch(r"levels\.latest\.npz \+ \d+ WAL records \(no checkpoint to resume from\)", start.source)


def test_resuming_a_step_with_a_snapshot_takes_that_snapshot_and_drops_the_later_ones(tmp_path):
    config = two_checkpoints(tmp_path)
    start = start_module.recover(resumed(config, resume_step=1), "b")
    assert start.table.as_dict() == {"x": 1} and start.checkpoint == 1 and start.marker == (2, 6 * 10**9)
    assert start.source == "levels.step_1.npz (verl resumes from step 1)" and start.drop_steps == [2]


def test_resuming_a_step_whose_snapshot_is_lost_rebuilds_it_from_the_wal_before_its_cut(tmp_path):
    config = two_checkpoints(tmp_path)
    (tmp_path / "state" / "levels.step_1.npz").unlink()
    start = start_module.recover(resumed(config, resume_step=1), "b")
    assert start.table.as_dict() == {"x": 1} and start.checkpoint == 1 and start.marker == (2, 6 * 10**9)
    assert start.source == "levels.latest.npz + WAL before checkpoint 1 (verl resumes from step 1)"
    assert start.drop_steps == [2] and start.save_step == 1


def test_resuming_a_step_the_state_dir_holds_no_state_of_takes_the_latest_and_warns(tmp_path, caplog):
    """The base snapshot is already at step 1 (a run resumed there), so the WAL cannot rebuild step 1."""
    config = two_checkpoints(tmp_path)
    at_one = resumed(config, resume_step=1)
    # Step 1 saved again (a cut), a move, then checkpoint 2 (another cut).
    in_run(at_one, "b", lambda: checkpoint(tmp_path, 1, 7), "pin", "advance", lambda: checkpoint(tmp_path, 2, 8), "pin")
    (tmp_path / "state" / "levels.step_1.npz").unlink()
    with caplog.at_level("WARNING", logger="writing_rl"):
        start = start_module.recover(at_one, "c")
    assert start.table.as_dict() == {"x": 2} and start.checkpoint == 1 and start.marker == (2, 8 * 10**9)
    assert re.fullmatch(r"levels\.latest\.npz \+ \d+ WAL records \(no state of step 1 kept\)", start.source)
    assert start.drop_steps == [2] and start.seq == read_state(config.state_dir).seq > 0
    state_dir = config.state_dir
    assert f"curriculum: verl resumes from step 1 but {state_dir} holds no state of it" in caplog.messages


def test_resuming_a_checkpoint_this_state_dir_never_saw_is_not_rebuilt_from_its_wal(tmp_path):
    """verl resumes from step 3 (another run's checkpoint): the WAL, which saw checkpoints 1 and 2 only,
    holds no state of it."""
    config = two_checkpoints(tmp_path)
    start = start_module.recover(resumed(config, resume_step=3), "b")
    assert re.fullmatch(r"levels\.latest\.npz \+ \d+ WAL records \(no state of step 3 kept\)", start.source)
    assert start.table.as_dict() == {"x": 3} and start.checkpoint == 3 and start.save_step is None
