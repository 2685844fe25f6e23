"""Field readers for builders: each returns the value in the shape a builder needs or raises ``BadRow``
naming the field and what was expected."""

from __future__ import annotations

import hashlib
import math
import numbers
from typing import Any, Sequence

from writing_rl.data.builder import BadRow
from writing_rl.protocols import gqm, languages

CHAT_ROLES = ("system", "user", "assistant")


def describe_value(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def text(row: dict, key: str, *, required: bool = True, allow_empty: bool = False) -> str | None:
    """A string; absent/None is an error only when ``required``."""
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise BadRow(key, f"expected a non-empty string, got {describe_value(value)}")
    return value


def text_list(row: dict, key: str, *, min_items: int = 1) -> list[str]:
    """A list of non-empty strings with at least ``min_items`` items."""
    value = row.get(key)
    if not isinstance(value, (list, tuple)):
        raise BadRow(key, f"expected a list of strings, got {describe_value(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise BadRow(key, f"item {i} must be a non-empty string, got {describe_value(item)}")
    if len(value) < min_items:
        raise BadRow(key, f"expected at least {min_items} items, got {len(value)}")
    return list(value)


def int_scores(row: dict, key: str, count: int, low: int = gqm.MIN_SCORE, high: int = gqm.MAX_SCORE) -> list[int]:
    """``count`` whole-number scores in [low, high] (7 and 7.0 both read as 7)."""
    value = row.get(key)
    if not isinstance(value, (list, tuple)):
        raise BadRow(key, f"expected a list of {count} integer scores, got {describe_value(value)}")
    if len(value) != count:
        raise BadRow(key, f"has {len(value)} scores for {count} candidates (lengths must match)")
    if all(type(item) is int for item in value) and all(low <= item <= high for item in value):
        return list(value)  # the common case, checked fast
    scores = []
    for i, item in enumerate(value):
        number = _whole_number(item)
        if number is None or not low <= number <= high:
            raise BadRow(key, f"score {i} must be an integer from {low} to {high}, got {describe_value(item)}")
        scores.append(number)
    return scores


def int_score(row: dict, key: str, low: int = gqm.MIN_SCORE, high: int = gqm.MAX_SCORE) -> int:
    number = _whole_number(row.get(key))
    if number is None or not low <= number <= high:
        raise BadRow(key, f"expected an integer score from {low} to {high}, got {describe_value(row.get(key))}")
    return number


def boolean(row: dict, key: str) -> bool:
    """true/false, 1/0, yes/no (any case); absent = false."""
    value = row.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no", ""):
        return value.strip().lower() in ("true", "1", "yes")
    raise BadRow(key, f"expected true/false, got {describe_value(value)}")


def language(row: dict, key: str) -> str | None:
    """An optional language code or name, checked against the codes GQM prompts know."""
    return _checked_text(row, key, languages.language_name)


def lang_pair(row: dict, key: str) -> str | None:
    """An optional language pair (``en-zh``), each code one GQM prompts know."""
    return _checked_text(row, key, languages.split_lang_pair)


def _checked_text(row: dict, key: str, check) -> str | None:
    value = text(row, key, required=False)
    if value is None:
        return None
    try:
        check(value)
    except ValueError as exc:
        raise BadRow(key, str(exc)) from None
    return value


def chat(row: dict, key: str) -> list[dict[str, str]]:
    """A chat: a list of {role, content} with roles system/user/assistant and string contents."""
    value = row.get(key)
    if not isinstance(value, (list, tuple)) or not value:
        raise BadRow(key, f"expected a non-empty list of {{role, content}} messages, got {describe_value(value)}")
    messages = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role") not in CHAT_ROLES:
            raise BadRow(key, f"message {i} must be a dict with role in {CHAT_ROLES}, got {describe_value(message)}")
        if not isinstance(message.get("content"), str):
            raise BadRow(key, f"message {i} content must be a string, got {describe_value(message.get('content'))}")
        messages.append({"role": message["role"], "content": message["content"]})
    return messages


def content_seed(seed: int, *parts: str | Sequence[str]) -> int:
    """A seed from the run's seed and a row's content: the same row gets the same random choices
    wherever it sits in the input, whatever the chunking or the rows rejected before it."""
    items = [str(seed)]
    for part in parts:
        items += [part] if isinstance(part, str) else part
    digest = hashlib.blake2b("\x1f".join(items).encode("utf-8"), digest_size=8)  # the seed, then \x1f + each item
    return int.from_bytes(digest.digest(), "big")


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
