"""What the judge costs: usage read from each reply (or counted where the endpoint reports none), the price
table, the budget and its per-worker share, and the numbers the tracker, the batch log line and
`writing-rl monitor` show. The same through verl's reward loop: tests/test_judge_cost_reward_loop.py."""

import asyncio
import json
import math

import pytest

from writing_rl.judge import NO_CALLS, JudgeBudgetExceeded, OpenAIJudge, SampleJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.replies import read_completion
from writing_rl.judge.spend import sharing_clients
from writing_rl.judge.usage import TokenCounter
from writing_rl.reward_loop.config import worker_concurrency
from writing_rl.reward_loop.failures import is_configuration_error
from writing_rl.reward_loop.health.batch_summary import BatchSummary
from writing_rl.reward_loop.health.metrics import dropped_spend, judge_health
from writing_rl.settings import ConfigError, build
from writing_rl.tools.monitor import monitor, table

from judge_server import Reply, default_script, words_usage

MESSAGES = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "Which is better? [[A]] or [[B]]"}]
PRICE = {"prompt_per_mtok": 2.5, "completion_per_mtok": 10.0}


def body(usage=None, content="[[A]]") -> bytes:
    data = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data).encode()


def spent(reply: dict) -> tuple:
    return reply["tokens"], reply["prompt_tokens"], reply["completion_tokens"], reply["tokens_estimated"]


@pytest.mark.parametrize(
    "usage, expected",
    [
        ({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}, (150, 120, 30, False)),
        ({"prompt_tokens": 120, "completion_tokens": 30}, (150, 120, 30, False)),  # no total: the parts
        ({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 7}, (150, 120, 30, False)),  # nonsense total
        ({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, (0, 0, 0, False)),  # reported zeros
        ({"total_tokens": 150}, (150, 0, 0, True)),  # no split: counted by the client
        (None, (0, 0, 0, True)),
        ({}, (0, 0, 0, True)),
        ("150 tokens", (0, 0, 0, True)),
        ({"prompt_tokens": -1, "completion_tokens": 30}, (0, 0, 0, True)),
        ({"prompt_tokens": "120", "completion_tokens": 30}, (0, 0, 0, True)),
        ({"prompt_tokens": True, "completion_tokens": 30}, (0, 0, 0, True)),
        ({"prompt_tokens": 12.5, "completion_tokens": 30, "total_tokens": -4}, (0, 0, 0, True)),
    ],
)
def test_usage_is_read_when_reported_and_marked_for_counting_when_not(usage, expected):
    assert spent(read_completion(body(usage))) == expected


def test_a_price_makes_a_cost_and_no_price_costs_nothing():
    priced = JudgeConfig(price=PRICE).price
    assert priced.priced and priced.cost(1_000_000, 0) == 2.5
    assert priced.cost(120, 30) == pytest.approx((120 * 2.5 + 30 * 10.0) / 1e6)
    for unpriced in ({}, {"prompt_per_mtok": None, "completion_per_mtok": None}, {"prompt_per_mtok": 0}):
        price = JudgeConfig(price=unpriced).price
        assert not price.priced and price.cost(10**9, 10**9) == 0.0


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            {"price": {"prompt_per_mtk": 1.0}},
            r"under reward\.reward_kwargs\.judge\.price: prompt_per_mtk; did you mean ",
        ),
        ({"price": {"prompt_per_mtok": -1}}, r"judge\.price\.prompt_per_mtok=-1: expected a number >= 0, or null"),
        ({"price": {"completion_per_mtok": "3$"}}, r"judge\.price\.completion_per_mtok must be of type float"),
        ({"price": {"prompt_per_mtok": math.inf}}, r"judge\.price\.prompt_per_mtok=inf: expected a finite number >= 0"),
        ({"price": 2.5}, r"judge\.price must be a section with the keys prompt_per_mtok, completion_per_mtok"),
        ({"budget": {"calls": 0}}, r"judge\.budget\.calls=0: expected a number > 0, or null"),
        ({"budget": {"tokens": 1.5}}, r"judge\.budget\.tokens must be of type int .*got 1\.5"),
        ({"budget": {"cost": -2.0, **{}}, "price": PRICE}, r"judge\.budget\.cost=-2\.0: expected a number > 0"),
        ({"budget": {"cost": 5.0}}, r"judge\.budget\.cost=5\.0 is set but reward\.reward_kwargs\.judge\.price is not"),
        ({"budget": {"call": 5}}, r"did you mean reward\.reward_kwargs\.judge\.budget\.calls\?"),
    ],
)
def test_price_and_budget_errors_name_the_key(raw, message):
    """Read as ManagerConfig reads the judge section from the Hydra dict (settings.build, then validate)."""
    with pytest.raises(ConfigError, match=message):
        build(
            JudgeConfig, {"base_url": "http://127.0.0.1:9/v1", "model": "m", **raw}, "reward.reward_kwargs.judge"
        ).validate()


def test_the_sections_read_from_a_dict_equal_those_built_in_code():
    config = build(JudgeConfig, {"price": PRICE, "budget": {"calls": 10, "cost": 1.5}}, "reward.reward_kwargs.judge")
    assert config.price == JudgeConfig(price=PRICE).price and config.budget.limits == {"calls": 10, "cost": 1.5}
    assert JudgeConfig(price=None).price == JudgeConfig().price  # an overlay's `price: null`


def judge(server, **settings) -> OpenAIJudge:
    config = JudgeConfig(base_url=server.base_url, model="m", backoff_base_s=0.01, max_retries=0, **settings)
    return OpenAIJudge(config)  # the client of an offline tool: the whole budget


async def calls(client: OpenAIJudge, n: int, at_once: bool = False, messages=MESSAGES) -> list:
    """``n`` calls (all in flight together, or one after another): each reply, or the error it raised."""
    try:
        if at_once:
            return await asyncio.gather(*(client.complete(messages) for _ in range(n)), return_exceptions=True)
        results = []
        for _ in range(n):
            try:
                results.append(await client.complete(messages))
            except JudgeBudgetExceeded as err:
                results.append(err)
        return results
    finally:
        await client.close()


def test_reported_usage_and_cost_per_call_and_per_endpoint(judge_server):
    servers = [
        judge_server(script=lambda r, i: Reply(content="[[A]]" * (i + 1), usage=words_usage(r, "[[A]]" * (i + 1))))
        for _ in range(2)
    ]
    config = JudgeConfig(base_url=[s.base_url for s in servers], model="m", price=PRICE, hedge_after=0)
    client = OpenAIJudge(config, concurrency=4)
    replies = asyncio.run(calls(client, 6))
    served = [s.usage_served for s in servers]
    assert sum(r.prompt_tokens for r in replies) == sum(s["prompt_tokens"] for s in served)
    assert sum(r.completion_tokens for r in replies) == sum(s["completion_tokens"] for s in served)
    assert all(r.cost == pytest.approx((r.prompt_tokens * 2.5 + r.completion_tokens * 10) / 1e6) for r in replies)
    assert not any(r.tokens_estimated for r in replies)
    stats = client.stats
    assert stats.spent.calls == 6 and stats.spent.cost == pytest.approx(sum(r.cost for r in replies))
    for server, shown in zip(servers, [s.base_url for s in servers]):
        by = stats.spent_by_endpoint[shown]
        assert (by.calls, by.prompt_tokens, by.completion_tokens) == (
            server.count,
            server.usage_served["prompt_tokens"],
            server.usage_served["completion_tokens"],
        )


def test_without_usage_tokens_are_estimated_from_characters_and_counted_as_estimated(judge_server):
    server = judge_server(script=lambda r, i: Reply(content="B reads better. [[B]]", usage=None))
    (reply,) = asyncio.run(calls(judge(server, price=PRICE), 1))
    # 4 tokens of chat formatting per message, about 4 characters a token.
    assert reply.prompt_tokens == (4 + math.ceil(10 / 4)) + (4 + math.ceil(31 / 4))
    assert reply.completion_tokens == math.ceil(len("B reads better. [[B]]") / 4)
    assert reply.tokens == reply.prompt_tokens + reply.completion_tokens and reply.tokens_estimated
    assert reply.cost == pytest.approx((reply.prompt_tokens * 2.5 + reply.completion_tokens * 10) / 1e6)


def test_a_reported_total_without_its_split_keeps_the_total(judge_server):
    server = judge_server(script=lambda r, i: Reply(content="[[A]]", usage={"total_tokens": 500}))
    (reply,) = asyncio.run(calls(judge(server), 1))
    assert reply.tokens == 500 and reply.tokens_estimated
    assert (
        reply.prompt_tokens == TokenCounter().prompt(MESSAGES) and reply.prompt_tokens + reply.completion_tokens == 500
    )


def test_a_usage_tokenizer_counts_what_the_endpoint_did_not_report(judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=lambda r, i: Reply(content="a good story", usage=None))
    (reply,) = asyncio.run(calls(judge(server, usage_tokenizer=str(tokenizer_dir)), 1))
    assert reply.completion_tokens == len(tokenizer.encode("a good story", add_special_tokens=False))
    assert reply.prompt_tokens == TokenCounter(str(tokenizer_dir)).prompt(MESSAGES) > 0
    assert reply.tokens_estimated


def test_a_usage_tokenizer_that_does_not_load_fails_at_start_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"judge\.usage_tokenizer=.*cannot load it"):
        OpenAIJudge(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", usage_tokenizer=str(tmp_path / "none")))


def test_sample_keys_sum_the_counted_calls_and_no_calls_has_the_same_keys_and_types(judge_server):
    server = judge_server(script=lambda r, i: Reply(content="[[A]]", usage=None if i == 1 else words_usage(r, "[[A]]")))
    client = judge(server, price=PRICE)

    async def go():
        recorder = SampleJudge(client)
        for _ in range(3):
            await recorder.complete(MESSAGES)
        await client.close()
        return recorder.metrics()

    info = asyncio.run(go())
    assert set(info) == set(SampleJudge.METRIC_KEYS) == set(NO_CALLS)
    assert {k: type(v) for k, v in info.items()} == {k: type(v) for k, v in NO_CALLS.items()}
    assert info["judge_calls"] == 3 and info["judge_tokens_estimated"] == 1
    assert info["judge_prompt_tokens"] == client.stats.spent.prompt_tokens
    assert info["judge_completion_tokens"] == client.stats.spent.completion_tokens
    assert info["judge_cost"] == pytest.approx(client.stats.spent.cost) and info["judge_cost"] > 0


def test_a_calls_budget_lets_exactly_its_calls_reach_the_judge_even_all_at_once(judge_server):
    server = judge_server()
    results = asyncio.run(calls(judge(server, budget={"calls": 5}, max_concurrency=16), 12, at_once=True))
    refused = [r for r in results if isinstance(r, JudgeBudgetExceeded)]
    assert server.count == 5 and len(refused) == 7
    assert "reward.reward_kwargs.judge.budget.calls=5 split between 1 reward worker(s) gives this worker 5" in str(
        refused[0]
    )
    assert is_configuration_error(refused[0]) and refused[0].kind == "budget"


def test_a_tokens_budget_refuses_the_call_the_mean_so_far_would_take_past_it(judge_server):
    usage = {"prompt_tokens": 70, "completion_tokens": 30, "total_tokens": 100}
    server = judge_server(script=lambda r, i: Reply(content="[[A]]", usage=usage))
    results = asyncio.run(calls(judge(server, budget={"tokens": 350}, max_tokens=20), 5))
    # 100 tokens a call (more than a counted prompt and max_tokens): after 3 calls (300) a fourth could make 400.
    assert server.count == 3 and isinstance(results[3], JudgeBudgetExceeded)
    assert "budget.tokens=350" in str(results[3]) and "100 for this call at most" in str(results[3])


def test_a_tokens_budget_is_never_passed_by_calls_sent_together(judge_server):
    """Before any reply there is no mean: each call in flight holds its counted prompt and a max_tokens reply."""
    prompt = TokenCounter().prompt(MESSAGES)
    usage = {"prompt_tokens": prompt, "completion_tokens": 100}  # each reply as long as max_tokens allows
    server = judge_server(script=lambda r, i: Reply(content="[[A]]", usage=usage))
    client = judge(server, budget={"tokens": 1000}, max_tokens=100, max_concurrency=16)
    results = asyncio.run(calls(client, 12, at_once=True))
    sent = 1000 // (prompt + 100)
    assert server.count == sent and sum(isinstance(r, JudgeBudgetExceeded) for r in results) == 12 - sent
    assert client.stats.spent.tokens <= 1000


def test_a_cost_budget_counts_money_at_the_price(judge_server):
    usage = {"prompt_tokens": 400_000, "completion_tokens": 100_000}  # 1.0 + 1.0 = 2.0 a call
    server = judge_server(script=lambda r, i: Reply(content="[[A]]", usage=usage))
    results = asyncio.run(calls(judge(server, price=PRICE, budget={"cost": 7.0}), 5))
    assert server.count == 3 and [isinstance(r, JudgeBudgetExceeded) for r in results] == [False] * 3 + [True] * 2
    assert "budget.cost=7" in str(results[3])


def test_each_worker_gets_its_share_of_the_budget(judge_server):
    server = judge_server()
    config = JudgeConfig(base_url=server.base_url, model="m", max_concurrency=64, budget={"calls": 10})
    client = OpenAIJudge(config, concurrency=worker_concurrency(64, 3), workers=3)
    results = asyncio.run(calls(client, 5))
    assert server.count == 3 and "split between 3 reward worker(s) gives this worker 3" in str(results[3])
    # Without `workers`: the split of max_concurrency, which never gives the workers more than the budget.
    for total in (64, 10, 7):
        for workers in range(1, total + 1):
            assert (
                sharing_clients(config.__class__(max_concurrency=total), worker_concurrency(total, workers)) >= workers
            )
    with pytest.raises(ConfigError, match=r"budget\.calls=2 split between 3 reward workers leaves each none"):
        OpenAIJudge(JudgeConfig(base_url=server.base_url, model="m", budget={"calls": 2}), workers=3)


def test_dropped_samples_count_their_calls_tokens_and_cost_apart():
    rows = [
        {
            "judge_calls": 2,
            "judge_tokens": 300,
            "judge_prompt_tokens": 250,
            "judge_completion_tokens": 50,
            "judge_cost": 0.01,
        },
        {
            "judge_calls": 1,
            "judge_tokens": 100,
            "judge_prompt_tokens": 80,
            "judge_completion_tokens": 20,
            "judge_cost": 0.002,
        },
        {},  # a sample that never got its reward
    ]
    assert dropped_spend(rows) == {
        "judge/dropped_samples_total": 3.0,
        "judge/dropped_calls_total": 3.0,
        "judge/dropped_tokens_total": 400.0,
        "judge/dropped_prompt_tokens_total": 330.0,
        "judge/dropped_completion_tokens_total": 70.0,
        "judge/dropped_cost_total": pytest.approx(0.012),
    }


def test_the_cost_cumulative_adds_each_steps_trained_and_dropped_cost():
    from writing_rl.reward_loop.health.sampler import _JudgeHealth

    sampler = _JudgeHealth()
    assert sampler._cumulative_cost({"judge/cost_total": 1.5}) == {"judge/cost_cumulative": 1.5}
    assert sampler._cumulative_cost({"judge/cost_total": 1.0, "judge/dropped_cost_total": 0.25}) == {
        "judge/cost_cumulative": 2.75
    }
    assert sampler._cumulative_cost({"judge/calls_total": 3}) == {}  # a run without the keys: no metric
    # A shadow judge's cost (tests/test_shadow.py) adds up apart.
    step = {"judge/cost_total": 1.0, "shadow/cost_total": 0.5, "shadow/dropped_cost_total": 0.5}
    assert sampler._cumulative_cost(step) == {"judge/cost_cumulative": 3.75, "shadow/cost_cumulative": 1.0}


def test_step_metrics_sum_the_spend_keys():
    rows = [
        {
            "judge_calls": 2,
            "judge_prompt_tokens": 200,
            "judge_completion_tokens": 40,
            "judge_tokens_estimated": 1,
            "judge_cost": 0.5,
        },
        {
            "judge_calls": 1,
            "judge_prompt_tokens": 100,
            "judge_completion_tokens": 10,
            "judge_tokens_estimated": 0,
            "judge_cost": 0.25,
        },
    ]
    metrics = judge_health(rows)
    assert metrics["judge/prompt_tokens_total"] == 300 and metrics["judge/completion_tokens_total"] == 50
    assert metrics["judge/tokens_estimated_total"] == 1 and metrics["judge/cost_total"] == 0.75


def test_the_batch_line_shows_tokens_and_cost_since_the_last_and_per_endpoint(judge_server):
    servers = [
        judge_server(script=lambda r, i: Reply(content="[[A]]", usage=words_usage(r, "[[A]]"))) for _ in range(2)
    ]
    config = JudgeConfig(base_url=[s.base_url for s in servers], model="m", price=PRICE, hedge_after=0)
    client = OpenAIJudge(config, concurrency=4)
    summary = BatchSummary(client)
    asyncio.run(calls(client, 4))
    summary.add(1.0, {"judge_error": 0}, [0.1])
    spent = client.stats.spent
    line = summary.flush()
    assert f"tokens {spent.tokens} cost {spent.cost:.4f} (" in line
    assert all(f"{s.base_url}: {s.count} calls" in line for s in servers)
    summary.add(1.0, {"judge_error": 0}, [0.1])
    assert "tokens 0 cost 0.0000" in summary.flush()  # nothing spent since


def test_monitor_shows_cost_per_step_and_so_far(tmp_path):
    for step, costs in ((1, [0.5, 0.25]), (2, [1.0])):
        lines = [
            {"input": "p", "output": "a story", "score": 1.0, "step": step, "judge_calls": 1, "judge_prompt_tokens": 90,
             "judge_completion_tokens": 10, "judge_tokens_estimated": 0, "judge_cost": cost, "judge_error": 0}
            for cost in costs
        ]  # fmt: skip
        (tmp_path / f"{step}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    first, second = monitor(tmp_path)
    assert first.metrics["judge/cost_total"] == 0.75 and first.metrics["judge/cost_cumulative"] == 0.75
    assert second.metrics["judge/cost_total"] == 1.0 and second.metrics["judge/cost_cumulative"] == 1.75
    assert second.metrics["judge/prompt_tokens_total"] == 90
    shown = table([first, second]).splitlines()
    assert "cost so far" in shown[0] and shown[2].split()[-2:] == ["1.0000", "1.7500"]


def test_default_script_usage_is_what_the_server_tallies(judge_server):
    server = judge_server(
        script=lambda r, i: Reply(content="x", usage={"prompt_tokens": "many"}) if i else default_script(r, i)
    )
    asyncio.run(calls(judge(server), 2))
    assert server.usage_served == {"replies": 1, "prompt_tokens": 1, "completion_tokens": 1}
