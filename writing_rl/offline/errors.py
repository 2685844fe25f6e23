"""One line for an error a user can act on: what failed and what to change (``writing-rl --debug`` shows
the traceback instead)."""

from __future__ import annotations

import json
import re

from writing_rl.judge.errors import (
    JudgeConnectionError,
    JudgeContextLengthError,
    JudgeError,
    JudgeHTTPError,
    JudgeTimeout,
)


class JudgeFailures(RuntimeError):
    """Some judge calls of an offline tool failed after their retries; nothing was written (successes stay
    cached). Its message is the one line to print."""


USAGE = 2  # exit code: the command, its config or its inputs are wrong
FAILED = 1  # exit code: the run itself failed (judge, crash)

_HTTP_HINTS = {
    400: "the judge refused the request: check judge.model, judge.max_tokens and the prompt length (writing-rl preflight)",
    401: "the judge refused the API key: set the variable judge.api_key_env names (--api-key-env where a command has it)",
    403: "the judge refused the API key: set the variable judge.api_key_env names (--api-key-env where a command has it)",
    404: "check --judge-url (it ends with the API root, e.g. http://host:8000/v1) and --judge-model",
    422: "the judge refused the request's fields: check judge.extra_body and the sampling settings",
}


def root_cause(exc: BaseException) -> BaseException:
    """The error under Ray's task wrapper and our step-stopping wrappers."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None) if type(exc).__name__.startswith("RayTaskError") else None
        inner = inner or (exc.__cause__ if type(exc).__name__ in ("JudgeFailure", "ScoreInterrupted") else None)
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


# The message of an error body cut short (JudgeHTTPError keeps 300 characters of it).
_MESSAGE_FIELD = re.compile(r'"(?:message|detail)"\s*:\s*"((?:[^"\\]|\\.)*)')


def judge_message(body: str, limit: int = 300) -> str:
    """The judge's own words in an error body: OpenAI's and newer vLLM's {"error": {"message"}}, older
    vLLM's {"message"}, FastAPI's {"detail"} (e.g. 404 for a URL without /v1); else the body's start."""
    try:
        data = json.loads(body)
    except ValueError:
        found = _MESSAGE_FIELD.search(body)
        said = found.group(1).replace('\\"', '"') if found else body
    else:
        error = data.get("error") if isinstance(data, dict) else None
        said = error.get("message") if isinstance(error, dict) else error
        if not said and isinstance(data, dict):
            said = data.get("message") or data.get("detail")
    return " ".join(str(said or body).split())[:limit]  # one line, even from an HTML error page


def judge_error_line(err: JudgeError) -> str:
    """One line for a judge failure after retries: what the judge said (for HTTP: status and message)
    and what to change. Shared by every offline tool (`writing-rl score` through the CLI)."""
    if isinstance(err, JudgeContextLengthError):
        return f"judge {err.endpoint} answered HTTP {err.status}: {err.cause.split(': ', 1)[1]}"
    if isinstance(err, JudgeHTTPError):
        body = err.cause.split(": ", 1)[1] if ": " in err.cause else err.cause
        hint = _HTTP_HINTS.get(err.status, "the judge failed: check its logs, or retry later")
        return f"judge {err.endpoint} answered HTTP {err.status}: {judge_message(body)} ({hint})"
    if isinstance(err, JudgeConnectionError):
        return f"{err} (is the judge up at that address? check --judge-url / judge.base_url)"
    if isinstance(err, JudgeTimeout):
        return f"{err} (the judge is slow or overloaded: raise judge.timeout_s or lower judge.max_concurrency)"
    return str(err)


def describe_error(exc: BaseException) -> tuple[int, str]:
    """(exit code, one line) for ``exc``; a wrapper's ``note`` (what was kept, how to resume) is added."""
    code, line = _describe(root_cause(exc))
    note = getattr(exc, "note", None)
    return code, f"{line}. {note}" if note else line


def _describe(cause: BaseException) -> tuple[int, str]:
    if isinstance(cause, KeyboardInterrupt):
        return 130, "interrupted"
    if isinstance(cause, JudgeError):
        return FAILED, judge_error_line(cause)
    if isinstance(cause, JudgeFailures):
        return FAILED, str(cause)
    if isinstance(cause, FileNotFoundError):
        return USAGE, f"no such file or directory: {cause.filename}" if cause.filename else str(cause)
    if isinstance(cause, KeyError):  # str() of a KeyError is the quoted key
        return USAGE, str(cause.args[0]) if cause.args else "KeyError"
    if isinstance(cause, ValueError):
        return USAGE, str(cause)
    return FAILED, f"{type(cause).__name__}: {cause} (rerun with --debug for the traceback)"
