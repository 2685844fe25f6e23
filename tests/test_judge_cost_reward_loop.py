"""Cost accounting through verl's own reward loop: the tokens and cost in the samples' extra info add up to
what the scripted judge reported, the step's metrics and `writing-rl monitor` show them, group calls are
counted once, calls whose endpoint reports no usage are counted as estimated, and a budget stops the run
with no call beyond it reaching the judge."""

import json
import uuid

import pytest
import ray
from verl_streaming import stream

from writing_rl.offline.compose import compose
from writing_rl.reward_loop.batch import build_reward_batch, streaming_samples
from writing_rl.reward_loop.health.metrics import judge_health, rows_from_columns
from writing_rl.tools.monitor import monitor, table

from conftest import compose_writing_rl, reward_loop, writing_row
from judge_server import Reply, default_script, words_usage

PROMPT_PER_MTOK, COMPLETION_PER_MTOK = 3.0, 15.0
PRICED = [
    f"reward.reward_kwargs.judge.price.prompt_per_mtok={PROMPT_PER_MTOK}",
    f"reward.reward_kwargs.judge.price.completion_per_mtok={COMPLETION_PER_MTOK}",
]
STORIES = ["a good story", "a bad story", "a plain story", "good good story", "bad bad story", "a fine story"]


def usage_per_request(request, index):
    """The default judge's verdicts, each reporting a usage of its own (its prompt's and reply's words)."""
    reply = default_script(request, index)
    reply.usage = words_usage(request, reply.content)
    return reply


def served_cost(server) -> float:
    served = server.usage_served
    return (served["prompt_tokens"] * PROMPT_PER_MTOK + served["completion_tokens"] * COMPLETION_PER_MTOK) / 1e6


def assert_extra_info_adds_up_to_the_server(rows, server) -> None:
    assert sum(r["judge_calls"] for r in rows) == server.count == server.usage_served["replies"]
    assert sum(r["judge_prompt_tokens"] for r in rows) == server.usage_served["prompt_tokens"]
    assert sum(r["judge_completion_tokens"] for r in rows) == server.usage_served["completion_tokens"]
    assert (
        sum(r["judge_tokens"] for r in rows)
        == server.usage_served["prompt_tokens"] + server.usage_served["completion_tokens"]
    )
    assert sum(r["judge_cost"] for r in rows) == pytest.approx(served_cost(server)) and served_cost(server) > 0
    assert sum(r["judge_tokens_estimated"] for r in rows) == 0


def test_streamed_samples_cost_what_the_judge_reported_in_the_metrics_and_the_monitor(
    ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path
):
    server = judge_server(script=usage_per_request)
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "reward.custom_reward_function.reward_kwargs.strategy=both",
        *PRICED,
    )
    texts = STORIES * 2
    samples = streaming_samples(
        tokenizer, [writing_row(i) for i in range(len(texts))], texts, [str(i) for i in range(len(texts))]
    )
    with reward_loop(config) as manager:
        results = stream(manager.reward_loop_workers, samples, seed=3)
    rows = [r["reward_extra_info"] for r in results]
    assert_extra_info_adds_up_to_the_server(rows, server)

    metrics = judge_health(rows)
    assert metrics["judge/calls_total"] == server.count
    assert metrics["judge/prompt_tokens_total"] == server.usage_served["prompt_tokens"]
    assert metrics["judge/completion_tokens_total"] == server.usage_served["completion_tokens"]
    assert metrics["judge/cost_total"] == pytest.approx(served_cost(server))

    # verl's rollout dump of two steps (the same samples twice): the monitor's cost per step and so far.
    for step in (1, 2):
        lines = [
            {"input": "p", "output": t, "score": r["reward_score"], "step": step, **r["reward_extra_info"]}
            for t, r in zip(texts, results)
        ]
        (tmp_path / f"{step}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    first, second = monitor(tmp_path)
    assert first.metrics["judge/cost_total"] == pytest.approx(served_cost(server))
    assert second.metrics["judge/cost_cumulative"] == pytest.approx(2 * served_cost(server))
    assert f"{2 * served_cost(server):.4f}" in table([first, second]).splitlines()[2]


def test_group_calls_are_counted_once_and_add_up_to_the_server(ray_cluster, judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=usage_per_request)
    config = compose(
        "brpo",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.reward_kwargs.judge.base_url={server.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            "reward.num_workers=2",
            "actor_rollout_ref.rollout.n=3",
            "reward.reward_kwargs.groups.timeout_s=30",
            *PRICED,
        ],
    )
    prompt = "Write a toast for a wedding."
    row = {
        "data_source": "writing",
        "prompt": [{"role": "user", "content": prompt}],
        "reward_model": {"ground_truth": {"prompt": prompt}},
        "extra_info": {"index": 0, "split": "train"},
    }
    groups = [STORIES[i : i + 3] for i in range(0, 6, 3)] + [STORIES[1:4]]
    texts = [text for group in groups for text in group]
    uids = [uid for group in groups for uid in [uuid.uuid4().hex] * len(group)]
    samples = streaming_samples(tokenizer, [row] * len(texts), texts, uids)
    with reward_loop(config) as manager:
        results = stream(manager.reward_loop_workers, samples, seed=5)
    rows = [r["reward_extra_info"] for r in results]
    assert server.count > 0
    assert_extra_info_adds_up_to_the_server(rows, server)


def test_calls_without_usage_are_counted_as_estimated_in_batch_mode(
    ray_cluster, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server(
        script=lambda request, index: Reply(content=default_script(request, index).content, usage=None)
    )
    config = compose_writing_rl(tokenizer_dir, server.base_url, "reward.num_workers=1", *PRICED)
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(4)], STORIES[:4])
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    rows = rows_from_columns({k: output.non_tensor_batch[k] for k in output.meta_info["reward_extra_keys"]}, 4)
    assert server.usage_served["replies"] == 0 and server.count == 4
    assert [r["judge_tokens_estimated"] for r in rows] == [r["judge_calls"] for r in rows] == [1] * 4
    assert all(r["judge_prompt_tokens"] > 0 and r["judge_completion_tokens"] > 0 and r["judge_cost"] > 0 for r in rows)
    metrics = judge_health(rows)
    assert metrics["judge/tokens_estimated_total"] == metrics["judge/calls_total"] == 4


def test_a_budget_stops_the_run_naming_the_limit_and_no_call_beyond_it_reaches_the_judge(
    ray_cluster, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server()
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.num_workers=1", "reward.reward_kwargs.judge.budget.calls=5"
    )
    texts = STORIES * 2
    samples = streaming_samples(
        tokenizer, [writing_row(i) for i in range(len(texts))], texts, [str(i) for i in range(len(texts))]
    )
    with reward_loop(config) as manager:
        (worker,) = manager.reward_loop_workers
        refs = [worker.compute_score.remote(sample) for sample in samples]
        ray.wait(refs, num_returns=len(refs))  # every sample done: scored, or stopped
        outcomes = []
        for ref in refs:
            try:
                outcomes.append(ray.get(ref))
            except ray.exceptions.RayTaskError as err:
                outcomes.append(err)
    stopped = [o for o in outcomes if isinstance(o, Exception)]
    assert server.count == 5 and len(outcomes) - len(stopped) == 5 and len(stopped) == 7
    message = str(stopped[0])
    assert "reward.reward_kwargs.judge.budget.calls=5 split between 1 reward worker(s)" in message
    assert "whatever on_judge_error says" in message  # the default on_judge_error=loss does not pay it a loss
