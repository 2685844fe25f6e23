"""Integration: hydra_configs/writing_rl.yaml as shipped (curriculum on, no extra step) through verl's
RewardLoopManager: levels advance across steps, the judge sees the harder reference, and every advance
is on disk (snapshot + write-ahead log) by the time its step's rewards return."""

import uuid

import pytest
import ray

from writing_rl.curriculum.log import read_state
from writing_rl.curriculum.scheduler import scheduler_name
from writing_rl.reward_loop.batch import build_reward_batch

from conftest import compose_writing_rl, reward_loop
from judge_server import ScriptedJudgeServer

REFS = ["easy reference", "medium good reference", "hard good good good reference"]


def step_batch(tokenizer, responses_by_id, uid=None):
    """One group per id (a new uid each, unless ``uid`` is given for a one-id batch)."""
    rows, texts, uids = [], [], []
    for row_id, responses in responses_by_id.items():
        group_uid = uid or str(uuid.uuid4())
        for text in responses:
            rows.append(
                {
                    "data_source": "writing",
                    "prompt": [{"role": "user", "content": "Write a story."}],
                    "reward_model": {
                        "ground_truth": {"prompt": "Write a story.", "target": REFS, "criteria": None, "id": row_id}
                    },
                    "extra_info": {"index": row_id, "split": "train"},
                }
            )
            texts.append(text)
            uids.append(group_uid)
    return build_reward_batch(tokenizer, rows, texts, uids)


@pytest.fixture(scope="module")
def loop(ray_cluster, tokenizer_dir, tmp_path_factory):
    """(verl's RewardLoopManager, the judge, the state dir)."""
    tmp_path = tmp_path_factory.mktemp("curriculum_loop")
    state_dir = tmp_path / "curriculum"
    with ScriptedJudgeServer() as server:
        config = compose_writing_rl(
            tokenizer_dir,
            server.base_url,
            "reward.num_workers=2",
            "actor_rollout_ref.rollout.n=2",
            "reward.reward_kwargs.groups.timeout_s=5",
            f"reward.reward_kwargs.curriculum.state_dir={state_dir}",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}",
            per_sample=False,
        )
        with reward_loop(config) as manager:
            yield manager, server, state_dir


def test_levels_advance_between_steps_through_verls_reward_loop(loop, tokenizer):
    manager, server, state_dir = loop
    # Step 1: id 0 has a winner, id 1 does not (a tie and a loss against the easy reference).
    first = manager.compute_rm_score(step_batch(tokenizer, {0: ["a good story", "a bad story"], 1: ["a story", "bad"]}))
    assert first.non_tensor_batch["curriculum/level"].tolist() == [0, 0, 0, 0]
    assert first.batch["rm_scores"].sum(-1).tolist() == [1.0, 0.0, 0.5, 0.0]
    calls_before = len(server.requests)
    # Step 2: id 0 is now judged against the medium reference; id 1 still against the easy one.
    second = manager.compute_rm_score(step_batch(tokenizer, {0: ["a good story", "good good good"], 1: ["x", "y"]}))
    assert second.non_tensor_batch["curriculum/level"].tolist() == [1, 1, 0, 0]
    asked = [r["messages"][-1]["content"] for r in server.requests[calls_before:]]
    assert sum("medium good reference" in q for q in asked) == 2 and sum("easy reference" in q for q in asked) == 2
    assert second.batch["rm_scores"].sum(-1).tolist() == [0.5, 1.0, 0.5, 0.5]
    # Durable before the rewards returned: no wait.
    assert read_state(state_dir).table.as_dict() == {"0": 2, "1": 0}


def test_rollouts_are_judged_as_they_arrive_and_the_last_one_moves_the_level_once(loop, tokenizer):
    # A 2-rollout group whose rollouts arrive one at a time: the first is judged at once (no waiting for
    # its sibling) and moves nothing; the second, its group complete, moves id 9 up one level, durably
    # before it returns; a third arrival under the same uid is judged at the group's pinned level and
    # never moves it a second time.
    manager, _, state_dir = loop
    worker = manager.reward_loop_workers[0]
    uid = str(uuid.uuid4())
    scheduler = ray.get_actor(scheduler_name())

    def one(text):
        return ray.get(worker.compute_score.remote(step_batch(tokenizer, {9: [text]}, uid=uid)[0:1]))

    first = one("a good story")
    assert first["reward_score"] == 1.0 and first["reward_extra_info"]["curriculum/level"] == 0
    assert ray.get(scheduler.snapshot.remote())["levels"]["9"] == 0
    second = one("a bad story")
    assert second["reward_score"] == 0.0 and second["reward_extra_info"]["curriculum/level"] == 0
    assert read_state(state_dir).table.level("9") == 1  # on disk when the group's last reward returned
    third = one("good good good good")
    assert third["reward_score"] == 1.0 and third["reward_extra_info"]["curriculum/level"] == 0
    assert ray.get(scheduler.snapshot.remote())["levels"]["9"] == 1
    assert read_state(state_dir).table.level("9") == 1
