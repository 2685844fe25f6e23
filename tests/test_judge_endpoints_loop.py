"""judge.base_url as a list through verl's real RewardLoopManager (one judge killed while scoring), and the
tools that read base_url (preflight, check-config) with a list."""

import threading

import pandas as pd

from writing_rl.offline.compose import compose
from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.tools.preflight.runner import run_preflight

from conftest import compose_writing_rl, reward_loop, writing_row
from waiting import wait_until


def test_two_endpoints_one_killed_while_verl_scores_no_sample_fails(
    ray_cluster, judge_server, tokenizer_dir, tokenizer
):
    first, second = judge_server(latency_s=0.05), judge_server(latency_s=0.05)
    config = compose_writing_rl(
        tokenizer_dir,
        f"[{first.base_url},{second.base_url}]",
        "reward.num_workers=2",
        "reward.reward_kwargs.judge.max_concurrency=8",
        "reward.reward_kwargs.judge.endpoint_cooldown_s=600",
    )
    responses = ["good good story", "a bad story", "plain story", "good story"] * 12
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(len(responses))], responses)
    killed = threading.Event()

    def kill_once_busy():
        if wait_until(lambda: len(first.requests) >= 6):
            first.kill()
            killed.set()

    killer = threading.Thread(target=kill_once_busy)
    killer.start()
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    killer.join()

    assert killed.is_set()
    extra = output.non_tensor_batch
    assert extra["judge_error"].tolist() == [0] * len(responses)
    # per-sample Writing-RL against the reference "a plain story": good wins, bad loses, plain ties
    expected = {"good good story": 1.0, "a bad story": 0.0, "plain story": 0.5, "good story": 1.0}
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == [expected[r] for r in responses]
    assert len(second.requests) > 0 and extra["judge_retries"].sum() >= 1
    assert set(extra["judge_concurrency_limit"].tolist()) <= {1, 2, 3, 4}  # each worker's share of 8 is 4
    assert extra["judge_tokens"].tolist() == [2 * calls for calls in extra["judge_calls"].tolist()]


def test_a_list_base_url_reads_from_hydra_and_the_router_fills_an_unset_one(tokenizer_dir):
    urls = ["http://judge-a:8000/v1", "http://judge-b:8000/v1"]
    config = compose_writing_rl(tokenizer_dir, f"[{urls[0]},{urls[1]}]")
    assert ManagerConfig.from_verl(config).judge.endpoints == tuple(urls)
    hosted = compose(
        "writing_rl", [f"actor_rollout_ref.model.path={tokenizer_dir}", "reward.reward_model.model_path=/m"]
    )
    assert ManagerConfig.from_verl(hosted, "10.0.0.5:3456").judge.endpoints == ("http://10.0.0.5:3456/v1",)


def test_preflight_pings_every_endpoint_and_takes_the_smallest_context(tmp_path, tokenizer_dir, judge_server):
    big = judge_server(models={"scripted-judge": 100_000})
    small = judge_server(models={"scripted-judge": 50_000})
    other = judge_server(models={"another-judge": None})
    rows = [writing_row(i) for i in range(4)]
    pd.DataFrame(rows).to_parquet(tmp_path / "train.parquet")
    config = compose_writing_rl(
        tokenizer_dir,
        f"[{big.base_url},{small.base_url},{other.base_url}]",
        f"data.train_files={tmp_path / 'train.parquet'}",
        f"data.val_files={tmp_path / 'train.parquet'}",
    )
    report = run_preflight(config)
    text = "\n".join(report.lines)
    assert f"judge {big.base_url} serves 'scripted-judge', context 100000 tokens" in text
    assert f"judge {small.base_url} serves 'scripted-judge', context 50000 tokens" in text
    assert "<= the judge's context 50000" in text
    (problem,) = [p for p in report.problems if other.base_url in p]
    assert "serves another-judge, not 'scripted-judge'" in problem
