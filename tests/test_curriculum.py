"""Writing-RL's reference curriculum: scheduler semantics, persistence, resume, crash safety."""

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys

import pytest
from curriculum_helpers import closed_at_teardown, settings  # noqa: F401  (an autouse fixture)

from reward_fns.pairwise import compute_group_score
from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.log import (
    LATEST,
    LevelTable,
    load_levels,
    read_state,
    save_levels,
    step_snapshots,
)
from writing_rl.curriculum.report import describe_state
from writing_rl.curriculum.scheduler import ReferenceScheduler
from writing_rl.judge import JudgeReply, SampleJudge
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.reward_loop.contract import Member
from writing_rl.settings import ConfigError

from conftest import png_colours
from judge_server import preference_verdict


class LocalCurriculum:
    """The reward fn's view of the scheduler, without Ray (the actor's code, called directly)."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.advances = 0

    async def pin(self, key, references):
        return await self.scheduler.pin(key, references)

    async def advance(self, key, pinned, uid=None):
        self.advances += 1
        return await self.scheduler.advance(key, pinned, uid)


class PreferenceJudge:
    def __init__(self):
        self.asked = []

    async def complete(self, messages):
        self.asked.append(messages[-1]["content"])
        await asyncio.sleep(0.001)
        return JudgeReply(preference_verdict(messages[-1]["content"]), "stop", 0.001)


REFS = ["ref easy", "ref good medium", "ref good good hard"]


def group(texts, gid=7, split="train", refs=REFS):
    truth = {"prompt": "Write.", "target": list(refs), "criteria": None, "id": gid}
    return [Member(f"uid-{gid}", t, len(t), "Write.", "w", truth, {"split": split}) for t in texts]


def score(members, curriculum, judge=None, **kw):
    judge = judge or PreferenceJudge()
    results = asyncio.run(compute_group_score(members, judge=SampleJudge(judge), curriculum=curriculum, **kw))
    return results, judge


def test_a_group_is_judged_against_one_pinned_reference_and_moves_one_level(tmp_path):
    curriculum = LocalCurriculum(ReferenceScheduler(settings(tmp_path)))
    # Every rollout beats the easy reference: many concurrent wins, one step.
    results, judge = score(group(["good story"] * 8), curriculum, strategy="position-advantage")
    assert all(r["win"] == 1.0 and r["curriculum/level"] == 0 for r in results)
    assert all("ref easy" in q for q in judge.asked)
    assert curriculum.scheduler.table.level("7") == 1 and curriculum.advances == 1
    results, judge = score(group(["good story"] * 4), curriculum, strategy="position-advantage")
    assert all(r["curriculum/level"] == 1 for r in results) and all("ref good medium" in q for q in judge.asked)
    assert curriculum.scheduler.table.level("7") == 1  # 'good story' ties the medium reference: no win


def test_never_past_the_last_reference(tmp_path):
    scheduler = ReferenceScheduler(settings(tmp_path))
    curriculum = LocalCurriculum(scheduler)
    for _ in range(5):
        score(group(["good good good good story"]), curriculum)
    assert scheduler.table.level("7") == 2


def test_two_groups_of_one_id_in_flight_move_it_once(tmp_path):
    scheduler = ReferenceScheduler(settings(tmp_path))
    curriculum = LocalCurriculum(scheduler)

    async def both():
        judge = SampleJudge(PreferenceJudge())
        return await asyncio.gather(
            compute_group_score(group(["good a"]), judge=judge, curriculum=curriculum),
            compute_group_score(group(["good b"]), judge=judge, curriculum=curriculum),
        )

    first, second = asyncio.run(both())
    assert first[0]["curriculum/level"] == second[0]["curriculum/level"] == 0
    assert curriculum.advances == 2 and scheduler.table.level("7") == 1


def test_concurrent_groups_of_different_ids(tmp_path):
    scheduler = ReferenceScheduler(settings(tmp_path))
    curriculum = LocalCurriculum(scheduler)

    async def many():
        judge = SampleJudge(PreferenceJudge())
        texts = lambda gid: ["good x"] if gid % 2 else ["bad x"]  # noqa: E731
        await asyncio.gather(
            *(compute_group_score(group(texts(g), gid=g), judge=judge, curriculum=curriculum) for g in range(40))
        )

    asyncio.run(many())
    assert scheduler.table.as_dict() == {str(g): g % 2 for g in range(40)}


def test_a_group_verl_dropped_untrained_takes_its_move_back_durably(tmp_path):
    """verl evicts a judged group (stale, failed, filtered: JudgeHealthSampler calls ``withdraw``): the level
    it moved goes back, unless another group has moved it since; a restarted scheduler sees the same."""
    scheduler = ReferenceScheduler(settings(tmp_path))
    curriculum = LocalCurriculum(scheduler)
    score(group(["good story"], gid=1), curriculum)
    score(group(["good story"], gid=2), curriculum)
    assert scheduler.table.as_dict() == {"1": 1, "2": 1}
    assert asyncio.run(scheduler.withdraw(["uid-1", "uid-unknown"])) == 1
    assert scheduler.table.as_dict() == {"1": 0, "2": 1}
    assert asyncio.run(scheduler.withdraw(["uid-1"])) == 0  # told twice: moved back once
    # A group dropped after a later group (another uid, the same id) moved the level on leaves it alone.
    later = [dataclasses.replace(m, uid="uid-2-later") for m in group(["good good good story"], gid=2)]
    score(later, curriculum)
    assert scheduler.table.level("2") == 2
    assert asyncio.run(scheduler.withdraw(["uid-2"])) == 0 and scheduler.table.level("2") == 2
    scheduler.close()
    assert ReferenceScheduler(settings(tmp_path)).table.as_dict() == {"1": 0, "2": 2}


def test_an_open_group_verl_dropped_can_no_longer_move_its_level(tmp_path):
    scheduler = ReferenceScheduler(settings(tmp_path))

    async def run():
        pin = ("pin", "9", 3, "u9", 2, 60.0)
        assert await scheduler.batch([pin, ("report", "u9", True, 0.0)]) == [0, False]  # one of two reported
        assert await scheduler.withdraw(["u9"]) == 0
        return await scheduler.batch([("report", "u9", True, 0.0)])  # its last member, after the drop

    assert asyncio.run(run()) == [False]
    assert scheduler.table.level("9") == 0 and scheduler.stats()["withdrawn_groups"] == 1


@pytest.mark.parametrize("compacted", [False, True])
def test_a_group_open_when_the_scheduler_restarts_keeps_its_level(tmp_path, compacted):
    """Ray restarts a dead scheduler within the run: a group being judged then keeps the level its first
    rollouts were judged at, even when another group of its id has moved the level since (from the WAL,
    or from the snapshot's meta once a compaction folded the WAL). Its earlier reports are gone with the
    old process, so it cannot move the level; a new run starts with no open group."""
    config = settings(tmp_path)

    async def before():
        scheduler = ReferenceScheduler(config, run="r")
        assert await scheduler.batch([("pin", "7", 3, "slow", 2, 60.0), ("report", "slow", True, 0.0)]) == [0, False]
        assert await scheduler.batch([("pin", "7", 3, "fast", 1, 60.0)]) == [0]
        assert await scheduler.batch([("report", "fast", True, 0.0)]) == [True]  # 7 moves to level 1
        assert await scheduler.batch([("pin", "8", 3, "dropped", 2, 60.0), ("pin", "9", 3, "past", 2, 1e-6)])
        await scheduler.withdraw(["dropped"])
        await (scheduler.compact() if compacted else scheduler.flush())
        scheduler.close()

    async def after(run):
        scheduler = ReferenceScheduler(config, run=run)
        reopened = sorted(scheduler.groups.open)
        return reopened, await scheduler.batch([("pin", "7", 3, "slow", 2, 60.0), ("report", "slow", True, 0.0)])

    asyncio.run(before())
    # Only the group still being judged opens again (not the finished, withdrawn or timed-out ones), at its
    # level; its one report after the restart moves nothing.
    assert asyncio.run(after("r")) == (["slow"], [0, False])
    assert asyncio.run(after("another run")) == ([], [1, False])  # a new run: the current level


@pytest.mark.parametrize("threshold, wins, moves", [(0.0, 1, True), (0.0, 0, False), (0.5, 1, False), (0.5, 2, True)])
def test_advance_threshold(tmp_path, threshold, wins, moves):
    scheduler = ReferenceScheduler(settings(tmp_path))
    texts = ["good"] * wins + ["bad"] * (4 - wins)
    score(group(texts), LocalCurriculum(scheduler), advance_threshold=threshold)
    assert scheduler.table.level("7") == int(moves)


class FirstSlotJudge:
    """A position-biased judge: whatever it is shown, Response A is better."""

    async def complete(self, messages):
        return JudgeReply("A reads better.\n[[A]]", "stop", 0.001)


def test_both_orders_advance_only_on_a_position_consistent_win(tmp_path):
    scheduler = ReferenceScheduler(settings(tmp_path))
    # A win in one order and a loss in the other is the judge's position bias, not progress.
    results, _ = score(group(["good"] * 4), LocalCurriculum(scheduler), FirstSlotJudge(), strategy="both")
    assert all(r["win"] == 0.5 and r["position_consistent"] == 0 for r in results)
    assert scheduler.table.level("7") == 0
    score(group(["good"] * 4), LocalCurriculum(scheduler), strategy="both")  # wins in both orders
    assert scheduler.table.level("7") == 1


def test_validation_never_moves_a_level_nor_reads_the_training_one(tmp_path):
    scheduler = ReferenceScheduler(settings(tmp_path))
    curriculum = LocalCurriculum(scheduler)
    score(group(["good"] * 2), curriculum)  # training: id 7 moves to level 1
    results, judge = score(group(["good"] * 3, split="test"), curriculum)
    assert results[0]["win"] == 1.0 and results[0]["curriculum/level"] == 0
    assert all("ref easy" in q for q in judge.asked)  # validation's id 7 is another prompt: first reference
    assert scheduler.table.level("7") == 1 and curriculum.advances == 1


def test_single_reference_and_no_curriculum(tmp_path):
    results, judge = score(group(["good"], refs=["only ref"]), None)
    assert results[0]["curriculum/level"] == 0 and "only ref" in judge.asked[0]
    results, judge = score(group(["good"]), None)  # curriculum disabled: first reference
    assert "ref easy" in judge.asked[0]


def test_step_snapshots_follow_verl_checkpoints(tmp_path):
    config = settings(tmp_path, keep_steps=2)
    scheduler = ReferenceScheduler(config)
    curriculum = LocalCurriculum(scheduler)
    checkpoints = tmp_path / "ckpt"
    checkpoints.mkdir()

    async def train():
        judge = SampleJudge(PreferenceJudge())
        for step in range(1, 5):
            # The step's first request cuts the checkpoint verl wrote after the step before.
            await compute_group_score(group(["good"], gid=step), judge=judge, curriculum=curriculum)
            (checkpoints / "latest_checkpointed_iteration.txt").write_text(str(step))
        await scheduler.flush()

    asyncio.run(train())
    assert sorted(step_snapshots(config.state_dir)) == [2, 3]  # keep_steps=2; checkpoint 4 not cut yet
    assert load_levels(tmp_path / "state" / "levels.step_3.npz").as_dict() == {"1": 1, "2": 1, "3": 1}
    assert read_state(config.state_dir).table.as_dict() == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_a_fresh_run_in_an_old_checkpoint_dir_snapshots_its_own_checkpoints(tmp_path):
    # An earlier run left checkpoint 1 (tracker "1") and its snapshot; this run starts over
    # (trainer.resume_mode=disable) in the same dir, so verl's next save rewrites the tracker as "1".
    checkpoints = tmp_path / "ckpt"
    checkpoints.mkdir()
    tracker = checkpoints / "latest_checkpointed_iteration.txt"
    tracker.write_text("1")
    old_run = LevelTable(["old"], [2], [3]).arrays()
    save_levels(tmp_path / "state" / "levels.step_1.npz", old_run)
    scheduler = ReferenceScheduler(settings(tmp_path, resume=False))
    assert step_snapshots(tmp_path / "state") == {}  # the old run's history is dropped
    curriculum = LocalCurriculum(scheduler)

    async def steps():
        judge = SampleJudge(PreferenceJudge())
        await compute_group_score(group(["good"], gid=5), judge=judge, curriculum=curriculum)
        tracker.write_text("1")
        stat = tracker.stat()
        os.utime(tracker, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a later save, however coarse the clock
        await compute_group_score(group(["good"], gid=6), judge=judge, curriculum=curriculum)
        await scheduler.flush()

    asyncio.run(steps())
    assert load_levels(tmp_path / "state" / "levels.step_1.npz").as_dict() == {"5": 1}


def test_restart_continues_and_resume_uses_the_checkpointed_step(tmp_path):
    state = tmp_path / "state"
    save_levels(state / "levels.step_10.npz", LevelTable(["a"], [1], [3]).arrays())
    save_levels(state / LATEST, LevelTable(["a", "b"], [2, 1], [3, 2]).arrays())
    # A restart before any checkpoint: the latest snapshot.
    assert ReferenceScheduler(settings(tmp_path)).table.as_dict() == {"a": 2, "b": 1}
    # verl resumes from step 10: the levels recorded at step 10, not the later ones.
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").write_text("10")
    assert ReferenceScheduler(settings(tmp_path)).table.as_dict() == {"a": 1}
    assert ReferenceScheduler(settings(tmp_path, resume_step=10)).source.startswith("levels.step_10.npz")
    assert ReferenceScheduler(settings(tmp_path, resume=False)).table.as_dict() == {}


def test_config_from_verl_follows_trainer_settings(tmp_path):
    from omegaconf import OmegaConf

    base = {
        "trainer": {"default_local_dir": str(tmp_path / "ck"), "resume_mode": "auto"},
        "reward": {"reward_kwargs": {}},
    }
    config = CurriculumConfig.from_verl(OmegaConf.create(base))
    assert config.state_dir == str(tmp_path / "ck" / "curriculum") and config.resume and config.resume_step is None
    base["trainer"].update(resume_mode="resume_path", resume_from_path=str(tmp_path / "ck" / "global_step_40"))
    assert CurriculumConfig.from_verl(OmegaConf.create(base)).resume_step == 40
    base["trainer"]["resume_mode"] = "disable"
    assert not CurriculumConfig.from_verl(OmegaConf.create(base)).resume
    base["trainer"].update(resume_mode="resume_path", resume_from_path="ck/global_step_last")
    with pytest.raises(ConfigError, match="expected a directory named global_step_<step>"):
        CurriculumConfig.from_verl(OmegaConf.create(base))


def test_a_compaction_threshold_below_one_is_an_error():
    from omegaconf import OmegaConf

    config = OmegaConf.create({"trainer": {}, "reward": {"reward_kwargs": {"curriculum": {"compact_records": 0}}}})
    with pytest.raises(ConfigError, match="reward.reward_kwargs.curriculum.compact_records=0: expected a number >= 1"):
        CurriculumConfig.from_verl(config)


def test_only_a_run_that_schedules_references_needs_a_state_dir():
    from omegaconf import OmegaConf

    judge = {"base_url": "http://judge:8000/v1", "model": "m"}
    no_checkpoints = OmegaConf.create({"trainer": {}, "reward": {"reward_kwargs": {"judge": judge}}})
    settings = ManagerConfig.from_verl(no_checkpoints)  # a per-sample run never touches the curriculum
    assert settings.extras["curriculum"].enable and settings.extras["curriculum"].state_dir is None
    with pytest.raises(ConfigError, match="curriculum.state_dir is not set and no trainer.default_local_dir"):
        settings.extras["curriculum"].for_scheduler()


KILLER = """
import sys
from writing_rl.curriculum.log import LevelTable, save_levels
path, n = sys.argv[1], int(sys.argv[2])
ids = [str(k) for k in range(n)]
i = 0
while True:
    i += 1
    save_levels(path, LevelTable(ids, [i] * n, [10**6] * n).arrays())
    print(i, flush=True)
"""


def test_kill_9_during_snapshots_leaves_a_loadable_state(tmp_path):
    path = tmp_path / "state" / LATEST
    for complete in (1, 2, 3):  # killed while the next snapshot is being written
        proc = subprocess.Popen([sys.executable, "-c", KILLER, str(path), "200000"], stdout=subprocess.PIPE, text=True)
        for _ in range(complete):
            proc.stdout.readline()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        values = load_levels(path).arrays()[1]
        assert len(values) == 200000 and (values == values[0]).all()  # one whole snapshot, never a mix
    assert [p.name for p in path.parent.iterdir() if p.name != LATEST and not p.name.endswith(".tmp")] == []


def test_show_reports_levels(tmp_path, capsys):
    from writing_rl.tools.cli import main

    state = tmp_path / "state"
    save_levels(state / LATEST, LevelTable(["a", "b", "c", "d"], [2, 0, 1, 2], [3, 3, 2, 4]).arrays())
    text = describe_state(state, top=2)
    assert "4 ids; 2 (50.0%) at their hardest reference" in text
    assert "level   0:        1" in text and "level   2:        2" in text
    assert "most advanced: a (2/2), c (1/1)" in text and "least advanced: b (0/2)" in text
    assert main(["curriculum", "show", "--state-dir", str(state)]) == 0
    assert "at their hardest reference" in capsys.readouterr().out
    assert main(["curriculum", "show", "--state-dir", str(tmp_path / "nothing")]) == 2


def test_show_replays_the_wal_read_only(tmp_path, capsys):
    from writing_rl.tools.cli import main

    (tmp_path / "ckpt").mkdir()
    scheduler = ReferenceScheduler(settings(tmp_path))

    async def advance():
        for key in ("a", "b"):
            await scheduler.advance(key, await scheduler.pin(key, 3))
        await scheduler.pin("c", 3)
        await scheduler.flush()

    asyncio.run(advance())
    wal = tmp_path / "state" / "levels.wal"
    before = wal.read_bytes()
    assert load_levels(tmp_path / "state" / LATEST).as_dict() == {}  # everything is still in the WAL
    assert main(["curriculum", "show", "--state-dir", str(tmp_path / "state")]) == 0
    printed = capsys.readouterr().out
    assert "levels.latest.npz + 5 WAL records; last verl checkpoint seen: none yet" in printed
    assert "3 ids; 0 (0.0%) at their hardest reference" in printed and "level   1:        2" in printed
    assert wal.read_bytes() == before  # nothing written


def checkpointed_levels(tmp_path):
    state = tmp_path / "state"
    for step, levels in ((10, [0, 0, 0]), (20, [1, 0, 0]), (30, [2, 1, 0])):
        save_levels(state / f"levels.step_{step}.npz", LevelTable(["a", "b", "c"], levels, [3, 3, 3]).arrays())
    save_levels(state / LATEST, LevelTable(["a", "b", "c"], [2, 1, 0], [3, 3, 3]).arrays())
    return state


def test_show_plots_levels_over_checkpointed_steps(tmp_path, capsys):
    from writing_rl.plot import PALETTE
    from writing_rl.tools.cli import main

    state = checkpointed_levels(tmp_path)
    out = tmp_path / "levels.png"
    assert main(["curriculum", "show", "--state-dir", str(state), "--plot", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    data = out.read_bytes()
    assert len(data) > 10_000 and set(PALETTE[:3]) <= png_colours(data)  # levels 0, 1, 2
    assert main(["curriculum", "show", "--state-dir", str(tmp_path / "empty"), "--plot", str(out)]) == 2


def test_show_without_matplotlib_prints_the_rest_and_says_so(tmp_path, capsys, no_matplotlib):
    from writing_rl.plot import NO_MATPLOTLIB
    from writing_rl.tools.cli import main

    out = tmp_path / "levels.png"
    assert main(["curriculum", "show", "--state-dir", str(checkpointed_levels(tmp_path)), "--plot", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "at their hardest reference" in printed and NO_MATPLOTLIB in printed and not out.exists()


HOLDER = """
import sys, time
from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.scheduler import ReferenceScheduler
ReferenceScheduler(CurriculumConfig(state_dir=sys.argv[1]), run="run-one")
print("holding", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


def test_a_second_run_on_the_same_state_dir_fails_at_start_naming_the_holder(tmp_path):
    from writing_rl.curriculum.scheduler import CurriculumInUse

    state_dir = tmp_path / "state"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(CurriculumInUse) as info:
            ReferenceScheduler(CurriculumConfig(state_dir=str(state_dir)), run="run-two")
        message = str(info.value)
        assert "run run-one" in message and f"pid {holder.pid}" in message
        assert message.startswith("curriculum: ") and message.endswith(
            "; two training runs cannot share one state dir (each would overwrite the other's levels): give this "
            "run its own reward.reward_kwargs.curriculum.state_dir (by default {trainer.default_local_dir}/curriculum"
            "), or stop the other run"
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    # The holder is gone (the kernel dropped its lock): the directory is free again.
    assert ReferenceScheduler(CurriculumConfig(state_dir=str(state_dir)), run="run-two").run == "run-two"


def test_a_worker_asks_for_a_groups_level_once_and_forgets_a_failed_question():
    """GroupPins: the rollouts of a group on one worker share one question to the scheduler, also while it
    is out; a question that failed is asked again; an answer past the group's timeout is asked again."""
    from writing_rl.curriculum.groups import GroupPins

    asked = []

    async def run():
        pins, answer = GroupPins(), asyncio.get_running_loop().create_future()

        async def ask():
            asked.append("g")
            return await answer

        waiting = [asyncio.ensure_future(pins.level("g", ask, 60.0)) for _ in range(3)]
        await asyncio.sleep(0)
        answer.set_result(2)
        levels = await asyncio.gather(*waiting, pins.level("g", ask, 60.0))

        async def fail():
            asked.append("h")
            raise RuntimeError("scheduler gone")

        with pytest.raises(RuntimeError):
            await pins.level("h", fail, 60.0)

        async def one():
            asked.append("h")
            return 1

        again = await pins.level("h", one, 60.0)
        kept = dict(pins.pinned)
        expired = await pins.level("x", one, -1.0), await pins.level("x", one, -1.0)
        return levels, again, kept, expired, list(pins.pinned)

    levels, again, kept, expired, left = asyncio.run(run())
    assert levels == [2, 2, 2, 2] and again == 1 and expired == (1, 1)
    assert asked == ["g", "h", "h", "h", "h"]
    assert [level for level, _ in kept.values()] == [2, 1]  # an answer is kept as its level alone
    assert left == ["g", "h", "x"]  # "x" asked again once its answer was past its timeout


def test_a_workers_pins_forget_groups_past_their_timeout_and_keep_at_most_size():
    from writing_rl.curriculum.groups import GroupPins

    async def run():
        async def ask():
            return 0

        pins = GroupPins(size=3)
        for uid in "abcde":
            await pins.level(uid, ask, 60.0)
        kept = list(pins.pinned)
        short = GroupPins()
        await short.level("old", ask, 0.0)
        await short.level("new", ask, 60.0)  # the old group's timeout has passed: forgotten
        return kept, list(short.pinned)

    assert asyncio.run(run()) == (["c", "d", "e"], ["new"])


def test_pins_expire_oldest_first_on_their_own_clock_and_hold_until_their_deadline(monkeypatch):
    import types

    from writing_rl.curriculum import groups as groups_module

    clock = {"now": 0.0}
    monkeypatch.setattr(groups_module, "time", types.SimpleNamespace(monotonic=lambda: clock["now"]))
    asked = []

    async def run():
        async def ask():
            asked.append(clock["now"])
            return 1

        pins = groups_module.GroupPins()
        await pins.level("old", ask, 10.0)  # until 10
        clock["now"] = 5.0
        await pins.level("mid", ask, 10.0)  # until 15
        clock["now"] = 10.0
        await pins.level("old", ask, 10.0)  # at its deadline: still held
        clock["now"] = 12.0
        await pins.level("new", ask, 10.0)  # "old" is past its deadline: forgotten, the others kept
        return list(pins.pinned)

    assert asyncio.run(run()) == ["mid", "new"] and asked == [0.0, 5.0, 12.0]


def test_a_shared_actor_keeps_its_first_handle_while_the_actor_lives_and_takes_a_new_one_once_replaced():
    """The worker that created a non-detached actor owns it through that first handle: a later lookup of the same
    actor must not replace it (Ray would collect the actor with the dropped handle)."""
    import types

    from writing_rl.reward_loop.actors import SharedActor

    found = iter([types.SimpleNamespace(_actor_id=a) for a in ("one", "one", "two", "three")])
    actor = SharedActor(lambda: next(found))
    first = actor.get(0)
    assert actor.get(0) is first  # same batch: not looked up again
    assert actor.get(1) is first  # looked up again, the same actor: the first handle kept
    replaced = actor.get(2)
    assert replaced is not first and replaced._actor_id == "two"
    actor.forget()  # it died under a call: looked up again, even within the batch
    assert actor.get(2)._actor_id == "three"


def test_an_actor_class_is_made_once_per_process():
    from writing_rl.reward_loop.actors import remote_class

    assert remote_class(ReferenceScheduler) is remote_class(ReferenceScheduler)


def test_a_batchs_reports_of_one_group_go_as_one_and_count_every_rollout(tmp_path):
    from writing_rl.curriculum.groups import merge_reports

    requests = [("pin", "5", 3, "u", 4, 60.0), ("report", "u", True, 0.0), ("report", "v", False, 0.0),
                ("report", "u", False, 0.0), ("report", "u", True, 0.0)]  # fmt: skip
    merged, positions = merge_reports(requests)
    assert merged == [requests[0], ("report", "u", 2, 0.0, 3), ("report", "v", 0, 0.0, 1)]
    assert positions == [0, 1, 2, 1, 1]
    scheduler = ReferenceScheduler(settings(tmp_path))

    async def run():
        first = await scheduler.batch(merged)
        return first, await scheduler.batch([("report", "u", 0, 0.0, 1)])  # the fourth: 2 wins of 4

    assert asyncio.run(run()) == ([0, False, False], [True])
    assert scheduler.table.level("5") == 1
