"""What the HTTP client keeps per call and per request (http.py), and its counters."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from writing_rl.judge.endpoints import Endpoint
from writing_rl.judge.errors import JudgeError
from writing_rl.judge.replies import read_completion


@dataclass
class Spent:
    """What judge calls spent (a client's, or one endpoint's): docs/judges/cost.md."""

    calls: int = 0  # complete() calls sent, failed ones included
    replies: int = 0  # those that got a reply: a call's mean tokens and cost are over them
    tokens: int = 0  # usage.total_tokens (counted where not reported)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: int = 0  # replies whose tokens were counted here: the endpoint reported no usage
    cost: float = 0.0

    def add(self, reply) -> None:
        """One call; ``reply`` the ``JudgeReply`` it got, None for a call that failed."""
        self.calls += 1
        if reply is None:
            return
        self.replies += 1
        self.tokens += reply.tokens
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.estimated += reply.tokens_estimated
        self.cost += reply.cost


@dataclass
class JudgeStats:
    requests: int = 0  # HTTP requests sent
    retries: int = 0  # attempts after a failure (429s not counted: see rate_limited)
    failures: Counter = field(default_factory=Counter)
    rate_limited: int = 0  # 429s received
    concurrency_limit: int = 0  # the adaptive limit now
    limit_decreases: int = 0
    spent: Spent = field(default_factory=Spent)  # calls, tokens and cost, in all and per endpoint (shown URL)
    spent_by_endpoint: dict[str, Spent] = field(default_factory=dict)


@dataclass
class Answer:
    """What one HTTP request got: a status and body, or an error before any reply."""

    start: float
    status: int = 0
    raw: bytes = b""
    retry_after: str | None = None
    error: type[JudgeError] | None = None  # JudgeTimeout or JudgeConnectionError
    cause: str = ""
    sent_in: int = 0  # the endpoint's breaker trips when sent (EndpointPool.started)
    completion: dict | None = None  # a 200's body read (replies.read_completion)
    unreadable: str | None = None  # why a 200's body is not a chat completion

    def read(self) -> Answer:
        """A 200's body read as a chat completion (else why not)."""
        if self.status == 200:
            try:
                self.completion = read_completion(self.raw)
            except ValueError as exc:
                self.unreadable = str(exc)
        return self

    @property
    def ok(self) -> bool:
        """A chat completion came back: the request's answer."""
        return self.completion is not None


@dataclass
class Call:
    """One ``complete`` call across its requests."""

    failures: int = 0  # failed attempts so far (each used one of max_retries)
    rate_limited: int = 0
    hedges: int = 0  # copies sent because a request was slow
    limit: int = 0  # the concurrency limit when the last request was sent
    rate_limit_deadline: float | None = None
    down_deadline: float | None = None  # while no endpoint takes requests: when to give up; None otherwise
    failed_on: Endpoint | None = None
    tried: set[Endpoint] = field(default_factory=set)  # endpoints failed on since the call last backed off
    refused: set[Endpoint] = field(default_factory=set)  # endpoints that sent a 429 since the call last waited

    @property
    def attempt(self) -> int:
        return self.failures + 1

    def failed(self, endpoint: Endpoint) -> None:
        """A request failed on ``endpoint``: one of the call's retries is used."""
        self.failures += 1
        self.failed_on = endpoint
        self.tried.add(endpoint)

    def refused_by(self, endpoint: Endpoint) -> None:
        """``endpoint`` sent a 429: the next request prefers another one."""
        self.rate_limited += 1
        self.failed_on = endpoint
        self.refused.add(endpoint)

    @property
    def urgent(self) -> bool:
        """Its next request is a retry: it waits for room before the fresh ones (``limiter.Room``)."""
        return bool(self.failures or self.rate_limited)

    @property
    def avoid(self) -> set[Endpoint]:
        """Endpoints the next request goes to only when no other takes requests."""
        return self.tried | {self.failed_on} if self.failed_on is not None else self.tried


@dataclass(frozen=True)
class RateLimited:
    """A 429: wait ``wait_s`` holding the request's place, then queue again."""

    wait_s: float
