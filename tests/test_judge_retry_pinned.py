"""The waits after a 429 and between retries (writing_rl/judge/retry.py), by their bounds: each wait is drawn
between half its ceiling and the ceiling, so a wait outside those bounds is a wrong ceiling."""

import time
from email.utils import formatdate

import pytest

from writing_rl.judge.retry import RATE_LIMIT_FLOOR_S, backoff_delay, parse_retry_after, rate_limit_wait


class Extremes:
    """An rng whose draws are the top (or the bottom) of the range asked for."""

    def __init__(self, top: bool):
        self.top = top

    def uniform(self, low: float, high: float) -> float:
        return high if self.top else low


def test_backoff_spans_half_its_ceiling_to_the_whole_of_it():
    assert backoff_delay(2, 0.5, 10.0, Extremes(top=True)) == 2.0
    assert backoff_delay(2, 0.5, 10.0, Extremes(top=False)) == 1.0
    assert backoff_delay(9, 0.5, 10.0, Extremes(top=True)) == 10.0  # the cap


def waits(refusals: int, latency: float | None, base_s: float = 0.1, max_s: float = 10.0) -> list[float]:
    return [rate_limit_wait(refusals, None, latency, base_s, max_s) for _ in range(200)]


@pytest.mark.parametrize(
    "refusals, latency, ceiling",
    [
        (1, None, 0.1),  # no latency known yet: base_s
        (1, 0.3, 0.3),  # about when a request in service ends
        (2, 0.3, 0.6),  # refused again: growing
        (3, 0.3, 1.2),
        (4, 0.3, 2.4),
        (9, 0.3, 2.4),  # at most 8 times the latency: the limiter, not this wait, keeps the load down
        (9, 2.0, 10.0),  # never over max_s
    ],
)
def test_the_wait_after_a_429_without_retry_after_grows_from_the_judges_latency(refusals, latency, ceiling):
    drawn = waits(refusals, latency)
    assert all(ceiling / 2 <= w <= ceiling for w in drawn)
    assert max(drawn) - min(drawn) > ceiling / 10  # jittered: workers refused together do not return together


def test_the_servers_retry_after_is_the_wait_after_a_429_above_the_floor():
    assert rate_limit_wait(1, 5.0, 0.2, 0.1, 10.0) == 5.0
    assert rate_limit_wait(7, 0.5, None, 0.1, 10.0) == 0.5
    assert rate_limit_wait(1, 0.0, None, 0.1, 10.0) == RATE_LIMIT_FLOOR_S  # "Retry-After: 0": no tight loop
    assert rate_limit_wait(1, 0.0, 2.0, 0.1, 10.0) == pytest.approx(0.2)  # a tenth of the latency


def test_an_http_date_retry_after_is_read_against_the_clock_when_no_time_is_given():
    waited = parse_retry_after(formatdate(time.time() + 1000, usegmt=True), 2000.0)
    assert waited is not None and 900 < waited <= 1000
