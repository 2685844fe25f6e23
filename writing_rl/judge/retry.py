"""Which failures to retry and how long to wait: pure functions, tested by tables."""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime

# Never wait longer than this for one Retry-After, whatever the server asks.
MAX_RETRY_AFTER_S = 600.0


def is_retryable_status(status: int) -> bool:
    """429 and 5xx are worth another attempt; any other 4xx will fail the same way again."""
    return status == 429 or status >= 500


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter: half of ``min(max_s, base_s * 2**attempt)`` fixed, half random.

    The fixed half keeps retries from hammering a struggling server; the random half spreads the
    retries of many workers that failed together.
    """
    ceiling = min(max_s, base_s * (2**attempt))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def retry_delay(attempt: int, retry_after: float | None, base_s: float, max_s: float) -> float:
    """The wait before the next attempt: the server's Retry-After when it gave one, else backoff."""
    if retry_after is not None:
        return retry_after
    return backoff_delay(attempt, base_s, max_s)
