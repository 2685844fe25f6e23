"""The OpenAI-compatible judge client against a real HTTP server on 127.0.0.1."""

import asyncio
import json
import socket
import time

import pytest

from writing_rl.config import ConfigError, JudgeConfig
from writing_rl.judge import (
    JudgeConnectionError,
    JudgeHTTPError,
    JudgeResponseError,
    JudgeTimeout,
    OpenAIJudge,
)
from writing_rl.judge.http import redact_url

from judge_server import Reply

MESSAGES = [{"role": "user", "content": "Compare. [[A]] or [[B]]?"}]


def make_judge(server, concurrency=None, **overrides) -> OpenAIJudge:
    settings = {"base_url": server.base_url, "model": "judge-x", "backoff_base_s": 0.01, "max_retries": 2}
    return OpenAIJudge(JudgeConfig(**{**settings, **overrides}), concurrency=concurrency)


def run(coro):
    return asyncio.run(coro)


async def complete_and_close(judge, messages=MESSAGES):
    try:
        return await judge.complete(messages)
    finally:
        await judge.close()


def test_request_carries_model_messages_sampling_and_extra_body(judge_server):
    server = judge_server(script=lambda body, i: Reply(content="A is better [[A]]"))
    judge = make_judge(server, temperature=0.3, top_p=0.9, max_tokens=77, extra_body={"seed": 5})
    reply = run(complete_and_close(judge))
    assert reply.text == "A is better [[A]]"
    assert reply.finish_reason == "stop" and not reply.truncated
    assert reply.attempts == 1 and reply.latency_s > 0
    (body,) = server.requests
    assert body == {
        "model": "judge-x",
        "messages": MESSAGES,
        "temperature": 0.3,
        "top_p": 0.9,
        "max_tokens": 77,
        "seed": 5,
    }


def test_api_key_is_read_from_the_named_env_var(judge_server, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-secret-123")
    server = judge_server()
    judge = make_judge(server, api_key_env="MY_JUDGE_KEY")
    run(complete_and_close(judge))
    assert server.headers[0]["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in repr(judge.config)


def test_no_key_header_without_api_key_env(judge_server):
    server = judge_server()
    run(complete_and_close(make_judge(server)))
    assert "Authorization" not in server.headers[0]


def test_missing_key_env_var_is_a_config_error_naming_the_variable(judge_server, monkeypatch):
    monkeypatch.delenv("ABSENT_JUDGE_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$ABSENT_JUDGE_KEY"):
        make_judge(judge_server(), api_key_env="ABSENT_JUDGE_KEY")


def test_429_with_retry_after_is_honoured_then_succeeds(judge_server):
    def script(body, index):
        if index == 0:
            return Reply(status=429, body=b'{"error": "slow down"}', headers={"Retry-After": "0.4"})
        return Reply(content="[[B]]")

    server = judge_server(script=script)
    judge = make_judge(server)
    start = time.perf_counter()
    reply = run(complete_and_close(judge))
    assert time.perf_counter() - start >= 0.4
    assert reply.text == "[[B]]" and reply.attempts == 2
    assert len(server.requests) == 2 and judge.stats.retries == 1


def test_503_retry_after_honoured(judge_server):
    def script(body, index):
        return Reply(status=503, body=b"busy", headers={"Retry-After": "0.3"}) if index == 0 else Reply(content="[[C]]")

    server = judge_server(script=script)
    start = time.perf_counter()
    assert run(complete_and_close(make_judge(server))).text == "[[C]]"
    assert time.perf_counter() - start >= 0.3


def test_5xx_is_retried_until_success(judge_server):
    server = judge_server(script=lambda body, i: Reply(status=500, body=b"oops") if i < 2 else Reply(content="ok"))
    judge = make_judge(server, max_retries=2)
    assert run(complete_and_close(judge)).attempts == 3
    assert len(server.requests) == 3


def test_5xx_after_all_retries_raises_http_error_with_endpoint_and_status(judge_server):
    server = judge_server(script=lambda body, i: Reply(status=502, body=b"bad gateway"))
    judge = make_judge(server, max_retries=2)
    with pytest.raises(JudgeHTTPError) as info:
        run(complete_and_close(judge))
    assert info.value.status == 502 and info.value.attempts == 3
    assert server.base_url in str(info.value) and "bad gateway" in str(info.value)
    assert len(server.requests) == 3
    assert judge.stats.failures["http"] == 1


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_are_never_retried(judge_server, status):
    server = judge_server(script=lambda body, i: Reply(status=status, body=b'{"error": "no"}'))
    with pytest.raises(JudgeHTTPError) as info:
        run(complete_and_close(make_judge(server, max_retries=3)))
    assert info.value.status == status and info.value.attempts == 1
    assert len(server.requests) == 1


def test_slow_reply_beyond_timeout_raises_timeout_after_retries(judge_server):
    # Replies are held until the test ends: only the client's own timeout can end each attempt.
    server = judge_server(script=lambda body, i: Reply(content="[[A]]", hold=True))
    judge = make_judge(server, timeout_s=0.2, max_retries=1)
    with pytest.raises(JudgeTimeout) as info:
        run(complete_and_close(judge))
    assert info.value.attempts == 2 and len(server.requests) == 2
    assert "timeout_s=0.2" in str(info.value)


def test_slow_first_reply_then_fast_one_succeeds(judge_server):
    server = judge_server(script=lambda body, i: Reply(content="[[A]]", hold=i == 0))
    reply = run(complete_and_close(make_judge(server, timeout_s=2.0, max_retries=1)))
    assert reply.text == "[[A]]" and reply.attempts == 2


@pytest.mark.parametrize(
    "body",
    [b"<html>gateway</html>", b'{"error": {"message": "upstream failed"}}', b'{"choices": []}', b"", b"[1, 2]"],
)
def test_malformed_bodies_raise_response_error_after_retries(judge_server, body):
    server = judge_server(script=lambda b, i: Reply(status=200, body=body))
    with pytest.raises(JudgeResponseError) as info:
        run(complete_and_close(make_judge(server, max_retries=1)))
    assert info.value.attempts == 2 and len(server.requests) == 2
    assert "not a chat completion" in str(info.value)


def test_malformed_body_then_good_reply_recovers(judge_server):
    server = judge_server(script=lambda b, i: Reply(body=b"{oops") if i == 0 else Reply(content="[[B]]"))
    assert run(complete_and_close(make_judge(server))).text == "[[B]]"


def test_null_content_is_empty_text_and_length_is_truncation(judge_server):
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "length"}]})
    server = judge_server(script=lambda b, i: Reply(body=body.encode()))
    reply = run(complete_and_close(make_judge(server)))
    assert reply.text == "" and reply.truncated


def test_connection_refused_raises_connection_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = JudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1, backoff_base_s=0.01)
    with pytest.raises(JudgeConnectionError) as info:
        run(complete_and_close(OpenAIJudge(config)))
    assert info.value.attempts == 2 and f"127.0.0.1:{port}" in str(info.value)


def test_concurrency_is_bounded_and_the_session_is_reused(judge_server):
    server = judge_server()
    judge = make_judge(server, concurrency=3)

    async def many():
        first = await judge.complete(MESSAGES)
        session = judge._session
        server.hold_until_in_flight = 3  # from now on the first three are answered together
        replies = await asyncio.gather(*(judge.complete(MESSAGES) for _ in range(30)))
        assert judge._session is session  # one pooled session per worker, not one per call
        await judge.close()
        return [first, *replies]

    replies = run(many())
    assert len(replies) == 31 and len(server.requests) == 31
    assert server.max_in_flight == 3


def test_a_client_survives_being_used_from_a_new_event_loop(judge_server):
    server = judge_server()
    judge = make_judge(server)
    run(judge.complete(MESSAGES))
    run(judge.complete(MESSAGES))  # a second asyncio.run: new loop, new session
    run(judge.close())
    assert len(server.requests) == 2


def test_endpoint_in_errors_never_shows_credentials():
    assert redact_url("https://user:pw@api.example.com:8443/v1?key=abc") == "https://api.example.com:8443/v1"


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"base_url": None, "model": "m"}, "base_url is not set"),
        ({"base_url": "localhost:8000/v1", "model": "m"}, "must start with http"),
        ({"base_url": "http://h/v1", "model": None}, "judge.model is not set"),
        ({"base_url": "http://h/v1", "model": "m", "max_concurrency": 0}, "max_concurrency"),
        ({"base_url": "http://h/v1", "model": "m", "timeout_s": 0}, "timeout_s"),
        ({"base_url": "http://h/v1", "model": "m", "max_retries": -1}, "max_retries"),
    ],
)
def test_bad_judge_settings_name_the_key(settings, message):
    with pytest.raises(ConfigError, match=message):
        JudgeConfig(**settings).validate()
