"""The OpenAI-compatible judge client against a real HTTP server on 127.0.0.1."""

import asyncio
import json
import socket
import time

import pytest

from writing_rl.judge import (
    JudgeConnectionError,
    JudgeContextLengthError,
    JudgeHTTPError,
    JudgeReply,
    JudgeResponseError,
    JudgeTimeout,
    OpenAIJudge,
)
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.endpoints import redact_url
from writing_rl.judge.http import http_error, message_content
from writing_rl.judge.retry import RATE_LIMIT_FLOOR_S
from writing_rl.settings import ConfigError

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
    # A 429 queues the request again without using up a retry; the limit went down once.
    assert reply.text == "[[B]]" and reply.attempts == 1 and reply.rate_limited == 1
    assert len(server.requests) == 2 and judge.stats.retries == 0 and judge.stats.rate_limited == 1
    assert reply.concurrency_limit == judge.concurrency_limit == 57  # 64 x 0.9, rounded down


def test_429_with_retry_after_zero_still_waits_the_floor_before_asking_again(judge_server):
    """A judge answering every request with ``429, Retry-After: 0`` must not get a tight loop of requests."""

    def script(body, index):
        return Reply(status=429, body=b"busy", headers={"Retry-After": "0"}) if index < 3 else Reply(content="[[A]]")

    waits = []

    async def record(seconds):  # the client's own waits, recorded instead of slept
        waits.append(seconds)

    server = judge_server(script=script)
    config = JudgeConfig(base_url=server.base_url, model="judge-x")
    reply = run(complete_and_close(OpenAIJudge(config, sleep=record)))
    assert reply.text == "[[A]]" and reply.rate_limited == 3 and len(server.requests) == 4
    assert waits == [RATE_LIMIT_FLOOR_S] * 3  # no reply yet, so no latency to scale the floor by


def test_the_429_floor_grows_with_the_judges_usual_latency(judge_server):
    def script(body, index):
        return Reply(status=429, body=b"busy", headers={"Retry-After": "0"}) if index == 0 else Reply(content="ok")

    waits = []

    async def record(seconds):  # returns at once
        waits.append(seconds)

    judge = OpenAIJudge(JudgeConfig(base_url=judge_server(script=script).base_url, model="m"), sleep=record)

    async def complete_slow_judge():
        judge._ensure_session()
        (upstream,) = judge.upstreams.values()
        upstream.limit.long_latency = 3.0  # as if the judge usually took 3 s: the floor is a tenth of it
        return await complete_and_close(judge)

    assert run(complete_slow_judge()).rate_limited == 1
    assert waits == [pytest.approx(0.3)]


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


def completion(message, finish_reason="stop") -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}).encode()


def test_null_content_is_a_response_error_naming_it_not_an_empty_reply(judge_server):
    message = {"role": "assistant", "content": None, "reasoning_content": "Let me think"}
    server = judge_server(script=lambda b, i: Reply(body=completion(message, "length")))
    with pytest.raises(JudgeResponseError) as info:
        run(complete_and_close(make_judge(server, max_retries=1)))
    assert "content is null" in str(info.value) and "finish_reason='length'" in str(info.value)
    assert "reasoning_content" in str(info.value)  # says where the text went


def test_content_parts_are_joined(judge_server):
    parts = [{"type": "text", "text": "A is "}, {"type": "reasoning", "reasoning": "hm"}, "better [[A]]"]
    server = judge_server(script=lambda b, i: Reply(body=completion({"role": "assistant", "content": parts})))
    reply = run(complete_and_close(make_judge(server)))
    assert reply.text == "A is better [[A]]" and reply.refusal is None and not reply.refused


def test_refusal_is_a_refused_reply_not_an_error(judge_server):
    message = {"role": "assistant", "content": None, "refusal": "I can't judge this."}
    server = judge_server(script=lambda b, i: Reply(body=completion(message)))
    reply = run(complete_and_close(make_judge(server)))
    assert reply.text == "" and reply.refusal == "I can't judge this." and reply.refused
    assert reply.attempts == 1 and len(server.requests) == 1


@pytest.mark.parametrize(
    "message, text, refusal",
    [
        ({"content": "[[A]]"}, "[[A]]", None),
        ({"content": ""}, "", None),
        ({"content": ["[[", "B]]"]}, "[[B]]", None),
        ({"content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}, "xy", None),
        ({"content": [{"text": "untyped"}]}, "untyped", None),
        ({"content": [{"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "t"}]}, "t", None),
        ({"content": []}, "", None),
        ({"content": None, "refusal": "no"}, "", "no"),
        ({"refusal": "no"}, "", "no"),
        ({"content": 7, "refusal": "no"}, "", "no"),
        ({"content": [{"type": "refusal", "refusal": "no"}]}, "", "no"),
        ({"content": "[[A]]", "refusal": "partly"}, "[[A]]", "partly"),
        ({"content": "[[A]]", "refusal": ""}, "[[A]]", None),
        ({"content": "[[A]]", "refusal": None}, "[[A]]", None),
    ],
)
def test_message_content_shapes(message, text, refusal):
    assert message_content({"role": "assistant", **message}) == (text, refusal)


@pytest.mark.parametrize(
    "message, named",
    [
        ({"content": None}, "content is null"),
        ({"role": "assistant"}, "no content"),
        ({"content": None, "refusal": "  "}, "content is null"),
        ({"content": 42}, "content is int 42"),
        ({"content": {"text": "x"}}, "content is dict"),
        ({"content": True}, "content is bool"),
        ({"content": ["ok", None]}, "a content part is null"),
        ({"content": [{"type": "text", "text": None}]}, "'text' content part has text null"),
        ({"content": [{"type": "text"}]}, "'text' content part has text null"),
        ("just text", "message is str"),
        (None, "message is null"),
    ],
)
def test_unreadable_content_raises_naming_what_was_found(message, named):
    with pytest.raises(ValueError, match=named):
        message_content(message, "stop")


@pytest.mark.parametrize(
    "finish_reason, truncated",
    [
        ("length", True),
        ("LENGTH", True),
        ("max_tokens", True),
        ("MAX_TOKENS", True),
        ("max_output_tokens", True),
        ("model_length", True),
        ("token_limit", True),
        ("stop", False),
        ("eos", False),
        ("content_filter", False),
        ("tool_calls", False),
        (None, False),
    ],
)
def test_truncated_for_every_token_limit_reason(finish_reason, truncated):
    assert JudgeReply("t", finish_reason, 0.1).truncated is truncated


@pytest.mark.parametrize(
    "finish_reason, refusal, refused",
    [
        ("stop", None, False),
        ("stop", "I won't", True),
        ("content_filter", None, True),
        ("Content_Filter", None, True),
        ("length", None, False),
        (None, None, False),
        (None, "", False),
    ],
)
def test_refused_by_refusal_text_or_content_filter(finish_reason, refusal, refused):
    assert JudgeReply("", finish_reason, 0.1, refusal=refusal).refused is refused


def test_reply_constructor_stays_positional_compatible():
    reply = JudgeReply("[[A]]", "stop", 0.5, 2)
    assert (reply.text, reply.finish_reason, reply.latency_s, reply.attempts, reply.refusal) == (
        "[[A]]",
        "stop",
        0.5,
        2,
        None,
    )


def test_non_string_finish_reason_is_dropped(judge_server):
    body = json.dumps({"choices": [{"message": {"content": "[[A]]"}, "finish_reason": 3}]}).encode()
    server = judge_server(script=lambda b, i: Reply(body=body))
    reply = run(complete_and_close(make_judge(server)))
    assert reply.finish_reason is None and not reply.truncated


VLLM_CONTEXT = json.dumps(
    {
        "object": "error",
        "message": "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
        "(8488 in the messages, 512 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
)
OPENAI_CONTEXT = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
            "9000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)


def error_body(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "BadRequestError", "code": 400}})


@pytest.mark.parametrize(
    "status, body, numbers",
    [
        (400, VLLM_CONTEXT, (8192, 9000, 8488, 512)),
        (400, OPENAI_CONTEXT, (8192, None, 9000, None)),
        (
            400,
            error_body(
                "This model's maximum context length is 40960 tokens. However, you requested 1024 output tokens and "
                "your prompt contains at least 40000 input tokens, for a total of at least 41024 tokens."
            ),
            (40960, 41024, 40000, 1024),
        ),
        (
            400,
            error_body(
                "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is "
                "4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778)."
            ),
            (4096, None, 2778, 8000),
        ),
        (
            400,
            error_body("The decoder prompt (length 12324) is longer than the maximum model length of 8192."),
            (8192, None, 12324, None),
        ),
        (
            400,
            error_body("The input (9000 tokens) is longer than the model's context length (8192 tokens)."),
            (8192, None, 9000, None),
        ),
        (413, error_body("prompt is too long: 210000 tokens > 200000 maximum"), (200000, None, 210000, None)),
        (422, "Input is too long for this model", (None, None, None, None)),
        (400, json.dumps({"error": {"message": "Bad request", "code": "context_length_exceeded"}}), (None,) * 4),
    ],
)
def test_context_length_bodies_are_a_context_length_error_with_their_numbers(status, body, numbers):
    error = http_error("http://judge/v1", status, body, 1)
    assert isinstance(error, JudgeContextLengthError) and isinstance(error, JudgeHTTPError)
    assert error.kind == "context_length" and error.status == status
    assert (error.max_context, error.requested, error.prompt_tokens, error.completion_tokens) == numbers
    message = str(error)
    assert "configuration error" in message and "judge.max_tokens" in message
    for advice in ("response_length", "max_response_length", "reward.reward_kwargs.judge.max_tokens", "max_model_len"):
        assert advice in message
    for number in numbers:
        assert number is None or str(number) in message


def test_context_length_message_names_the_numbers():
    message = str(http_error("http://judge/v1", 400, VLLM_CONTEXT, 1))
    assert "judge context 8192 tokens, requested 9000 tokens = 8488 prompt + 512 completion" in message
    assert '"object"' not in message  # the judge's words, not its JSON


@pytest.mark.parametrize(
    "status, body",
    [
        (400, error_body("Invalid value for 'temperature': must be <= 2")),
        (400, "bad request"),
        (422, error_body("messages: field required")),
        (404, error_body("The model `judge-y` does not exist.")),
        (500, VLLM_CONTEXT),  # a context message on a server error is not a verdict on the request
        (503, "prompt is too long"),
    ],
)
def test_other_errors_stay_plain_http_errors(status, body):
    error = http_error("http://judge/v1", status, body, 1)
    assert type(error) is JudgeHTTPError and error.kind == "http" and error.status == status


def test_context_length_error_is_raised_at_once_and_never_retried(judge_server):
    server = judge_server(script=lambda b, i: Reply(status=400, body=VLLM_CONTEXT.encode()))
    judge = make_judge(server, max_retries=3)
    with pytest.raises(JudgeContextLengthError) as info:
        run(complete_and_close(judge))
    assert info.value.attempts == 1 and len(server.requests) == 1
    assert info.value.max_context == 8192 and info.value.requested == 9000
    assert judge.stats.failures["context_length"] == 1 and judge.stats.retries == 0


@pytest.mark.parametrize("header", ["1e12", "inf", "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_huge_retry_after_is_capped_by_retry_after_max_s(judge_server, header):
    def script(body, index):
        return Reply(status=429, body=b"wait", headers={"Retry-After": header}) if index == 0 else Reply(content="ok")

    server = judge_server(script=script)
    start = time.perf_counter()
    reply = run(complete_and_close(make_judge(server, retry_after_max_s=0.05)))
    assert reply.rate_limited == 1 and len(server.requests) == 2 and time.perf_counter() - start < 5


@pytest.mark.parametrize("header", ["NaN", "-5", "abc", ""])
def test_unreadable_or_negative_retry_after_still_retries(judge_server, header):
    def script(body, index):
        return Reply(status=503, body=b"busy", headers={"Retry-After": header}) if index == 0 else Reply(content="ok")

    server = judge_server(script=script)
    assert run(complete_and_close(make_judge(server))).attempts == 2


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
        ({"base_url": ["http://a/v1", "b:8000/v1"], "model": "m"}, r"base_url\[1\] must start with http"),
        ({"base_url": ["http://a/v1", 7], "model": "m"}, r"base_url\[1\] must start with http.*got 7"),
        ({"base_url": ["http://a/v1", "http://a/v1"], "model": "m"}, "lists http://a/v1 more than once"),
        ({"base_url": [], "model": "m"}, "base_url is not set"),
        ({"base_url": {"url": "http://a/v1"}, "model": "m"}, "must be a URL or a list of URLs"),
        ({"base_url": "http://h/v1", "model": "m", "min_concurrency": 0}, r"min_concurrency=0: expected a number >= 1"),
        (
            {"base_url": "http://h/v1", "model": "m", "concurrency_decrease": 1.0},
            r"concurrency_decrease=1.0: expected a number > 0 and < 1",
        ),
        (
            {"base_url": "http://h/v1", "model": "m", "latency_tolerance": 0.5},
            r"latency_tolerance=0.5: expected a number >= 1",
        ),
        ({"base_url": "http://h/v1", "model": "m", "rate_limit_wait_s": -1}, "rate_limit_wait_s=-1: expected"),
        (
            {"base_url": "http://h/v1", "model": "m", "endpoint_max_failures": 0},
            "endpoint_max_failures=0: expected a number >= 1",
        ),
        (
            {"base_url": "http://h/v1", "model": "m", "endpoint_cooldown_s": -1},
            "endpoint_cooldown_s=-1: expected a number >= 0",
        ),
        (
            {"base_url": "http://h/v1", "model": "m", "all_down_timeout_s": -1},
            "all_down_timeout_s=-1: expected a number >= 0",
        ),
        ({"base_url": "http://h/v1", "model": None}, "judge.model is not set"),
        ({"base_url": "http://h/v1", "model": "m", "max_concurrency": 0}, "max_concurrency"),
        ({"base_url": "http://h/v1", "model": "m", "timeout_s": 0}, "timeout_s"),
        ({"base_url": "http://h/v1", "model": "m", "max_retries": -1}, "max_retries"),
        (
            {"base_url": "http://h/v1", "model": "m", "retry_after_max_s": -1},
            "retry_after_max_s=-1: expected a number >= 0",
        ),
        (
            {"base_url": "http://h/v1", "model": "m", "retry_after_max_s": float("nan")},
            "retry_after_max_s=nan: expected a finite number",
        ),
        (
            {"base_url": "http://h/v1", "model": "m", "retry_after_max_s": float("inf")},
            "retry_after_max_s=inf: expected a finite number",
        ),
    ],
)
def test_bad_judge_settings_name_the_key(settings, message):
    with pytest.raises(ConfigError, match=message):
        JudgeConfig(**settings).validate()


def test_retry_after_max_s_defaults_to_a_minute_and_zero_is_allowed():
    assert JudgeConfig().retry_after_max_s == 60.0
    assert JudgeConfig(base_url="http://h/v1", model="m", retry_after_max_s=0).validate().retry_after_max_s == 0
