"""A judge call's typed failures (every one a ``JudgeError``), and reading a context-length refusal."""

from __future__ import annotations

import json
import re


class JudgeError(Exception):
    """The judge gave no usable reply after all retries. ``endpoint`` never contains credentials."""

    kind = "error"
    # What the call met before it failed (the client sets them): 429s, its concurrency limit, hedges sent.
    rate_limited = 0
    concurrency_limit = 0
    hedges = 0

    def __init__(self, endpoint: str, cause: str, attempts: int = 1):
        self.endpoint = endpoint
        self.cause = cause
        self.attempts = attempts
        super().__init__(f"judge at {endpoint} failed after {attempts} attempt(s): {cause}")


class JudgeTimeout(JudgeError):
    kind = "timeout"


class JudgeConnectionError(JudgeError):
    kind = "connection"


class JudgeUnavailable(JudgeConnectionError):
    """Every endpoint was left out as failing for ``judge.all_down_timeout_s``; ``endpoint`` lists them."""

    kind = "all_endpoints_down"


class JudgeRateLimited(JudgeError):
    """The judge kept answering 429 for longer than ``judge.rate_limit_wait_s``."""

    kind = "rate_limited"


class JudgeHTTPError(JudgeError):
    kind = "http"

    def __init__(self, endpoint: str, status: int, body: str, attempts: int = 1):
        self.status = status
        super().__init__(endpoint, self._cause(status, body), attempts)

    def _cause(self, status: int, body: str) -> str:
        return f"HTTP {status}: {body[:300]}"


# How endpoints refuse a prompt longer than the model's context (matched lowercased).
_CONTEXT_STATUSES = (400, 413, 422)
_CONTEXT_PHRASES = (
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI, vLLM, Mistral
    "is longer than the model's context length",  # SGLang, Together
    "is longer than the maximum model length",  # vLLM's engine: "The decoder prompt (length N) ..."
    "prompt is too long",  # Anthropic-compatible endpoints
    "input is too long",
)
# The token counts in those messages; the first pattern that matches gives the number.
_CONTEXT_NUMBERS = {
    "max_context": (
        r"maximum context length is (\d+)",
        r"model's context length \((\d+)",
        r"maximum model length of (\d+)",
        r"> (\d+) maximum",
        r"(\d+) maximum context length",
    ),
    "requested": (r"you requested (?:about )?(\d+) tokens", r"for a total of at least (\d+) tokens"),
    "prompt_tokens": (
        r"\((\d+) in the messages",
        r"(\d+) input tokens",
        r"messages resulted in (\d+) tokens",
        r"the input \((\d+) tokens\)",
        r"prompt \(length (\d+)\)",
        r"prompt is too long: (\d+) tokens",
        r"prompt contains (\d+) tokens",
        r"\((\d+) of text input",
    ),
    "completion_tokens": (
        r"(\d+) in the completion",
        r"requested (\d+) output tokens",
        r"is too large: (\d+)",  # vLLM: "'max_tokens' or 'max_completion_tokens' is too large: N"
        r"(\d+) in the output",
    ),
}


def is_context_length_error(status: int, body: str) -> bool:
    """Whether an error reply says the prompt plus max_tokens do not fit the judge's context."""
    lowered = body.lower()
    return status in _CONTEXT_STATUSES and any(phrase in lowered for phrase in _CONTEXT_PHRASES)


def context_length_numbers(body: str) -> dict[str, int | None]:
    """``max_context``, ``requested``, ``prompt_tokens``, ``completion_tokens`` as the message states them."""
    numbers: dict[str, int | None] = {}
    for name, patterns in _CONTEXT_NUMBERS.items():
        found = (re.search(pattern, body, re.IGNORECASE) for pattern in patterns)
        match = next((m for m in found if m), None)
        numbers[name] = int(match.group(1)) if match else None
    return numbers


def _judge_words(body: str, limit: int = 200) -> str:
    """The message of an OpenAI-style error body (else the body) on one line: the judge's own words
    without the JSON around them."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    said = error.get("message") if isinstance(error, dict) else None
    if not isinstance(said, str):
        said = data.get("message") if isinstance(data, dict) else None
    return " ".join((said if isinstance(said, str) else body).split())[:limit]


class JudgeContextLengthError(JudgeHTTPError):
    """The judge refused the request as longer than its context: a configuration error, never retried.
    The token counts are those the judge's message states (None where it states none)."""

    kind = "context_length"

    def __init__(self, endpoint: str, status: int, body: str, attempts: int = 1):
        self.said = _judge_words(body, limit=1000)  # what the judge said, without the advice added below
        numbers = context_length_numbers(body)
        self.max_context: int | None = numbers["max_context"]
        self.requested: int | None = numbers["requested"]
        self.prompt_tokens: int | None = numbers["prompt_tokens"]
        self.completion_tokens: int | None = numbers["completion_tokens"]
        super().__init__(endpoint, status, body, attempts)

    def _counts(self) -> str:
        """E.g. "judge context 8192 tokens, requested 9000 tokens = 8488 prompt + 512 completion"."""
        terms = ((self.prompt_tokens, "prompt"), (self.completion_tokens, "completion"))
        split = " + ".join(f"{n} {what}" for n, what in terms if n is not None)
        parts = [] if self.max_context is None else [f"judge context {self.max_context} tokens"]
        if self.requested is not None:
            parts.append(f"requested {self.requested} tokens" + (f" = {split}" if split else ""))
        elif split:
            parts.append(f"{split} tokens")
        return ", ".join(parts) or "the judge's message states no token counts"

    def _cause(self, status: int, body: str) -> str:
        return (
            f"HTTP {status}: context length exceeded, a configuration error (not retried): the judge prompt "
            f"(request + responses) plus judge.max_tokens exceed the judge's context ({self._counts()}). "
            "Lower actor_rollout_ref.rollout.response_length / data.max_response_length, lower "
            "reward.reward_kwargs.judge.max_tokens, or serve the judge with a longer max_model_len. "
            f"The judge said: {_judge_words(body)!r}"
        )


class JudgeResponseError(JudgeError):
    """HTTP 200 but not a chat completion we can read (bad JSON, no choices, no text)."""

    kind = "bad_response"


class JudgeBudgetExceeded(JudgeError):
    """A call would pass this client's share of ``judge.budget``: refused before it is sent. It stops the
    step whatever ``on_judge_error`` says (reward_loop/scoring.py ``is_configuration_error``)."""

    kind = "budget"

    def __init__(self, endpoint: str, cause: str):
        super().__init__(endpoint, cause, attempts=0)
        self.args = (f"judge budget reached, call to {endpoint} not sent: {cause}",)

    def __str__(self) -> str:
        return self.args[0]
