import random
from email.utils import formatdate

import pytest

from writing_rl.judge.retry import (
    MAX_RETRY_AFTER_S,
    backoff_delay,
    is_retryable_status,
    parse_retry_after,
    retry_delay,
)


@pytest.mark.parametrize(
    "status, retry",
    [
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (504, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (408, False),
        (413, False),
        (422, False),
    ],
)
def test_retryable_statuses(status, retry):
    assert is_retryable_status(status) is retry


def test_retry_after_seconds_and_dates():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("999999") == MAX_RETRY_AFTER_S
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 7, usegmt=True), now=now) == pytest.approx(7.0)
    assert parse_retry_after(formatdate(now - 7, usegmt=True), now=now) == 0.0
    for unreadable in (None, "", "soon", "Mon, 99 Foo"):
        assert parse_retry_after(unreadable) is None


def test_backoff_grows_exponentially_with_jitter_and_a_cap():
    rng = random.Random(0)
    for attempt in range(8):
        ceiling = min(10.0, 0.5 * 2**attempt)
        delays = [backoff_delay(attempt, 0.5, 10.0, rng) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert max(delays) - min(delays) > ceiling / 10  # jittered, not constant


def test_retry_after_takes_precedence_over_backoff():
    assert retry_delay(attempt=5, retry_after=2.0, base_s=10.0, max_s=60.0) == 2.0
    assert 0.5 <= retry_delay(attempt=0, retry_after=None, base_s=1.0, max_s=60.0) <= 1.0
