"""Which failures to retry and how long to wait: pure functions, tested by tables."""

from __future__ import annotations

import math
import random
import time
from datetime import timezone
from email.utils import parsedate_to_datetime

# The least wait after a 429, even one saying ``Retry-After: 0``: else a judge answering every request
# so would be sent a tight loop of requests until rate_limit_wait_s. 10 ms, or a tenth of the judge's
# long-run latency when that is longer (a slot frees about once per latency / limit anyway).
RATE_LIMIT_FLOOR_S = 0.01
RATE_LIMIT_FLOOR_LATENCY = 0.1


def is_retryable_status(status: int) -> bool:
    """429 and 5xx are worth another attempt; any other 4xx will fail the same way again."""
    return status == 429 or status >= 500


def parse_retry_after(value: str | None, max_s: float, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), within [0, max_s];
    None if absent or unreadable (NaN included)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = _seconds_until(value, time.time() if now is None else now)
    if seconds is None or math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), max_s)  # inf and -inf land on the bounds


def _seconds_until(http_date: str, now: float) -> float | None:
    try:
        when = parsedate_to_datetime(http_date)
        if when.tzinfo is None:  # "-0000": UTC by RFC 5322, not this machine's local time
            when = when.replace(tzinfo=timezone.utc)
        return when.timestamp() - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


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


def rate_limit_wait(
    refusals: int, retry_after: float | None, latency: float | None, base_s: float, max_s: float
) -> float:
    """The wait after a call's ``refusals``-th 429: the server's Retry-After, else about when a request in
    service ends (the endpoint's usual ``latency``; ``base_s`` before it has one), growing for a call
    refused again and again (the limiter, not this wait, keeps the load down); never under the floor."""
    if retry_after is None:
        retry_after = backoff_delay(min(refusals - 1, 3), latency or base_s, max_s)
    return max(retry_after, RATE_LIMIT_FLOOR_S, RATE_LIMIT_FLOOR_LATENCY * (latency or 0.0))
