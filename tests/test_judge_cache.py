"""CachedJudge: replies on disk keyed by (model, messages, sampling); failures never cached; crash-safe."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from writing_rl.judge import JudgeHTTPError, JudgeReply, OpenAIJudge
from writing_rl.judge.cache import CachedJudge, cache_key, sampling_of
from writing_rl.judge.config import JudgeConfig
from writing_rl.protocols.prompts import pairwise_messages

from conftest import REPO_DIR
from judge_server import Reply, default_script, preference_verdict
from waiting import until


def messages(text: str) -> list[dict]:
    return pairwise_messages("q", text, "plain", system=None)


def make_config(server, **kw) -> JudgeConfig:
    return JudgeConfig(base_url=server.base_url, model="scripted", backoff_base_s=0.01, **kw)


async def ask_all(judge, requests, close=True):
    try:
        return await asyncio.gather(*(judge.complete(m) for m in requests), return_exceptions=True)
    finally:
        if close:
            await judge.judge.close()


SAMPLING = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "extra_body": {}}


@pytest.mark.parametrize(
    "other, same",
    [
        (("scripted", messages("x"), {**SAMPLING, "top_p": 1.0}), True),  # equal values, rebuilt dict
        (("scripted", messages("x"), dict(reversed(list(SAMPLING.items())))), True),  # key order is irrelevant
        (("other-model", messages("x"), SAMPLING), False),
        (("scripted", messages("y"), SAMPLING), False),
        (("scripted", messages("x"), {**SAMPLING, "temperature": 0.7}), False),
        (("scripted", messages("x"), {**SAMPLING, "max_tokens": 65}), False),
        (("scripted", messages("x"), {**SAMPLING, "extra_body": {"seed": 1}}), False),
    ],
)
def test_cache_key(other, same):
    assert (cache_key("scripted", messages("x"), SAMPLING) == cache_key(*other)) is same


def test_sampling_of_config_changes_the_key():
    base = JudgeConfig(base_url="http://x/v1", model="m")
    assert sampling_of(base) == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 4096, "extra_body": {}}
    hotter = JudgeConfig(base_url="http://x/v1", model="m", temperature=1.0)
    assert cache_key("m", messages("x"), sampling_of(base)) != cache_key("m", messages("x"), sampling_of(hotter))


def test_hits_survive_reopening(tmp_path, judge_server):
    server = judge_server()
    config = make_config(server)
    path = tmp_path / "cache.sqlite"
    requests = [messages(f"good {i}") for i in range(5)]

    judge = CachedJudge.for_config(OpenAIJudge(config), config, path)
    first = asyncio.run(ask_all(judge, requests + requests[:2]))
    assert len(server.requests) == 5  # the two repeats were answered from disk or shared in flight
    assert judge.stats.misses == 5 and judge.stats.hits + judge.stats.shared == 2
    assert all(isinstance(r, JudgeReply) and "[[A]]" in r.text for r in first)
    judge.close()

    reopened = CachedJudge.for_config(OpenAIJudge(config), config, path)
    again = asyncio.run(ask_all(reopened, requests))
    assert len(server.requests) == 5 and reopened.stats.hits == 5 and reopened.stats.misses == 0
    assert [r.text for r in again] == [r.text for r in first[:5]]
    assert len(reopened) == 5
    reopened.close()


def test_identical_requests_in_flight_are_sent_once(tmp_path, judge_server):
    server = judge_server(latency_s=0.05)
    config = make_config(server)
    with CachedJudge.for_config(OpenAIJudge(config, concurrency=64), config, tmp_path / "c.sqlite") as judge:
        replies = asyncio.run(ask_all(judge, [messages("same")] * 40 + [messages(f"d{i}") for i in range(10)]))
    assert all(isinstance(r, JudgeReply) for r in replies)
    assert len(server.requests) == 11
    assert judge.stats.misses == 11 and judge.stats.shared == 39 and judge.stats.hits == 0


def test_failures_are_not_cached_and_reach_every_waiter(tmp_path, judge_server):
    def script(request, index):  # the first request fails (not retryable), then the judge works
        return (
            Reply(status=400, body=b'{"error": "bad"}', delay_s=0.05) if index == 0 else default_script(request, index)
        )

    server = judge_server(script=script)
    config = make_config(server, max_retries=0)
    path = tmp_path / "c.sqlite"
    with CachedJudge.for_config(OpenAIJudge(config), config, path) as judge:
        first = asyncio.run(ask_all(judge, [messages("good")] * 3))
        assert all(isinstance(r, JudgeHTTPError) and r.status == 400 for r in first)  # waiters share the failure
        assert len(judge) == 0 and judge.stats.failures == 1 and judge.stats.shared == 2

        second = asyncio.run(ask_all(judge, [messages("good")]))
        assert isinstance(second[0], JudgeReply) and len(judge) == 1
        third = asyncio.run(ask_all(judge, [messages("good")]))
    assert third[0].text == second[0].text
    assert len(server.requests) == 2 and judge.stats.hits == 1


def test_a_cancelled_first_caller_does_not_strand_waiters(tmp_path, judge_server):
    # The first call's reply is held: it is still in flight when its caller is cancelled.
    server = judge_server(
        script=lambda body, i: Reply(content=preference_verdict(body["messages"][-1]["content"]), hold=i == 0)
    )
    config = make_config(server)

    async def scenario(judge):
        first = asyncio.create_task(judge.complete(messages("good")))
        await until(lambda: len(server.requests) == 1)
        waiter = asyncio.create_task(judge.complete(messages("good")))
        await until(lambda: judge.stats.shared == 1)  # the waiter waits on the first call
        first.cancel()
        reply = await asyncio.wait_for(waiter, timeout=60)
        await judge.judge.close()
        return first, reply

    with CachedJudge.for_config(OpenAIJudge(config), config, tmp_path / "c.sqlite") as judge:
        first, reply = asyncio.run(scenario(judge))
        assert first.cancelled() and "[[A]]" in reply.text and len(judge) == 1


CRASH_WRITER = """
import asyncio, sys
from writing_rl.reward_loop.config import JudgeConfig
from writing_rl.judge import OpenAIJudge
from writing_rl.judge.cache import CachedJudge
url, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = JudgeConfig(base_url=url, model="scripted", max_concurrency=16)
judge = CachedJudge.for_config(OpenAIJudge(config), config, path)
from writing_rl.protocols.prompts import pairwise_messages
def message(i):
    return pairwise_messages("q", f"good {i}", f"bad {i % 3}", system=None)
async def main():
    await asyncio.gather(*(judge.complete(message(i)) for i in range(count)))
asyncio.run(main())
"""


def crash_messages(i: int) -> list[dict]:
    return pairwise_messages("q", f"good {i}", f"bad {i % 3}", system=None)


def stored_rows(path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_kill_9_leaves_a_usable_cache_and_a_rerun_repeats_no_answered_call(tmp_path, judge_server):
    server = judge_server(latency_s=0.005)
    path = tmp_path / "crash.sqlite"
    count = 3000
    env = {**os.environ, "PYTHONPATH": str(REPO_DIR)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASH_WRITER, server.base_url, str(path), str(count)], env=env, cwd=REPO_DIR
    )
    try:
        deadline = time.monotonic() + 60
        while stored_rows(path) < 200 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the writer finished before it could be killed: raise count"
        proc.send_signal(signal.SIGKILL)  # mid-stream: replies arriving and being committed
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # (no hedging: the request count below is exact, and hundreds of calls are enough to start it)
    config = JudgeConfig(base_url=server.base_url, model="scripted", max_concurrency=16, hedge_after=0.0)
    judge = CachedJudge.for_config(OpenAIJudge(config), config, path)
    stored = len(judge)
    assert 200 <= stored < count
    expected = {cache_key("scripted", crash_messages(i), judge.sampling): i for i in range(count)}
    for key, i in expected.items():  # every stored reply is the complete answer to its own request
        reply = judge.lookup(key)
        if reply is not None:
            assert reply.text == preference_verdict(crash_messages(i)[-1]["content"])

    before = len(server.requests)
    replies = asyncio.run(ask_all(judge, [crash_messages(i) for i in range(count)]))
    judge.close()
    assert all(isinstance(r, JudgeReply) for r in replies)
    assert len(server.requests) - before == count - stored  # nothing answered before the kill is asked again
    assert judge.stats.hits == stored
