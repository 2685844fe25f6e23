"""Reading an OpenAI chat completion: its text and refusal, whatever shape the content has; the typed error
of a reply that is not one."""

from __future__ import annotations

import json

from writing_rl.judge.errors import JudgeContextLengthError, JudgeHTTPError, is_context_length_error
from writing_rl.judge.usage import reported_usage


def http_error(endpoint: str, status: int, body: str, attempts: int) -> JudgeHTTPError:
    """The typed error for a non-200 reply: a prompt too long for the judge's context has its own."""
    if is_context_length_error(status, body):
        return JudgeContextLengthError(endpoint, status, body, attempts)
    return JudgeHTTPError(endpoint, status, body, attempts)


def read_completion(raw: bytes) -> dict:
    """``text``, ``finish_reason``, ``refusal`` and the token counts (``usage.reported_usage``) of a
    chat-completion body; a ValueError says why it is not one."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        excerpt = raw[:200].decode(errors="replace")
        raise ValueError(f"not a chat completion ({type(exc).__name__}): {excerpt!r}") from None
    finish_reason = choice.get("finish_reason")
    finish_reason = finish_reason if isinstance(finish_reason, str) else None
    try:
        text, refusal = message_content(message, finish_reason)
    except ValueError as exc:
        raise ValueError(f"no reply text: {exc}") from None
    return {"text": text, "finish_reason": finish_reason, "refusal": refusal, **reported_usage(data)}


def _found(value: object) -> str:
    """What a field holds, for an error message: null, or its JSON type and start."""
    if value is None:
        return "null"
    return f"{type(value).__name__} {json.dumps(value, ensure_ascii=False, default=str)[:80]}"


def _part_text(part: object) -> tuple[str, str]:
    """(text, refusal) of one OpenAI content part: a string, {"type": "text", "text": ...} or
    {"type": "refusal", "refusal": ...}; other part types (reasoning, images) add nothing."""
    if isinstance(part, str):
        return part, ""
    if not isinstance(part, dict):
        raise ValueError(f"a content part is {_found(part)}")
    kind = part.get("type", "text")
    value = part.get(kind) if kind in ("text", "refusal") else ""
    if not isinstance(value, str):
        raise ValueError(f"a {kind!r} content part has {kind} {_found(value)}")
    return (value, "") if kind == "text" else ("", value)


def message_content(message: object, finish_reason: str | None = None) -> tuple[str, str | None]:
    """(text, refusal) of a reply's message: content is a string or a list of parts (joined). A
    non-empty refusal is kept, and excuses unreadable content (text ""); else a ValueError names what was found."""
    if not isinstance(message, dict):
        raise ValueError(f"message is {_found(message)}")
    refusal = message.get("refusal")
    refusal = refusal if isinstance(refusal, str) and refusal.strip() else None
    try:
        text, part_refusal = _content_text(message)
    except ValueError as exc:
        if refusal:
            return "", refusal
        if (finish_reason or "").lower() == "content_filter":  # e.g. Azure's output filter: no content
            return "", "the judge's output was filtered (finish_reason=content_filter)"
        fields = ", ".join(map(str, message))
        raise ValueError(f"{exc} (finish_reason={finish_reason!r}, message fields: {fields})") from None
    return text, refusal or part_refusal


def _content_text(message: dict) -> tuple[str, str | None]:
    content = message.get("content")
    if isinstance(content, str):
        return content, None
    if isinstance(content, list):
        parts = [_part_text(part) for part in content]
        refused = "".join(r for _, r in parts)
        return "".join(t for t, _ in parts), refused if refused.strip() else None
    raise ValueError("message has no content" if "content" not in message else f"message content is {_found(content)}")
