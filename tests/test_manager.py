"""ParallelRewardManager loaded by verl's own loader (load_reward_manager), driven in-process."""

import asyncio
import logging

import pytest
from omegaconf import open_dict

from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.reward_loop.failure_guard import FailureRateExceeded
from writing_rl.reward_loop.health.batch_summary import BatchSummary
from writing_rl.reward_loop.manager import JudgeFailure, ParallelRewardManager
from writing_rl.settings import ConfigError

from conftest import compose_writing_rl, writing_row
from judge_server import Reply

EXTRA_KEYS = {
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


def load_manager(config, tokenizer, **kwargs):
    from verl.trainer.ppo.reward import load_reward_manager

    manager = load_reward_manager(config, tokenizer, **kwargs)
    assert isinstance(manager, ParallelRewardManager)
    return manager


def score_all(manager, batch):
    async def go():
        outputs = await asyncio.gather(*(manager.run_single(batch[i : i + 1]) for i in range(len(batch))))
        await manager.scoring.judge.close()
        return outputs

    return asyncio.run(go())


def test_scores_and_uniform_numeric_extra_info(judge_server, tokenizer_dir, tokenizer):
    server = judge_server()
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.custom_reward_function.reward_kwargs.strategy=both"
    )
    manager = load_manager(config, tokenizer)
    responses = ["a good good story", "a bad story", "<think>unfinished", "a plain story"]
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(4)], responses)
    outputs = score_all(manager, batch)
    assert [o["reward_score"] for o in outputs] == [1.0, 0.0, 0.0, 0.5]
    for output in outputs:
        info = output["reward_extra_info"]
        assert set(info) == EXTRA_KEYS
        assert all(isinstance(v, (int, float)) for v in info.values())
        assert "judge_transcripts" not in output
    assert [o["reward_extra_info"]["judge_calls"] for o in outputs] == [2, 2, 0, 2]
    assert outputs[2]["reward_extra_info"]["format_error"] == 1
    assert outputs[0]["reward_extra_info"]["judge_latency_s"] > 0
    assert len(server.requests) == 6


def test_judge_failure_with_raise_policy_stops_with_endpoint_and_cause(judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=lambda body, i: Reply(status=500, body=b"model crashed"))
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.reward_kwargs.judge.max_retries=1",
        "reward.reward_kwargs.on_judge_error=raise",
    )
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(0)], ["an answer"])
    with pytest.raises(JudgeFailure) as info:
        score_all(manager, batch)
    message = str(info.value)
    assert server.base_url in message and "HTTP 500" in message and "model crashed" in message
    assert "on_judge_error" in message
    assert len(server.requests) == 2


def test_judge_failure_with_neutral_policy_is_flagged_not_silent(judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=lambda body, i: Reply(status=503, body=b"down"))
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.reward_kwargs.on_judge_error=neutral",
        "reward.reward_kwargs.judge.max_retries=0",
        "reward.custom_reward_function.reward_kwargs.neutral_reward=0.3",
    )
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(0), writing_row(1)], ["one", "<think>no answer"])
    first, second = score_all(manager, batch)
    assert first["reward_score"] == pytest.approx(0.3) and first["reward_extra_info"]["judge_error"] == 1
    assert first["reward_extra_info"]["judge_calls"] == 1
    # A format error never reaches the judge, so it is not a judge error.
    assert second["reward_score"] == 0.0 and second["reward_extra_info"]["judge_error"] == 0
    assert set(first["reward_extra_info"]) == set(second["reward_extra_info"])


def test_transcripts_are_returned_only_when_asked(judge_server, tokenizer_dir, tokenizer):
    server = judge_server()
    config = compose_writing_rl(tokenizer_dir, server.base_url, "reward.reward_kwargs.keep_transcripts=true")
    (output,) = score_all(load_manager(config, tokenizer), build_reward_batch(tokenizer, [writing_row(0)], ["good"]))
    (call,) = output["judge_transcripts"]
    assert "[Response B]\n```\ngood" in call["messages"][-1]["content"]
    assert call["reply"].endswith("[[B]]") and call["error"] is None


def test_concurrency_is_a_share_of_the_run_total(judge_server, tokenizer_dir, tokenizer):
    server = judge_server()
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.num_workers=4", "reward.reward_kwargs.judge.max_concurrency=10"
    )
    assert load_manager(config, tokenizer).scoring.judge.concurrency == 2  # 4 workers x 2 <= 10
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.num_workers=8", "reward.reward_kwargs.judge.max_concurrency=4"
    )
    with pytest.raises(ConfigError, match=r"max_concurrency \(4\) is below reward.num_workers \(8\)"):
        load_manager(config, tokenizer)


def test_genrm_hosted_by_verl_is_the_default_judge(tokenizer_dir, tokenizer):
    from writing_rl.offline.compose import compose

    config = compose(
        "writing_rl",
        [f"actor_rollout_ref.model.path={tokenizer_dir}", "reward.reward_model.model_path=/models/my-genrm"],
    )
    manager = ParallelRewardManager(config, tokenizer, compute_score=None, reward_router_address="10.0.0.5:3456")
    assert manager.scoring.judge.url == "http://10.0.0.5:3456/v1/chat/completions"
    assert manager.scoring.judge.config.model == "/models/my-genrm"


def test_requires_a_reward_fn(tokenizer_dir, tokenizer, judge_server):
    config = compose_writing_rl(tokenizer_dir, judge_server().base_url)
    with open_dict(config):
        config.reward.custom_reward_function.path = None
    with pytest.raises(ConfigError, match="custom_reward_function.path"):
        ParallelRewardManager(config, tokenizer, compute_score=None)


def test_unknown_manager_setting_is_named(tokenizer_dir, tokenizer, judge_server):
    config = compose_writing_rl(tokenizer_dir, judge_server().base_url, "+reward.reward_kwargs.on_judge_eror=neutral")
    with pytest.raises(ConfigError, match="on_judge_eror"):
        load_manager(config, tokenizer)


def _custom_fn_config(tmp_path, tokenizer_dir, base_url, body):
    path = tmp_path / "my_reward.py"
    path.write_text(body)
    return compose_writing_rl(
        tokenizer_dir,
        base_url,
        f"reward.custom_reward_function.path={path}",
        "~reward.custom_reward_function.reward_kwargs",
        "reward.reward_kwargs.failure_score=0.0",  # a module with no METHOD declares no loss
    )


def test_non_numeric_extra_info_is_rejected(tmp_path, tokenizer_dir, tokenizer, judge_server):
    body = (
        "async def compute_score(data_source, solution_str, ground_truth, extra_info, judge):\n"
        "    return {'score': 1.0, 'verdict': 'A'}\n"
    )
    manager = load_manager(_custom_fn_config(tmp_path, tokenizer_dir, judge_server().base_url, body), tokenizer)
    with pytest.raises(TypeError, match="verdict='A'"):
        score_all(manager, build_reward_batch(tokenizer, [writing_row(0)], ["x"]))


def test_changing_extra_info_keys_are_rejected(tmp_path, tokenizer_dir, tokenizer, judge_server):
    body = (
        "async def compute_score(data_source, solution_str, ground_truth, extra_info, judge):\n"
        "    return {'score': 1.0, ('long' if len(solution_str) > 3 else 'short'): 1}\n"
    )
    manager = load_manager(_custom_fn_config(tmp_path, tokenizer_dir, judge_server().base_url, body), tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(0), writing_row(1)], ["ab", "abcdef"])
    with pytest.raises(ValueError, match="same keys for every sample"):
        asyncio.run(_one_by_one(manager, batch))


async def _one_by_one(manager, batch):
    for i in range(len(batch)):
        await manager.run_single(batch[i : i + 1])


def test_a_fn_returning_a_plain_float_gets_default_keys(tmp_path, tokenizer_dir, tokenizer, judge_server):
    body = "def compute_score(data_source, solution_str, ground_truth, extra_info, judge):\n    return 0.25\n"
    manager = load_manager(_custom_fn_config(tmp_path, tokenizer_dir, judge_server().base_url, body), tokenizer)
    (output,) = score_all(manager, build_reward_batch(tokenizer, [writing_row(0)], ["x"]))
    assert output["reward_score"] == 0.25
    assert output["reward_extra_info"] == {
        "parse_error": 0,
        "judge_truncated": 0,
        "judge_refusal": 0,
        "format_error": 0,
        "judge_error": 0,
        "judge_latency_s": 0.0,
        "judge_calls": 0,
        "judge_rate_limited": 0,
        "judge_retries": 0,
        "judge_tokens": 0,
        "judge_prompt_tokens": 0,
        "judge_completion_tokens": 0,
        "judge_tokens_estimated": 0,
        "judge_cost": 0.0,
        "judge_concurrency_limit": 8,  # no call: the worker's limit now (64 over 8 workers)
        "judge_hedges": 0,
    }


def test_missing_ground_truth_field_explains_the_verl_mode(judge_server, tokenizer_dir, tokenizer):
    config = compose_writing_rl(tokenizer_dir, judge_server().base_url)
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(0)], ["x"])
    batch.non_tensor_batch.pop("reward_model")
    with pytest.raises(RuntimeError, match="trainer.use_v1=false"):
        score_all(manager, batch)


def test_one_summary_line_per_batch(judge_server, tokenizer_dir, tokenizer):
    server = judge_server()
    config = compose_writing_rl(tokenizer_dir, server.base_url, "reward.reward_kwargs.summary_idle_s=0.05")
    manager = load_manager(config, tokenizer)
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger("writing_rl").addHandler(handler)
    try:
        batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(3)], ["good", "bad", "<think>"])

        async def two_batches():
            for _ in range(2):
                await asyncio.gather(*(manager.run_single(batch[i : i + 1]) for i in range(3)))
                await asyncio.sleep(0.2)
            await manager.scoring.judge.close()

        asyncio.run(two_batches())
    finally:
        logging.getLogger("writing_rl").removeHandler(handler)
    assert len(lines) == 2
    assert lines[0].startswith("3 samples | reward 0.333 | win 0.33 tie 0.00 loss 0.67")
    assert "format_error 1" in lines[0] and "judge 2 calls" in lines[0]


def test_batch_summary_counts_retries_per_batch():
    class Stats:
        retries = 0
        rate_limited = 0
        concurrency_limit = 32

    class Judge:
        stats = Stats()

    summary = BatchSummary(Judge())
    summary.add(1.0, {"win": 1.0, "tie": 0.0, "loss": 0.0, "judge_error": 0, "parse_error": 1}, [0.1, 0.3])
    Judge.stats.retries, Judge.stats.rate_limited = 3, 5
    line = summary.flush()
    assert line == (
        "1 samples | reward 1.000 | win 1.00 tie 0.00 loss 0.00 | judge_error 0 parse_error 1 judge_truncated 0 judge_refusal 0 format_error 0 group_incomplete 0 "
        "| judge 2 calls p50 0.20s p95 0.29s retries 3 429s 5 limit 32"
    )
    summary.add(0.0, {}, [])
    Judge.stats.concurrency_limit = 24
    assert summary.flush().endswith("judge 0 calls retries 0 429s 0 limit 24")


def test_nothing_accumulates_when_the_summary_is_off(judge_server, tokenizer_dir, tokenizer):
    # Before: every sample's score and judge latencies piled up in the unflushed summary for the whole run.
    server = judge_server()
    config = compose_writing_rl(tokenizer_dir, server.base_url, "reward.reward_kwargs.log_summary=false")
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(3)], ["good", "bad", "plain"])
    for _ in range(2):
        score_all(manager, batch)
    assert manager.scoring.summary.count == 0 and manager.scoring.summary.latencies == []


def test_reasoning_tags_survive_decoding_when_the_tokenizer_marks_them_special(tmp_path, judge_server):
    from transformers import AutoTokenizer

    from tiny import build_tiny_tokenizer

    tokenizer_dir = build_tiny_tokenizer(tmp_path / "tok", ["plan the story then write it"] * 20)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    tokenizer.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    tokenizer.save_pretrained(str(tokenizer_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    assert "</think>" in tokenizer.all_special_tokens
    server = judge_server()
    manager = load_manager(
        compose_writing_rl(tokenizer_dir, server.base_url, "reward.reward_kwargs.keep_transcripts=true"), tokenizer
    )
    batch = build_reward_batch(tokenizer, [writing_row(0)], ["<think>a bad plan</think>a good story"])
    (output,) = score_all(manager, batch)
    asked = output["judge_transcripts"][0]["messages"][-1]["content"]
    assert "[Response B]\n```\na good story" in asked and "bad plan" not in asked and "<|im_end|>" not in asked
    assert output["reward_score"] == 1.0


def test_a_worker_that_is_never_idle_still_logs(monkeypatch, judge_server, tokenizer_dir, tokenizer):
    import writing_rl.reward_loop.health.batch_summary as summary

    monkeypatch.setattr(summary, "MAX_BATCH_S", 0.0)
    server = judge_server()
    manager = load_manager(
        compose_writing_rl(tokenizer_dir, server.base_url, "reward.reward_kwargs.summary_idle_s=60"), tokenizer
    )
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger("writing_rl").addHandler(handler)
    try:
        score_all(manager, build_reward_batch(tokenizer, [writing_row(i) for i in range(3)], ["good", "bad", "x"]))
    finally:
        logging.getLogger("writing_rl").removeHandler(handler)
    assert len(lines) == 3 and all(line.startswith("1 samples") for line in lines)


def test_the_guard_stops_a_batch_of_unreadable_replies_with_an_example(judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=lambda body, i: Reply(content="Both have merits; I will not choose."))
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.reward_kwargs.max_parse_error_rate=0.5",
        "reward.reward_kwargs.failure_min_samples=3",
    )
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(4)], ["one", "two", "three", "four"])
    with pytest.raises(FailureRateExceeded) as info:
        score_all(manager, batch)
    message = str(info.value)
    assert "3 of the last 3 samples this reward worker scored (100%)" in message
    assert "I will not choose" in message and "check the judge model, its template" in message


def _method_from_the_docs(tmp_path):
    """The whole reward method docs/methods/your-own.md shows, as a user would save it."""
    from conftest import REPO_DIR

    page = (REPO_DIR / "docs" / "methods" / "your-own.md").read_text(encoding="utf-8")
    path = tmp_path / "my_reward.py"
    path.write_text(page.split("```python\n", 1)[1].split("```", 1)[0])
    return path


def test_the_reward_method_the_docs_show_runs_under_verls_loader(tmp_path, judge_server, tokenizer_dir, tokenizer):
    from writing_rl.tools.preflight.config_checks import check_config

    def rate(request: dict, index: int) -> Reply:
        response = request["messages"][-1]["content"].split("[Response]")[1]
        return Reply(content='Fine work. {"score": 8}' if "good" in response else "I cannot rate this.")

    server = judge_server(script=rate)
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        f"reward.custom_reward_function.path={_method_from_the_docs(tmp_path)}",
        "~reward.custom_reward_function.reward_kwargs",
        "+reward.custom_reward_function.reward_kwargs.loss=0.1",
    )
    assert "a failed sample is paid 0.1 (the method's loss)" in check_config(config)
    manager = load_manager(config, tokenizer)
    assert manager.scoring.failure.loss == 0.1
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(3)], ["a good story", "a story", "<think>x"])
    outputs = score_all(manager, batch)
    assert [o["reward_score"] for o in outputs] == [0.8, 0.1, 0.1]
    assert [o["reward_extra_info"]["parse_error"] for o in outputs] == [0, 1, 0]
    assert [o["reward_extra_info"]["format_error"] for o in outputs] == [0, 0, 1]


def test_a_fn_with_no_registered_method_needs_a_failure_score(tmp_path, tokenizer_dir, tokenizer, judge_server):
    from writing_rl.tools.preflight.config_checks import check_config

    body = "async def compute_score(data_source, solution_str, ground_truth, extra_info, judge):\n    return 1.0\n"
    path = tmp_path / "my_reward.py"
    path.write_text(body)
    url = judge_server().base_url
    config = compose_writing_rl(
        tokenizer_dir, url, f"reward.custom_reward_function.path={path}", "~reward.custom_reward_function.reward_kwargs"
    )
    expected = "no reward method is registered for it, so what a failed sample is paid is unknown"
    with pytest.raises(ConfigError, match=expected):
        check_config(config)
    with pytest.raises(ConfigError, match=expected):
        load_manager(config, tokenizer)
    with open_dict(config):
        config.reward.reward_kwargs.failure_score = -1.0
    assert "a failed sample is paid -1 (reward.reward_kwargs.failure_score)" in check_config(config)
    assert load_manager(config, tokenizer).scoring.failure.loss == -1.0
