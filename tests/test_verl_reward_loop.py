"""Integration: hydra_configs/writing_rl.yaml through verl's real RewardLoopManager on a local Ray."""

import random

import pytest
import ray
import torch

from writing_rl.reward_loop.batch import build_reward_batch

from conftest import compose_writing_rl, reward_loop, writing_row
from judge_server import Reply

RESPONSES = ["good good story", "a bad story", "<think>still thinking", "plain story", "good story"]


def test_validate_config_accepts_the_overlay(tokenizer_dir):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = compose_writing_rl(tokenizer_dir, "http://127.0.0.1:9/v1")
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))


def test_compute_rm_score_with_padding_over_two_workers(ray_cluster, judge_server, tokenizer_dir, tokenizer):
    server = judge_server()
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "reward.custom_reward_function.reward_kwargs.strategy=both",
    )
    # 5 samples over 2 workers: verl pads the batch to 6 by repeating the first sample.
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(5)], RESPONSES)
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)

    rewards = output.batch["rm_scores"].sum(dim=-1).tolist()
    assert rewards == [1.0, 0.0, 0.0, 0.5, 1.0]
    # verl puts the reward on the last valid response token.
    response_mask = batch.batch["attention_mask"][:, batch.batch["prompts"].shape[1] :]
    last = response_mask.sum(dim=1) - 1
    for i, value in enumerate(rewards):
        assert output.batch["rm_scores"][i, last[i]].item() == value
        assert torch.count_nonzero(output.batch["rm_scores"][i]).item() == (1 if value else 0)

    extra = output.non_tensor_batch
    assert set(output.meta_info["reward_extra_keys"]) == {
        "win",
        "tie",
        "loss",
        "parse_error",
        "judge_truncated",
        "judge_refusal",
        "format_error",
        "position_consistent",
        "curriculum/level",
        "judge_error",
        "judge_latency_s",
        "judge_calls",
        "judge_rate_limited",
        "judge_retries",
        "judge_tokens",
        "judge_prompt_tokens",
        "judge_completion_tokens",
        "judge_tokens_estimated",
        "judge_cost",
        "judge_concurrency_limit",
        "judge_hedges",
    }
    assert extra["format_error"].tolist() == [0, 0, 1, 0, 0]
    assert extra["position_consistent"].tolist() == [1, 1, -1, 1, 1]
    assert extra["judge_calls"].tolist() == [2, 2, 0, 2, 2]
    assert extra["win"].dtype.kind == "f" and extra["judge_error"].dtype.kind == "i"
    # 4 judged samples x 2 orders, plus the padded copy of sample 0 (2 more calls).
    assert len(server.requests) == 10


def test_by_default_a_judge_outage_pays_counted_losses_and_the_step_goes_on(
    ray_cluster, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server(script=lambda body, i: Reply(status=500, body=b"engine dead"))
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.num_workers=2", "reward.reward_kwargs.judge.max_retries=1"
    )
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(4)], ["good", "good good", "x", "bad"])
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == [0.0] * 4  # a loss each, never the tie
    assert output.non_tensor_batch["judge_error"].tolist() == [1] * 4
    assert output.non_tensor_batch["judge_calls"].tolist() == [1] * 4  # one call each, after 2 attempts


def test_judge_outage_fails_the_step_naming_the_endpoint_when_asked(
    ray_cluster, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server(script=lambda body, i: Reply(status=500, body=b"engine dead"))
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "reward.reward_kwargs.judge.max_retries=1",
        "reward.reward_kwargs.on_judge_error=raise",
    )
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(2)], ["one", "two"])
    with reward_loop(config) as manager, pytest.raises(ray.exceptions.RayTaskError) as info:
        manager.compute_rm_score(batch)
    assert "JudgeFailure" in str(info.value) and server.base_url in str(info.value)
    assert "HTTP 500" in str(info.value)


def test_neutral_policy_marks_every_failed_sample(ray_cluster, judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=lambda body, i: Reply(status=500, body=b"engine dead"))
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "reward.reward_kwargs.judge.max_retries=0",
        "reward.reward_kwargs.on_judge_error=neutral",
    )
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(4)], ["a", "b", "c", "d"])
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == [0.5] * 4
    assert output.non_tensor_batch["judge_error"].tolist() == [1] * 4


def test_total_concurrency_holds_across_workers(ray_cluster, judge_server, tokenizer_dir, tokenizer):
    # The first 4 requests are held until all 4 are in flight, however late the second worker starts.
    server = judge_server(latency_s=0.02, hold_until_in_flight=4)
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.num_workers=2", "reward.reward_kwargs.judge.max_concurrency=4"
    )
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(24)], ["good"] * 24)
    with reward_loop(config) as manager:
        manager.compute_rm_score(batch)
    assert len(server.requests) == 24
    assert server.max_in_flight == 4  # 2 per worker, both workers busy at once, never more


def test_streaming_mode_per_sample_calls_in_random_order(ray_cluster, judge_server, tokenizer_dir, tokenizer):
    """As verl's agent loop does without a colocated reward model: each finished rollout goes to a random
    worker's compute_score on its own, concurrently with the others."""
    server = judge_server(latency_s=0.02)
    config = compose_writing_rl(tokenizer_dir, server.base_url, "reward.num_workers=2")
    responses = ["good", "bad", "plain story", "good good", "bad bad", "<think>"] * 2
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(len(responses))], responses)
    order = list(range(len(batch)))
    random.Random(3).shuffle(order)
    with reward_loop(config) as manager:
        rng = random.Random(4)
        refs = {i: rng.choice(manager.reward_loop_workers).compute_score.remote(batch[i : i + 1]) for i in order}
        results = {i: ray.get(ref) for i, ref in refs.items()}
    expected = {"good": 1.0, "good good": 1.0, "bad": 0.0, "bad bad": 0.0, "plain story": 0.5, "<think>": 0.0}
    for i, text in enumerate(responses):
        assert results[i]["reward_score"] == expected[text], text
    assert len({frozenset(r["reward_extra_info"]) for r in results.values()}) == 1
