"""``writing-rl serve-judge``: an OpenAI-compatible HTTP server in front of a ``GenRMPool``.

Its endpoints, the requests it refuses (400 with the OpenAI error JSON naming the field), back-pressure
(``max_pending``, then 429 with ``Retry-After``) and failures: docs/genrm/hosting.md. The port opens at once;
``/health`` answers 503 until the replicas are ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from writing_rl.genrm.engine import Sampling
from writing_rl.genrm.pool_config import JudgeRequestError
from writing_rl.judge.errors import JudgeConnectionError, JudgeContextLengthError, JudgeError, JudgeTimeout

ROLES = ("system", "user", "assistant")
# Parameters a client may send that this server cannot honour: refused, never silently ignored.
UNSUPPORTED_WHEN_SET = {
    "stop": "stop sequences are not supported",
    "logprobs": "logprobs are not supported",
    "top_logprobs": "logprobs are not supported",
    "tools": "tool calls are not supported",
    "tool_choice": "tool calls are not supported",
    "functions": "function calls are not supported",
    "function_call": "function calls are not supported",
    "logit_bias": "logit_bias is not supported",
    "presence_penalty": "penalties are not supported",
    "frequency_penalty": "penalties are not supported",
}


class RequestError(Exception):
    """An error answered to the client in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        kind: str = "invalid_request_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.param, self.kind, self.code = status, message, param, kind, code
        self.headers = headers or {}

    def response(self) -> web.Response:
        body = {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}
        return web.json_response(body, status=self.status, headers=self.headers)


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict[str, str]]
    sampling: Sampling
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)


def parse_chat_request(body: Any, served_model: str) -> ChatRequest:
    """Validate an OpenAI chat-completions body; ``RequestError`` names the first bad field."""
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError(400, "'model' is required: a string naming the served model", "model")
    if model != served_model:
        raise RequestError(
            404,
            f"the model '{model}' does not exist; this server serves '{served_model}'",
            "model",
            code="model_not_found",
        )
    messages = _parse_messages(body.get("messages"))

    if body.get("stream"):
        raise RequestError(400, "stream=true is not supported: send a non-streaming request", "stream")
    if body.get("n") not in (None, 1):
        raise RequestError(400, f"n must be 1, got {body.get('n')!r}", "n")
    for name, reason in UNSUPPORTED_WHEN_SET.items():
        if body.get(name) not in (None, False, 0, [], {}, ""):
            raise RequestError(400, f"'{name}': {reason} by this server", name)
    response_format = body.get("response_format")
    if response_format not in (None, {"type": "text"}):
        raise RequestError(400, "response_format other than {'type': 'text'} is not supported", "response_format")

    max_tokens_field = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = body.get(max_tokens_field)
    if max_tokens is not None and (not _is_int(max_tokens) or max_tokens < 1):
        raise RequestError(400, f"{max_tokens_field} must be an integer >= 1, got {max_tokens!r}", max_tokens_field)
    temperature = _number(body, "temperature", default=1.0, low=0.0, high=2.0)
    top_p = _number(body, "top_p", default=1.0, low=0.0, high=1.0)
    if top_p == 0.0:
        raise RequestError(400, "top_p must be > 0", "top_p")
    seed = body.get("seed")
    if seed is not None and not _is_int(seed):
        raise RequestError(400, f"seed must be an integer, got {seed!r}", "seed")
    template_kwargs = body.get("chat_template_kwargs") or {}
    if not isinstance(template_kwargs, dict):
        raise RequestError(400, "chat_template_kwargs must be an object", "chat_template_kwargs")
    return ChatRequest(
        messages=messages,
        sampling=Sampling(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed),
        chat_template_kwargs=template_kwargs,
    )


def _parse_messages(messages: Any) -> list[dict[str, str]]:
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list of {role, content} objects", "messages")
    parsed = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise RequestError(400, f"{where} must be an object with 'role' and 'content'", where)
        role = message.get("role")
        if role not in ROLES:
            raise RequestError(400, f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}", f"{where}.role")
        parsed.append({"role": role, "content": _text_content(message.get("content"), f"{where}.content")})
    return parsed


def _text_content(content: Any, where: str) -> str:
    """A string, or a list of {"type": "text", "text": ...} parts (joined by newlines, as vLLM does)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                message = f"{where}[{j}] must be a text part {{'type': 'text', 'text': ...}}"
                raise RequestError(400, message, f"{where}[{j}]")
            texts.append(part["text"])
        return "\n".join(texts)
    raise RequestError(400, f"{where} must be a string or a list of text parts", where)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(body: dict, name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise RequestError(400, f"{name} must be a number in [{low:g}, {high:g}], got {value!r}", name)
    return float(value)


def completion_body(request_id: str, model: str, generation, created: int) -> dict[str, Any]:
    return {
        "id": request_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": generation.text},
                "logprobs": None,
                "finish_reason": generation.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
            "total_tokens": generation.prompt_tokens + generation.completion_tokens,
        },
    }


class JudgeServer:
    """The HTTP layer. ``pool`` needs ``generate(messages, sampling, chat_template_kwargs) -> PoolReply``
    and ``health() -> dict``; ``served_model`` is the name clients must send."""

    def __init__(
        self,
        pool,
        served_model: str,
        max_pending: int = 256,
        retry_after_s: float = 1.0,
        api_key: str | None = None,
        max_request_mb: float = 32.0,
    ):
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.pool = pool
        self.served_model = served_model
        self.max_pending = max_pending
        self.retry_after = str(max(1, math.ceil(retry_after_s)))
        self.api_key = api_key
        self.max_request_bytes = int(max_request_mb * 2**20)
        self.ready = False
        self.pending = 0
        self.created = int(time.time())
        self.counts = {"completed": 0, "rejected_full": 0, "invalid": 0, "failed": 0}

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_request_bytes, middlewares=[self._errors_as_json])
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        return app

    @web.middleware
    async def _errors_as_json(self, request: web.Request, handler):
        try:
            if self.api_key and request.path.startswith("/v1/"):
                self._authorize(request)
            return await handler(request)
        except RequestError as error:
            return error.response()
        except web.HTTPException as exc:  # unknown route, wrong method, body too large
            if exc.status < 400:
                raise
            kind = "not_found_error" if exc.status == 404 else "invalid_request_error"
            return RequestError(exc.status, f"{exc.reason}: {request.method} {request.path}", kind=kind).response()

    def _authorize(self, request: web.Request) -> None:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.api_key.encode()):
            raise RequestError(401, "missing or wrong API key (Authorization: Bearer ...)", kind="authentication_error")

    async def health(self, request: web.Request) -> web.Response:
        state = self.pool.health()
        body = {
            "status": "ok" if self.ready and state["ready"] else "starting" if not self.ready else "unavailable",
            "model": self.served_model,
            "pending": self.pending,
            "max_pending": self.max_pending,
            "requests": dict(self.counts),
            **state,
        }
        return web.json_response(body, status=200 if body["status"] == "ok" else 503)

    async def models(self, request: web.Request) -> web.Response:
        card = {"id": self.served_model, "object": "model", "created": self.created, "owned_by": "writing-rl"}
        max_len = getattr(self.pool, "max_model_len", None)
        if max_len:
            card["max_model_len"] = max_len
        return web.json_response({"object": "list", "data": [card]})

    async def chat_completions(self, request: web.Request) -> web.Response:
        if not self.ready:
            raise RequestError(
                503,
                "the GenRM replicas are still starting",
                kind="service_unavailable",
                headers={"Retry-After": self.retry_after},
            )
        try:
            body = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError) as exc:
            self.counts["invalid"] += 1
            raise RequestError(400, f"the request body is not valid JSON: {exc}") from None
        try:
            chat = parse_chat_request(body, self.served_model)
        except RequestError:
            self.counts["invalid"] += 1
            raise
        if self.pending >= self.max_pending:
            self.counts["rejected_full"] += 1
            raise RequestError(
                429,
                f"the judge queue is full ({self.max_pending} requests pending); retry after {self.retry_after}s",
                kind="rate_limit_error",
                headers={"Retry-After": self.retry_after},
            )
        self.pending += 1
        try:
            reply = await self.pool.generate(chat.messages, chat.sampling, chat.chat_template_kwargs)
        except JudgeError as error:
            self.counts["failed"] += 1
            raise _pool_error(error, self.retry_after) from None
        finally:
            self.pending -= 1
        self.counts["completed"] += 1
        request_id = f"chatcmpl-{uuid.uuid4().hex}"
        return web.json_response(completion_body(request_id, self.served_model, reply.generation, int(time.time())))


def _pool_error(error: JudgeError, retry_after: str) -> RequestError:
    if isinstance(error, JudgeContextLengthError):  # the engine's own words, which clients recognise
        return RequestError(400, error.said, "messages")
    if isinstance(error, JudgeRequestError):
        return RequestError(400, error.cause, "messages")
    if isinstance(error, JudgeTimeout):
        return RequestError(504, error.cause, kind="timeout_error")
    if isinstance(error, JudgeConnectionError):
        return RequestError(503, error.cause, kind="service_unavailable", headers={"Retry-After": retry_after})
    return RequestError(500, error.cause, kind="server_error")


async def serve(pool, server: JudgeServer, host: str, port: int, on_listening=print) -> None:
    """Open the port, start the pool, serve until SIGINT/SIGTERM, then stop the server and the pool."""
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        on_listening(f"serve-judge: listening on http://{host}:{port}/v1, starting {pool.config.replicas} replica(s)")
        # A signal during start-up (vLLM can take minutes to load) stops at once, not after loading.
        starting = asyncio.ensure_future(pool.start())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()  # raises PoolStartError when a replica could not start
            server.ready = True
            on_listening(f"serve-judge: ready, serving model '{server.served_model}' ({pool.config.engine} engine)")
            await stopping
        else:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        on_listening("serve-judge: stopping")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await runner.cleanup()
        await pool.close()


def run_serve_judge(
    pool_config,
    host: str,
    port: int,
    max_pending: int,
    retry_after_s: float,
    api_key_env: str | None,
    ray_address: str | None,
) -> None:
    import ray

    from writing_rl.genrm.pool import GenRMPool

    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ValueError(f"--api-key-env names ${api_key_env}, but that environment variable is not set")
    pool = GenRMPool(pool_config)
    server = JudgeServer(pool, pool_config.name, max_pending=max_pending, retry_after_s=retry_after_s, api_key=api_key)
    address = ray_address or os.environ.get("RAY_ADDRESS")
    started_ray = not ray.is_initialized()
    if started_ray:
        if address:
            ray.init(address=address)
        else:
            ray.init(include_dashboard=False)
    try:
        asyncio.run(serve(pool, server, host, port, on_listening=lambda line: print(line, flush=True)))
    finally:
        if started_ray:
            ray.shutdown()
