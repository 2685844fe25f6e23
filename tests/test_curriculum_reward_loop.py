"""Integration: hydra_configs/writing_rl.yaml as shipped (curriculum on, no extra step) through verl's
RewardLoopManager: levels advance across steps, the judge sees the harder reference, snapshots land."""

import time
import uuid

from conftest import compose_writing_rl, reward_loop
from writing_rl.batch import build_reward_batch
from writing_rl.curriculum import LATEST, load_levels

REFS = ["easy reference", "medium good reference", "hard good good good reference"]


def step_batch(tokenizer, responses_by_id):
    rows, texts, uids = [], [], []
    for row_id, responses in responses_by_id.items():
        uid = str(uuid.uuid4())
        for text in responses:
            rows.append(
                {
                    "data_source": "writing",
                    "prompt": [{"role": "user", "content": "Write a story."}],
                    "reward_model": {"ground_truth": {"prompt": "Write a story.", "target": REFS, "criteria": None, "id": row_id}},
                    "extra_info": {"index": row_id, "split": "train"},
                }
            )
            texts.append(text)
            uids.append(uid)
    return build_reward_batch(tokenizer, rows, texts, uids)


def test_levels_advance_between_steps_through_verls_reward_loop(ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path):
    server = judge_server()
    state_dir = tmp_path / "curriculum"
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "actor_rollout_ref.rollout.n=2",
        f"reward.reward_kwargs.curriculum.state_dir={state_dir}",
        "reward.reward_kwargs.curriculum.snapshot_interval_s=0.1",
        f"trainer.default_local_dir={tmp_path / 'ckpt'}",
        per_sample=False,
    )
    with reward_loop(config) as manager:
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
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if (state_dir / LATEST).exists() and load_levels(state_dir / LATEST).level("0") == 2:
                break
            time.sleep(0.2)
    assert load_levels(state_dir / LATEST).as_dict() == {"0": 2, "1": 0}
