"""Integration: a judge ensemble through hydra_configs/writing_rl.yaml and verl's real RewardLoopManager."""

from writing_rl.reward_loop.batch import build_reward_batch

from conftest import compose_writing_rl, reward_loop, writing_row
from judge_server import Reply, default_script

RESPONSES = ["good good story", "a bad story", "<think>still thinking", "plain story", "good story"]
PREFERENCE_REWARDS = [1.0, 0.0, 0.0, 0.5, 1.0]  # what one judge preferring 'good' over 'bad' pays


def two_agree_one_favours_a(request: dict, index: int) -> Reply:
    """Judges fair-1 and fair-2 prefer the better response; biased always answers [[A]]."""
    if request["model"] == "biased":
        return Reply(content="The first is better.\n[[A]]")
    return default_script(request, index)


def test_an_ensemble_decides_by_majority_inside_verls_reward_loop(ray_cluster, judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=two_agree_one_favours_a)
    members = "[{name: fair1, model: fair-1}, {name: fair2, model: fair-2}, {name: biased, model: biased}]"
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "reward.custom_reward_function.reward_kwargs.strategy=both",
        f"reward.reward_kwargs.judge.ensemble.members={members}",
    )
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(5)], RESPONSES)
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)

    assert output.batch["rm_scores"].sum(dim=-1).tolist() == PREFERENCE_REWARDS  # the biased judge is outvoted
    extra = output.non_tensor_batch
    judged = [i for i, text in enumerate(RESPONSES) if not text.startswith("<think>")]
    assert [extra["judge_calls"][i] for i in judged] == [2 * 3] * len(judged)  # 2 orders x 3 judges
    assert all(extra["judge/ensemble/biased/calls_total"][i] == 2 for i in judged)
    # The biased judge agrees with the others in one order of each comparison at most.
    assert all(extra["judge/ensemble/agreement"][i] < 1.0 for i in judged)
    assert extra["judge_error"].tolist() == [0] * len(RESPONSES)
