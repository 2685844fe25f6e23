"""Integration: hydra_configs/writing_rl.yaml as shipped (curriculum on, no extra step) through verl's
RewardLoopManager: levels advance across steps, the judge sees the harder reference, and every advance
is on disk (snapshot + write-ahead log) by the time its step's rewards return."""

import uuid

import pytest
import ray

from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.reward_loop.curriculum import scheduler_name
from writing_rl.reward_loop.curriculum_log import read_state

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
            "reward.reward_kwargs.groups.on_incomplete=score",  # late members (below) follow a partial group
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
    assert first.non_tensor_batch["reference_level"].tolist() == [0, 0, 0, 0]
    assert first.batch["rm_scores"].sum(-1).tolist() == [1.0, 0.0, 0.5, 0.0]
    calls_before = len(server.requests)
    # Step 2: id 0 is now judged against the medium reference; id 1 still against the easy one.
    second = manager.compute_rm_score(step_batch(tokenizer, {0: ["a good story", "good good good"], 1: ["x", "y"]}))
    assert second.non_tensor_batch["reference_level"].tolist() == [1, 1, 0, 0]
    asked = [r["messages"][-1]["content"] for r in server.requests[calls_before:]]
    assert sum("medium good reference" in q for q in asked) == 2 and sum("easy reference" in q for q in asked) == 2
    assert second.batch["rm_scores"].sum(-1).tolist() == [0.5, 1.0, 0.5, 0.5]
    # Durable before the rewards returned: no wait.
    assert read_state(state_dir).table.as_dict() == {"0": 2, "1": 0}


def test_a_late_member_never_moves_its_ids_level_a_second_time(loop, tokenizer):
    # One rollout of a 2-rollout group arrives: after groups.timeout_s it is scored as a partial group,
    # wins and moves id 9 up one level. Its sibling then arrives late and is scored on its own; it wins
    # too, but its group has had its step (before: the level moved twice for one group).
    manager, _, state_dir = loop
    worker = manager.reward_loop_workers[0]
    uid = str(uuid.uuid4())
    first = ray.get(worker.compute_score.remote(step_batch(tokenizer, {9: ["a good story"]}, uid=uid)[0:1]))
    assert first["reward_extra_info"]["partial_group"] == 1 and first["reward_score"] == 1.0
    late = ray.get(worker.compute_score.remote(step_batch(tokenizer, {9: ["good good good good"]}, uid=uid)[0:1]))
    assert late["reward_extra_info"]["late_member"] == 1 and late["reward_score"] == 1.0
    # The scheduler's live table: a second (wrong) advance would be there before `late` returned.
    scheduler = ray.get_actor(scheduler_name())
    assert ray.get(scheduler.snapshot.remote())["levels"]["9"] == 1
    assert read_state(state_dir).table.level("9") == 1
