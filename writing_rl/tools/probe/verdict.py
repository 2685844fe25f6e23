"""How a share of comparisons becomes a verdict on the judge: a Wilson 95% interval around the share,
read against the probe's threshold.

- ``flagged``: the interval's lower bound is above the threshold: the judge surely falls for the probe
  more often than the threshold allows, whatever the sampling luck;
- ``inconclusive``: the share is above the threshold but the lower bound is not: too few comparisons to
  tell; judge more rows (``--rows``);
- ``pass``: the share is at or below the threshold;
- ``no data``: nothing was compared (the probe applied to no row, every call failed or no reply could be read).

The readable share is a minimum instead: ``failed`` when the share of judge replies the reward could read is
below ``READABLE_THRESHOLD`` (the share itself, not its interval: a judge that fails it is far below it in
practice), ``pass`` at or above it, ``no data`` when no comparison reached the judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054
FLAGGED, INCONCLUSIVE, PASS, NO_DATA, FAILED = "flagged", "inconclusive", "pass", "no data", "failed"
# Position bias: a quarter of the pairs decided by where an answer stands is a judge that a policy can
# please by format rather than content. Self-consistency: a tenth of repeated calls read differently.
POSITION_THRESHOLD = 0.25
CONSISTENCY_THRESHOLD = 0.10
# A judge whose replies the reward cannot read pays losses (or ties) instead of judging: below this share of
# readable replies the probes measure the reply reader, not the judge.
READABLE_THRESHOLD = 0.8


def wilson_interval(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``hits`` out of ``n`` (95% by default); (0, 1) for n = 0."""
    if n <= 0:
        return 0.0, 1.0
    share = hits / n
    denominator = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Share:
    """``hits`` of ``n`` comparisons, its interval and its verdict against ``threshold``."""

    hits: int
    n: int
    threshold: float

    @property
    def rate(self) -> float | None:
        return self.hits / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.hits, self.n)

    @property
    def status(self) -> str:
        if not self.n:
            return NO_DATA
        if self.interval[0] > self.threshold:
            return FLAGGED
        return INCONCLUSIVE if self.hits / self.n > self.threshold else PASS

    def as_dict(self) -> dict:
        low, high = self.interval
        rate = self.rate
        return {
            "hits": self.hits,
            "n": self.n,
            "rate": None if rate is None else round(rate, 4),
            "ci95": [round(low, 4), round(high, 4)],
            "threshold": self.threshold,
            "status": self.status,
        }


def readable_share(readable: int, judged: int, threshold: float) -> dict:
    """``readable`` of the ``judged`` comparisons had a reply the reward could read; the verdict against the
    minimum ``threshold``."""
    share = readable / judged if judged else None
    low, high = wilson_interval(readable, judged)
    status = NO_DATA if share is None else FAILED if share < threshold else PASS
    return {
        "readable": readable,
        "judged": judged,
        "share": None if share is None else round(share, 4),
        "ci95": [round(low, 4), round(high, 4)],
        "threshold": threshold,
        "status": status,
    }


def parse_thresholds(items: list[str] | None, known: list[str]) -> dict[str, float]:
    """``NAME=VALUE`` pairs (``--threshold``) -> {name: value}; names are probes, ``position-bias``,
    ``self-consistency`` or ``readable`` (a minimum), values in [0, 1)."""
    found = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--threshold {item!r}: write NAME=VALUE, e.g. pad-4x=0.3")
        if name not in known:
            raise ValueError(f"--threshold {item!r}: unknown name {name!r}; known: {', '.join(known)}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--threshold {item!r}: {value!r} is not a number") from None
        if not 0 <= number < 1:
            raise ValueError(f"--threshold {item!r}: a share in [0, 1), got {number}")
        found[name] = number
    return found
