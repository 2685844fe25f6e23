"""Integration through verl's RewardLoopManager: verl's checkpoints written between steps, a kill -9 of
the scheduler actor right after a step that advanced, and a resume from an older checkpoint that gets
exactly the levels of that step."""

import os
import signal

import ray
from curriculum_helpers import scheduler_alive
from test_curriculum_reward_loop import step_batch

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.log import load_levels, read_state, step_snapshots
from writing_rl.curriculum.scheduler import get_or_create_scheduler, scheduler_name

from conftest import compose_writing_rl, reward_loop
from judge_server import ScriptedJudgeServer
from waiting import wait_until

# Rollouts per id and step (the judge counts 'good' minus 'bad'; references: 0, 1 and 4 goods).
STEPS = {
    1: {0: ["a good story", "bad"], 1: ["a story", "bad"]},  # id 0 wins: level 1; id 1 ties
    2: {0: ["good good", "bad"], 1: ["a good story", "bad"]},  # both win: id 0 at 2, id 1 at 1
    3: {0: ["good good good good", "x"], 1: ["good good", "x"]},  # id 0 ties the hardest; id 1 wins
}
AFTER = {1: {"0": 1, "1": 0}, 2: {"0": 2, "1": 1}, 3: {"0": 2, "1": 2}}


def save_checkpoint(checkpoint_dir, step: int) -> None:
    """verl's _save_checkpoint: global_step_S/ first, the tracker file last."""
    (checkpoint_dir / f"global_step_{step}").mkdir(parents=True)
    (checkpoint_dir / "latest_checkpointed_iteration.txt").write_text(str(step))


def live_state() -> dict:
    return ray.get(ray.get_actor(scheduler_name()).snapshot.remote())


def test_checkpoints_a_killed_scheduler_and_a_resume_through_verls_reward_loop(
    ray_cluster, tokenizer_dir, tokenizer, tmp_path
):
    checkpoints = tmp_path / "ckpt"
    state_dir = checkpoints / "curriculum"  # the default: {trainer.default_local_dir}/curriculum
    assert wait_until(lambda: not scheduler_alive())  # another test's scheduler goes with its workers
    with ScriptedJudgeServer() as server:
        overrides = [
            "reward.num_workers=2",
            "actor_rollout_ref.rollout.n=2",
            "reward.reward_kwargs.groups.timeout_s=30",
            f"trainer.default_local_dir={checkpoints}",
        ]
        config = compose_writing_rl(tokenizer_dir, server.base_url, *overrides, per_sample=False)
        first_levels, sources = {}, {}
        with reward_loop(config) as manager:
            for step in (1, 2, 3):
                out = manager.compute_rm_score(step_batch(tokenizer, STEPS[step]))
                first_levels[step] = out.non_tensor_batch["curriculum/level"].tolist()
                live = live_state()
                assert live["levels"] == AFTER[step]
                sources[step] = live["source"]
                assert read_state(state_dir).table.as_dict() == AFTER[step]  # on disk when the step returned
                if step == 2:  # kill -9 right after a step that advanced both ids
                    scheduler = ray.get_actor(scheduler_name())
                    os.kill(ray.get(scheduler.__ray_call__.remote(lambda self: os.getpid())), signal.SIGKILL)
                save_checkpoint(checkpoints, step)
        # Step 3 ran on the restarted scheduler, which lost nothing (id 1 judged at the level step 2 gave
        # it), and its first request cut checkpoint 2 with the levels at the end of step 2.
        assert first_levels[3] == [2, 2, 1, 1] and "restarted within the run" in sources[3]
        snapshots = step_snapshots(state_dir)
        assert {step: load_levels(path).as_dict() for step, path in snapshots.items()} == {1: AFTER[1], 2: AFTER[2]}

        # verl resumes from checkpoint 2 (trainer.resume_mode=resume_path), after step 3 was run: the
        # levels at the end of step 2, exactly, and step 3 again judged as the first time.
        assert wait_until(lambda: not scheduler_alive())  # it went with the killed reward workers
        resume = ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={checkpoints}/global_step_2"]
        resumed = compose_writing_rl(tokenizer_dir, server.base_url, *overrides, *resume, per_sample=False)
        handle = get_or_create_scheduler(CurriculumConfig.from_verl(resumed).for_scheduler())
        try:
            assert ray.get(handle.snapshot.remote())["levels"] == AFTER[2]
            with reward_loop(resumed) as manager:
                again = manager.compute_rm_score(step_batch(tokenizer, STEPS[3]))
            assert again.non_tensor_batch["curriculum/level"].tolist() == first_levels[3]
            assert ray.get(handle.snapshot.remote())["levels"] == AFTER[3]
        finally:
            ray.kill(handle)
