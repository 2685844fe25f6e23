"""One adaptive limit, one circuit breaker and one queue per judge endpoint, shared by every client of an
event loop (writing_rl/judge/upstream.py): in-process, and through verl's real reward worker."""

import asyncio

import ray
from test_judge_endpoints import free_port_url

from writing_rl.judge import OpenAIJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.endpoints import Endpoint
from writing_rl.judge.limiter import AimdLimit
from writing_rl.judge.upstream import Upstream, wait_for_room
from writing_rl.reward_loop.batch import streaming_samples

from conftest import compose_writing_rl, reward_loop, writing_row
from judge_server import Reply
from waiting import until

MESSAGES = [{"role": "user", "content": "judge this"}]


def client(urls, model="m", concurrency=4, **settings) -> OpenAIJudge:
    config = JudgeConfig(base_url=urls, model=model, backoff_base_s=0.01, **settings)
    return OpenAIJudge(config, concurrency=concurrency)


async def close_all(*judges):
    for judge in judges:
        await judge.close()


def test_two_clients_of_one_server_keep_together_to_the_larger_concurrency(judge_server):
    server = judge_server(script=lambda body, i: Reply(content="ok", hold=True))
    first, second = client(server.base_url, "judge-a"), client(server.base_url, "judge-b")

    async def scenario():
        calls = [asyncio.ensure_future(j.complete(MESSAGES)) for j in (first, second) for _ in range(10)]
        await until(lambda: server.in_flight == 4)
        (upstream,) = first.upstreams.values()
        # four at the server, four (two per client) queued for room there, the rest at their own client
        await until(lambda: upstream.occupied == 4 and len(upstream.waiters) == 4)
        shared = second.upstreams == first.upstreams
        server.release()
        replies = await asyncio.gather(*calls)
        await close_all(first, second)
        return shared, replies

    shared, replies = asyncio.run(scenario())
    assert shared and [r.text for r in replies] == ["ok"] * 20
    assert server.max_in_flight == 4 and len(server.requests) == 20


def test_a_client_asking_for_more_raises_the_shared_ceiling(judge_server):
    server = judge_server(script=lambda body, i: Reply(content="ok", hold=True))
    small, large = client(server.base_url, concurrency=2), client(server.base_url, concurrency=6)

    async def scenario():
        calls = [asyncio.ensure_future(j.complete(MESSAGES)) for j in (small, large) for _ in range(6)]
        await until(lambda: server.in_flight == 6)
        limits = small.concurrency_limit, large.concurrency_limit
        server.release()
        await asyncio.gather(*calls)
        await close_all(small, large)
        return limits

    assert asyncio.run(scenario()) == (2, 6)  # each keeps to its own; together at most 6
    assert server.max_in_flight == 6


def test_429s_one_client_gets_lower_the_limit_the_other_sees(judge_server):
    server = judge_server(capacity=2, refuse_over_capacity=True, latency_s=0.02)
    busy, quiet = client(server.base_url, "judge-a", concurrency=8), client(server.base_url, "judge-b", concurrency=8)

    async def scenario():
        await asyncio.gather(*(busy.complete(MESSAGES) for _ in range(40)))
        await quiet.complete(MESSAGES)  # one call: not a round that could change the limit
        limit = quiet.concurrency_limit
        await close_all(busy, quiet)
        return limit

    assert asyncio.run(scenario()) < 8
    assert server.refused > 0 and busy.stats.limit_decreases > 0


def test_an_endpoint_that_one_client_found_dead_is_skipped_by_the_other(judge_server):
    live, dead = judge_server(), free_port_url()
    settings = {"endpoint_max_failures": 1, "endpoint_cooldown_s": 600}
    finder, other = (
        client([dead, live.base_url], "judge-a", **settings),
        client([dead, live.base_url], "judge-b", **settings),
    )

    async def scenario():
        await finder.complete(MESSAGES)  # least loaded first: the dead one, then fails over
        state = other.pool.endpoints[0].state if other._ensure_session() else None
        reply = await other.complete(MESSAGES)
        await close_all(finder, other)
        return state, reply

    state, reply = asyncio.run(scenario())
    assert finder.stats.retries == 1 and state == "open"
    assert reply.attempts == 1 and other.stats.requests == 1 and len(live.requests) == 2


def test_nothing_is_shared_across_event_loops_or_api_keys(judge_server, monkeypatch):
    server = judge_server()
    monkeypatch.setenv("KEY_A", "a")
    monkeypatch.setenv("KEY_B", "b")
    first, keyed = client(server.base_url, api_key_env="KEY_A"), client(server.base_url, api_key_env="KEY_B")

    async def upstreams():
        await first.complete(MESSAGES)
        await keyed.complete(MESSAGES)
        await close_all(first, keyed)
        return list(first.upstreams.values()), list(keyed.upstreams.values())

    (a1,), (b1,) = asyncio.run(upstreams())
    (a2,), _ = asyncio.run(upstreams())
    assert a1 is not b1  # a provider's rate limit is per key
    assert a2 is not a1  # a new loop starts fresh


def upstream(slots: int) -> Upstream:
    return Upstream(Endpoint("http://judge/v1/chat/completions", "http://judge/v1"), AimdLimit(slots, adaptive=False))


def test_room_goes_to_the_oldest_waiter_on_whichever_endpoint_frees_first():
    a, b = upstream(1), upstream(1)

    async def scenario():
        a.take(), b.take()
        either = asyncio.ensure_future(wait_for_room([a, b]))
        only_b = asyncio.ensure_future(wait_for_room([b]))
        await until(lambda: len(a.waiters) == 1 and len(b.waiters) == 2)
        seen = [a.has_room()]
        b.release()  # the oldest waiter on b takes it, and leaves a's queue too
        seen.append(await either)
        seen += [len(a.waiters), only_b.done()]
        a.release()  # nobody waits on a any more: its room stays free
        seen.append(a.has_room())
        b.release()
        seen.append(await only_b)
        return seen

    assert asyncio.run(scenario()) == [False, b, 0, False, True, b]
    assert b.occupied == 1 and a.occupied == 0


def test_a_cancelled_waiter_takes_no_room_and_a_turned_away_one_chooses_again():
    a = upstream(1)

    async def scenario():
        a.take()
        cancelled = asyncio.ensure_future(wait_for_room([a]))
        next_in_line = asyncio.ensure_future(wait_for_room([a]))
        await until(lambda: len(a.waiters) == 2)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        a.release()  # the cancelled waiter left the queue: the next one gets the room
        got = await next_in_line
        turned = asyncio.ensure_future(wait_for_room([a]))
        await until(lambda: len(a.waiters) == 1)
        a.turn_away()  # its breaker opened: the waiter goes to choose again, holding nothing
        return got, await turned, a.occupied

    assert asyncio.run(scenario()) == (a, None, 1)


def test_two_judges_in_one_verl_reward_worker_share_the_servers_limit(
    ray_cluster, tmp_path, tokenizer_dir, tokenizer, judge_server
):
    """A reward fn that asks a second judge on the same server (another model name, its own client)
    beside the worker's: together they keep to max_concurrency, as verl's worker runs them."""
    server = judge_server(latency_s=0.05, hold_until_in_flight=4)
    fn = tmp_path / "two_judges.py"
    fn.write_text(
        "import asyncio\n"
        "from writing_rl.judge import JudgeConfig, OpenAIJudge\n"
        "SECOND = {}\n"
        "async def compute_score(data_source, solution_str, ground_truth, extra_info, judge):\n"
        "    if 'judge' not in SECOND:\n"
        f"        SECOND['judge'] = OpenAIJudge(JudgeConfig(base_url={server.base_url!r}, model='second', "
        "max_concurrency=4))\n"
        "    messages = [{'role': 'user', 'content': solution_str}]\n"
        "    await asyncio.gather(judge.complete(messages), SECOND['judge'].complete(messages))\n"
        "    return {'score': 1.0}\n"
    )
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        f"reward.custom_reward_function.path={fn}",
        "~reward.custom_reward_function.reward_kwargs",
        "reward.num_workers=1",
        "reward.reward_kwargs.judge.max_concurrency=4",
        "reward.reward_kwargs.failure_score=0.0",  # a module with no METHOD declares no loss
    )
    texts = [f"story {i}" for i in range(16)]
    samples = streaming_samples(tokenizer, [writing_row(i) for i in range(16)], texts, [str(i) for i in range(16)])
    with reward_loop(config) as manager:
        (worker,) = manager.reward_loop_workers
        results = ray.get([worker.compute_score.remote(s) for s in samples])
    assert [r["reward_score"] for r in results] == [1.0] * 16
    models = [r["model"] for r in server.requests]
    assert models.count("second") == 16 and models.count("scripted-judge") == 16
    assert server.max_in_flight == 4  # the first wave formed (4 at once), and never more
