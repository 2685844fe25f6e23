"""One line for an error a user can act on: what failed and what to change (``writing-rl --debug`` shows
the traceback instead)."""

from __future__ import annotations

import json

from .judge.base import JudgeError, JudgeHTTPError

USAGE = 2  # exit code: the command, its config or its inputs are wrong
FAILED = 1  # exit code: the run itself failed (judge, crash)

_HTTP_HINTS = {
    400: "the judge refused the request: check judge.model, judge.max_tokens and the prompt length (writing-rl preflight)",
    401: "the judge refused the API key: set the variable named by --api-key-env / judge.api_key_env",
    403: "the judge refused the API key: set the variable named by --api-key-env / judge.api_key_env",
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


def judge_message(body: str) -> str:
    """The judge's own words from an OpenAI-style error body, else the body's start."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return body.strip()[:300]
    if isinstance(error, dict):
        return str(error.get("message") or error)[:300]
    return str(error)[:300]


def describe(exc: BaseException) -> tuple[int, str]:
    """(exit code, one line) for ``exc``; a wrapper's ``note`` (what was kept, how to resume) is added."""
    code, line = _describe(root_cause(exc))
    note = getattr(exc, "note", None)
    return code, f"{line}. {note}" if note else line


def _describe(cause: BaseException) -> tuple[int, str]:
    if isinstance(cause, JudgeHTTPError):
        body = cause.cause.split(": ", 1)[1] if ": " in cause.cause else cause.cause
        hint = _HTTP_HINTS.get(cause.status, "the judge failed: check its logs, or retry later")
        return FAILED, f"judge {cause.endpoint} answered HTTP {cause.status}: {judge_message(body)} ({hint})"
    if isinstance(cause, JudgeError):
        return FAILED, str(cause)
    if isinstance(cause, FileNotFoundError):
        return USAGE, f"no such file or directory: {cause.filename or cause}"
    if isinstance(cause, KeyError):  # str() of a KeyError is the quoted key
        return USAGE, str(cause.args[0]) if cause.args else "KeyError"
    if isinstance(cause, ValueError):
        return USAGE, str(cause)
    return FAILED, f"{type(cause).__name__}: {cause} (rerun with --debug for the traceback)"
