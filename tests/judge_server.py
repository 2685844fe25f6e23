"""A scripted OpenAI-compatible judge on 127.0.0.1, for tests and benchmarks (never shipped as a judge).

It runs an aiohttp server in a background thread. By default it answers like a judge that prefers the
response containing more "good" than "bad"; a ``script`` callable can instead return any status,
headers, body or delay per request, to play 429s, 500s, slow replies and malformed bodies.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from aiohttp import web

from writing_rl.protocols.prompts import read_pairwise_request

DEFAULT_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # chat completion text; None = use `body` as is
    body: bytes | None = None
    headers: dict = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    hold: bool = False  # answer only once the test calls server.release() (or stops the server)
    # The completion's "usage" field as sent (with ``content``): None = no usage field at all; anything else
    # (nonsense included) is sent as it is.
    usage: object = field(default_factory=lambda: dict(DEFAULT_USAGE))


def quality(text: str) -> int:
    return text.lower().count("good") - text.lower().count("bad")


def preference_verdict(user_message: str) -> str:
    """[[A]], [[B]] or [[C]] by the 'good minus bad' count of each response; [[C]] if unreadable."""
    shown = read_pairwise_request(user_message)
    if not shown:
        return "I cannot find two responses. [[C]]"
    a, b = quality(shown[1]), quality(shown[2])
    verdict = "A" if a > b else "B" if b > a else "C"
    return f"Response A scores {a}, response B scores {b}. Final verdict:\n[[{verdict}]]"


_CANDIDATE_RE = re.compile(r"(?:Translation|Response) ([A-Z]):\n(`{3,})\n(.*?)\n\2", re.S)


def gqm_candidates(user_message: str) -> dict[str, str]:
    """The candidates of a GQM group prompt, by label."""
    return {label: text for label, _, text in _CANDIDATE_RE.findall(user_message)}


def gqm_reply(user_message: str) -> str:
    """A GQM answer scoring each candidate 5 + quality (clipped to 0-10), ranking consistent with it."""
    scores = {label: max(0, min(10, 5 + quality(text))) for label, text in gqm_candidates(user_message).items()}
    return gqm_answer(scores)


def gqm_answer(scores: dict[str, int]) -> str:
    """A GQM reply: a ranking line consistent with the scores (0-10 per label), then the scores in that order."""
    levels = sorted(set(scores.values()), reverse=True)
    ranking = " > ".join(" = ".join(sorted(lab for lab in scores if scores[lab] == level)) for level in levels)
    ordered = sorted(scores, key=lambda lab: (-scores[lab], lab))
    line = ", ".join(f"{lab}: {scores[lab]}" for lab in ordered)
    return f"Each candidate weighed in turn.\n### Final Ranking:\n{ranking}\n### Scores:\n{line}"


def ranking_scales_latency(latency_s: float):
    """A script whose group-ranking replies take ``latency_s`` x candidates / 2 (a GQM answer analyses
    every candidate); pairwise replies take the server's base latency."""

    def script(request: dict, index: int) -> Reply:
        reply = default_script(request, index)
        candidates = len(gqm_candidates(request["messages"][-1]["content"]))
        reply.delay_s = latency_s * max(0.0, candidates / 2 - 1) if candidates else 0.0
        return reply

    return script


def critic_script(request: dict, index: int) -> Reply:
    """A criteria critic (WritingBench's reply format): a fenced JSON score from 1 to 10 that grows with
    the request's 'good' count."""
    score = max(1, min(10, 5 + quality(request["messages"][-1]["content"])))
    return Reply(content=f'Weighed the criterion.\n```json\n{{"score": {score}, "reason": "quality {score}"}}\n```')


CHAOS_FAULTS = ("429", "429_retry_after", "500", "html", "cut", "no_verdict", "spike", "spread")
# The mix's rate of each fault drawn per request (a share of requests), in the order of their draw ranges.
DRAWN_RATES = {"500": 0.07, "html": 0.03, "cut": 0.03, "no_verdict": 0.03, "spike": 0.02}
BURST, BURST_EVERY = 60, 2000  # 429s: 60 in a row every 2,000 requests, each kind (3% of requests each)
# With a clock: 0.3 s of 429s every 10 s, each kind (3% of the time), the kinds half a period apart.
BURST_S, BURST_EVERY_S = 0.3, 10.0
SPREAD = 3.0  # every reply but a spike takes from 1 to 1 + SPREAD times the base latency


def chaos_script(
    seed: int,
    enabled=lambda: True,
    latency_s: float = 0.05,
    faults=CHAOS_FAULTS,
    spike_s: float = 1.5,
    scale: dict[str, float] | None = None,
    clock: Callable[[], float] | None = None,
):
    """The default judge's verdicts, with faults drawn per request from ``seed`` while ``enabled()``:
    bursts of 429s (60 in a row every 2,000 requests without Retry-After, and as many with it, offset by
    1,000), 7% 500s, 3% bodies that are not JSON, 3% replies cut at max_tokens, 3% replies with no verdict, 2%
    latency spikes (``spike_s`` in all), and every reply but a spike taking from 1 to 4 times ``latency_s``
    (the server's base latency; "spread"). ``faults``: the kinds injected; ``scale``: a kind's rate times
    this (the bursts come that much more often; the spread's width grows by it), 1 when not named.
    ``clock``: seconds since the faults began; given, a burst is a window of time (``BURST_S`` every
    ``BURST_EVERY_S``), as a provider's rate limit refuses for a while however few requests come: a burst
    counted in requests lasts as long as a client that backs off takes to send them."""
    import random

    scale = {kind: float(scale.get(kind, 1.0)) for kind in CHAOS_FAULTS} if scale else dict.fromkeys(CHAOS_FAULTS, 1.0)
    drawn, low = {}, 0.0  # each drawn kind's range of the request's draw
    for kind, rate in DRAWN_RATES.items():
        width = rate * scale[kind] if kind in faults else 0.0
        drawn[kind] = (low, low + width)
        low += width
    if low >= 1.0:
        raise ValueError(f"the drawn faults' rates add up to {low:.2f}, more than every request")

    def hit(kind: str, draw: float) -> bool:
        return drawn[kind][0] <= draw < drawn[kind][1]

    def bursting(kind: str, index: int, half: bool) -> bool:
        if kind not in faults or scale[kind] <= 0:
            return False
        if clock is None:
            return (index - half * (BURST_EVERY // 2)) % (BURST_EVERY / scale[kind]) < BURST
        every = BURST_EVERY_S / scale[kind]  # (a quarter period in: a condition's first step meets none)
        return (clock() - (0.25 + half / 2) * every) % every < BURST_S

    def script(request: dict, index: int) -> Reply:
        if not enabled():
            return default_script(request, index)
        draw = random.Random(f"{seed}:{index}").random()
        reply = _fault(request, index, draw)
        if hit("spike", draw) and reply.status == 200:  # (not a 429 of a burst)
            reply.delay_s = max(0.0, spike_s - latency_s)
        elif "spread" in faults:  # a draw of its own: the spread leaves every fault its share
            reply.delay_s = SPREAD * scale["spread"] * latency_s * random.Random(f"{seed}:{index}:spread").random()
        return reply

    def _fault(request: dict, index: int, draw: float) -> Reply:
        if bursting("429", index, half=False):
            return Reply(status=429, body=b'{"error": {"message": "rate limited"}}')
        if bursting("429_retry_after", index, half=True):
            return Reply(status=429, body=b'{"error": {"message": "rate limited"}}', headers={"Retry-After": "0.2"})
        if hit("500", draw):
            return Reply(status=500, body=b'{"error": {"message": "internal error"}}')
        if hit("html", draw):
            return Reply(status=200, body=b"<html>502 Bad Gateway</html>")
        if hit("cut", draw):
            return Reply(content="Response A opens well, but response B", finish_reason="length")
        if hit("no_verdict", draw):
            return Reply(content="Both responses have merits; I will not pick one.")
        return default_script(request, index)

    return script


def default_script(request: dict, index: int) -> Reply:
    """Pairwise requests get a verdict, GQM group requests a ranking and scores."""
    user = request["messages"][-1]["content"]
    return Reply(content=gqm_reply(user) if "### Final Ranking:" in user else preference_verdict(user))


def benchmark_script(request: dict, index: int) -> Reply:
    """The eval benchmarks' requests (bench/eval_benchmarks.py): a rating alone on the last line for a rating
    request, a label of Arena-Hard's scale for its layout, else the default verdicts."""
    user = request["messages"][-1]["content"]
    if user.startswith("Rate how well an AI assistant answered"):
        return Reply(content=f"A fair answer.\n{1 + index % 10}")
    if "<|The Start of Assistant A's Answer|>" in user:
        return Reply(content=f"Verdict: [[{('A>B', 'B>A', 'A=B', 'A>>B')[index % 4]}]]")
    return default_script(request, index)


def completion_body(content: str, model: str, finish_reason: str = "stop", usage: object = DEFAULT_USAGE) -> bytes:
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def words_usage(request: dict, content: str) -> dict:
    """A usage that varies per request: a prompt token per word of the messages plus 10, a completion token per
    word of the reply plus 3."""
    prompt = 10 + sum(len(str(m.get("content", "")).split()) for m in request["messages"])
    completion = 3 + len(content.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class ScriptedJudgeServer:
    def __init__(
        self,
        script: Callable[[dict, int], Reply] = default_script,
        latency_s: float = 0.0,
        capacity: int | None = None,
        hold_until_in_flight: int | None = None,
        hold_deadline_s: float = 120.0,
        models: dict[str, int | None] | None = None,
        tokens_per_message: int | None = None,
        refuse_over_capacity: bool = False,
        port: int = 0,
        keep_requests: bool = True,
        host: str = "127.0.0.1",
    ):
        self.script = script
        self.host = host  # another address only for a tiny run on a Ray cluster of several machines
        self.latency_s = latency_s
        self.capacity = capacity
        # With a capacity: a request arriving while `capacity` are being answered gets an immediate 429
        # without Retry-After (a rate-limited API) instead of waiting for a slot; `refused` counts them.
        self.refuse_over_capacity = refuse_over_capacity
        self.refused = 0
        # The first requests wait until this many are in flight at once (or hold_deadline_s passes):
        # a test that needs concurrency observed gets it whatever the start-up order of its clients.
        self.hold_until_in_flight = hold_until_in_flight
        self.hold_deadline_s = hold_deadline_s
        # GET /v1/models: model name -> max_model_len (None: not reported), as vLLM lists them
        self.models = {"scripted-judge": None} if models is None else models
        # POST /tokenize: served (vLLM-style) when set, counting this many tokens per message plus its words.
        self.tokens_per_message = tokens_per_message
        self.tokenized: list[dict] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.max_in_flight = 0
        self._in_flight = 0
        # Occupancy (GET /occupancy): seconds of requests answered (a slot held each, with a capacity) and
        # seconds of requests waiting for a slot. What a judge's own queue costs a step is told from the client's.
        self.busy_s = 0.0
        self.queued_s = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port: int | None = port or None
        # False: only count requests (a long soak would keep every body); ``requests`` stays empty.
        self.keep_requests = keep_requests
        self.count = 0
        # The usage this server reported in its 200 replies (valid counts only): what a client should count.
        self.usage_served = {"replies": 0, "prompt_tokens": 0, "completion_tokens": 0}

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        return self._in_flight

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        body = json.loads(raw)
        index = self.count
        self.count += 1
        if self.keep_requests:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            await self._hold_first_wave()
            if self._slots is not None and self.refuse_over_capacity and self._slots.locked():
                self.refused += 1
                return web.json_response({"error": {"message": "rate limited", "code": 429}}, status=429)
            if self._slots is None:
                return await self._timed_respond(body, index)
            arrived = time.monotonic()
            async with self._slots:
                self.queued_s += time.monotonic() - arrived
                return await self._timed_respond(body, index)
        finally:
            self._in_flight -= 1

    async def _timed_respond(self, body: dict, index: int) -> web.Response:
        began = time.monotonic()
        try:
            return await self._respond(body, index)
        finally:  # (a request whose client went away is counted until the handler ends)
            self.busy_s += time.monotonic() - began

    async def _hold_first_wave(self) -> None:
        if self.hold_until_in_flight is None or self._wave.is_set():
            return
        if self._in_flight >= self.hold_until_in_flight:
            self._wave.set()
            return
        try:
            await asyncio.wait_for(self._wave.wait(), timeout=self.hold_deadline_s)
        except asyncio.TimeoutError:
            self._wave.set()  # the wave never formed: let everything through; the test's assertion says so

    async def _respond(self, body: dict, index: int) -> web.Response:
        reply = self.script(body, index)
        if reply.hold:
            await self._released.wait()
        delay = self.latency_s + reply.delay_s
        if delay:
            await asyncio.sleep(delay)
        payload = reply.body
        if reply.content is not None:
            payload = completion_body(reply.content, body.get("model", ""), reply.finish_reason, reply.usage)
            if reply.status == 200:
                self._tally(reply.usage)
        return web.Response(
            status=reply.status, body=payload or b"", headers=reply.headers, content_type="application/json"
        )

    def _tally(self, usage: object) -> None:
        counts = [usage.get(k) if isinstance(usage, dict) else None for k in ("prompt_tokens", "completion_tokens")]
        if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            self.usage_served["replies"] += 1
            self.usage_served["prompt_tokens"] += counts[0]
            self.usage_served["completion_tokens"] += counts[1]

    async def _models(self, request: web.Request) -> web.Response:
        cards = [
            {"id": name, "object": "model", **({"max_model_len": length} if length else {})}
            for name, length in self.models.items()
        ]
        return web.json_response({"object": "list", "data": cards})

    async def _tokenize(self, request: web.Request) -> web.Response:
        """vLLM's POST /tokenize (at the server root), when ``tokens_per_message`` is set: that many tokens
        per message plus one per word; 404 otherwise, as a server without it answers."""
        if self.tokens_per_message is None:
            return web.Response(status=404, text="Not Found")
        body = await request.json()
        self.tokenized.append(body)
        messages = body.get("messages") or []
        count = sum(self.tokens_per_message + len(str(m.get("content", "")).split()) for m in messages)
        return web.json_response({"count": count, "tokens": list(range(count)), "max_model_len": 0})

    async def _stats(self, request: web.Request) -> web.Response:
        return web.Response(text=str(self.count))

    async def _occupancy(self, request: web.Request) -> web.Response:
        return web.json_response(self.occupancy())

    def occupancy(self) -> dict:
        """Requests received, seconds spent answering them (slot-seconds) and waiting for a slot, the capacity."""
        return {"requests": self.count, "busy_s": self.busy_s, "queued_s": self.queued_s, "capacity": self.capacity}

    async def _start(self) -> None:
        self._slots = asyncio.Semaphore(self.capacity) if self.capacity else None
        self._wave = asyncio.Event()
        self._released = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_get("/occupancy", self._occupancy)
        app.router.add_post("/tokenize", self._tokenize)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port or 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def start(self) -> ScriptedJudgeServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def release(self) -> None:
        """Let every held reply (``Reply(hold=True)``) go, now and from now on."""
        self._loop.call_soon_threadsafe(self._released.set)

    def kill(self) -> None:
        """Stop at once, as a crashed judge: the port refuses connections and the requests in flight get
        their connection cut (no reply). ``stop()`` afterwards is harmless."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._kill(), self._loop).result(timeout=10)

    async def _kill(self) -> None:
        for site in list(self._runner.sites):  # stop listening: new connections are refused
            await site.stop()
        # Then cut the open connections: the handlers in flight are cancelled, no grace (a timeout of 0
        # would mean none at all).
        await self._runner.server.shutdown(0.01)
        await self._runner.cleanup()
        self._runner = None

    def stop(self) -> None:
        if self._runner is not None:
            self.release()
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedJudgeServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
