"""serve-judge's HTTP layer: request validation (a table), OpenAI error shapes, the bounded queue
(429 + Retry-After), pool failures mapped to status codes, API keys. The pool is a scripted double
here; tests/test_pool.py drives the same server over the real Ray pool with the openai SDK, and
tests/test_quickstart.py runs the `writing-rl serve-judge` command end to end."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from writing_rl.genrm.engine import Generation, Sampling
from writing_rl.genrm.pool import PoolReply
from writing_rl.genrm.pool_config import JudgeEngineError, JudgeRequestError
from writing_rl.genrm.server import JudgeServer, RequestError, parse_chat_request
from writing_rl.judge.errors import JudgeConnectionError, JudgeContextLengthError, JudgeTimeout, is_context_length_error

from genrm_helpers import LoopThread, start_site

MODEL = "judge-x"
USER = [{"role": "user", "content": "Which is better? [[A]] or [[B]]"}]


def body(**fields):
    return {"model": MODEL, "messages": USER, **fields}


@pytest.mark.parametrize(
    "request_body, status, param",
    [
        ([1, 2], 400, None),
        ({"messages": USER}, 400, "model"),
        (body(model="other"), 404, "model"),
        (body(messages=[]), 400, "messages"),
        (body(messages="hi"), 400, "messages"),
        (body(messages=[{"role": "tool", "content": "x"}]), 400, "messages[0].role"),
        (body(messages=[{"role": "user"}]), 400, "messages[0].content"),
        (
            body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]),
            400,
            "messages[0].content[0]",
        ),
        (body(stream=True), 400, "stream"),
        (body(n=2), 400, "n"),
        (body(max_tokens=0), 400, "max_tokens"),
        (body(max_tokens="5"), 400, "max_tokens"),
        (body(max_completion_tokens=1.5), 400, "max_completion_tokens"),
        (body(temperature=2.5), 400, "temperature"),
        (body(temperature=True), 400, "temperature"),
        (body(top_p=0), 400, "top_p"),
        (body(seed="7"), 400, "seed"),
        (body(stop=["\n"]), 400, "stop"),
        (body(logprobs=True), 400, "logprobs"),
        (body(tools=[{"type": "function"}]), 400, "tools"),
        (body(presence_penalty=0.5), 400, "presence_penalty"),
        (body(response_format={"type": "json_object"}), 400, "response_format"),
        (body(chat_template_kwargs=[1]), 400, "chat_template_kwargs"),
    ],
)
def test_invalid_requests_name_the_field(request_body, status, param):
    with pytest.raises(RequestError) as info:
        parse_chat_request(request_body, MODEL)
    assert (info.value.status, info.value.param) == (status, param)


@pytest.mark.parametrize(
    "request_body, sampling, messages",
    [
        (body(), Sampling(max_tokens=None, temperature=1.0, top_p=1.0), USER),
        (body(max_tokens=64, temperature=0, top_p=0.5, seed=3), Sampling(64, 0.0, 0.5, 3), USER),
        # max_completion_tokens wins over the deprecated max_tokens; explicit "off" values are fine.
        (
            body(max_tokens=64, max_completion_tokens=32, stop=None, logprobs=False, n=1, stream=False),
            Sampling(32, 1.0),
            USER,
        ),
        (
            body(
                messages=[
                    {"role": "system", "content": "S"},
                    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                ]
            ),
            Sampling(temperature=1.0),
            [{"role": "system", "content": "S"}, {"role": "user", "content": "a\nb"}],
        ),
    ],
)
def test_valid_requests(request_body, sampling, messages):
    chat = parse_chat_request(request_body, MODEL)
    assert chat.sampling == sampling and chat.messages == messages


class ScriptedPool:
    """Answers each request after the test releases it; or raises what ``fail`` holds."""

    def __init__(self):
        self.gate = asyncio.Event()
        self.fail: Exception | None = None
        self.calls: list[tuple] = []
        self.max_model_len = 2048

    async def generate(self, messages, sampling, chat_template_kwargs=None):
        self.calls.append((messages, sampling, chat_template_kwargs))
        if self.fail is not None:
            raise self.fail
        await self.gate.wait()
        text = f"echo: {messages[-1]['content']}"
        return PoolReply(Generation(text, "stop", 7, 3), latency_s=0.01, attempts=1, replica=0)

    def health(self):
        return {"replicas": 1, "ready": 1, "device": "cpu", "slots": []}


@pytest.fixture
def served():
    """(loop thread, scripted pool, server, base url) with max_pending=2."""
    runner = LoopThread()
    pool = ScriptedPool()
    server = JudgeServer(pool, MODEL, max_pending=2, retry_after_s=3)
    server.ready = True
    site_runner, port = runner.run(start_site(server.app()))
    yield runner, pool, server, f"http://127.0.0.1:{port}"
    runner.run(site_runner.cleanup())
    runner.stop()


def post(url: str, payload, headers=None, timeout=30) -> tuple[int, dict, dict]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.load(err)


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def test_openai_sdk_completion_and_errors(served):
    import openai

    runner, pool, _, url = served
    runner.loop.call_soon_threadsafe(pool.gate.set)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    completion = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=5, temperature=0, seed=1)
    assert completion.choices[0].message.content == f"echo: {USER[0]['content']}"
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        7,
        3,
        10,
    )
    assert pool.calls[-1][1] == Sampling(max_tokens=5, temperature=0.0, top_p=1.0, seed=1)

    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=USER, stream=True)
    assert info.value.body["param"] == "stream"
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="gpt-4o", messages=USER)
    assert [m.id for m in client.models.list().data] == [MODEL]


def test_full_queue_answers_429_with_retry_after(served):
    runner, pool, server, url = served
    endpoint = f"{url}/v1/chat/completions"
    senders = ThreadPoolExecutor(max_workers=2)
    held = [senders.submit(post, endpoint, body()) for _ in range(2)]
    assert _wait(lambda: server.pending == 2), "the two held requests never arrived"

    status, headers, reply = post(endpoint, body())
    assert status == 429 and headers["Retry-After"] == "3"
    assert reply["error"]["type"] == "rate_limit_error" and "queue is full" in reply["error"]["message"]
    status, health = get(f"{url}/health")
    assert status == 200 and health["pending"] == 2 and health["requests"]["rejected_full"] == 1

    runner.loop.call_soon_threadsafe(pool.gate.set)
    assert [h.result(timeout=30)[0] for h in held] == [200, 200]
    senders.shutdown()
    assert post(endpoint, body())[0] == 200  # room again


@pytest.mark.parametrize(
    "failure, status, kind",
    [
        (JudgeRequestError("pool", "the chat template rejected the messages"), 400, "invalid_request_error"),
        (
            JudgeContextLengthError(
                "pool",
                400,
                "This model's maximum context length is 64 tokens. However, you "
                "requested 90 tokens (80 in the messages, 10 in the completion)",
            ),
            400,
            "invalid_request_error",
        ),
        (JudgeTimeout("pool", "no reply"), 504, "timeout_error"),
        (JudgeConnectionError("pool", "no live replica"), 503, "service_unavailable"),
        (JudgeEngineError("pool", "CUDA out of memory"), 500, "server_error"),
    ],
)
def test_pool_failures_map_to_status_codes(served, failure, status, kind):
    _, pool, _, url = served
    pool.fail = failure
    code, headers, reply = post(f"{url}/v1/chat/completions", body())
    assert (code, reply["error"]["type"]) == (status, kind)
    said = failure.said if isinstance(failure, JudgeContextLengthError) else failure.cause
    assert said in reply["error"]["message"]
    assert ("Retry-After" in headers) == (status == 503)
    # a client of this server reads a prompt too long for the GenRM as the configuration error it is
    assert is_context_length_error(code, json.dumps(reply)) == isinstance(failure, JudgeContextLengthError)


def test_malformed_bodies_unknown_routes_and_startup(served):
    _, pool, server, url = served
    code, _, reply = post(f"{url}/v1/chat/completions", b"{not json")
    assert code == 400 and "not valid JSON" in reply["error"]["message"]
    code, reply = get(f"{url}/v1/embeddings")
    assert code == 404 and reply["error"]["type"] == "not_found_error"
    assert pool.calls == []  # nothing invalid reached the pool

    server.ready = False  # replicas still loading: health and requests say so
    code, health = get(f"{url}/health")
    assert code == 503 and health["status"] == "starting"
    code, headers, _ = post(f"{url}/v1/chat/completions", body())
    assert code == 503 and headers["Retry-After"] == "3"


def test_api_key_is_required_when_configured(served):
    runner, pool, server, url = served
    runner.loop.call_soon_threadsafe(pool.gate.set)
    server.api_key = "s3cret"
    code, _, reply = post(f"{url}/v1/chat/completions", body())
    assert code == 401 and reply["error"]["type"] == "authentication_error"
    assert post(f"{url}/v1/chat/completions", body(), {"Authorization": "Bearer wrong"})[0] == 401
    assert post(f"{url}/v1/chat/completions", body(), {"Authorization": "Bearer s3cret"})[0] == 200
    assert get(f"{url}/health")[0] == 200  # health stays open for load balancers


def _wait(condition, timeout_s: float = 20) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
