"""Reading the message of an OpenAI chat completion: its text and refusal, whatever shape the content has."""

from __future__ import annotations

import json


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
