"""Drift: the training judge's reward rising while a shadow judge's, on the same samples, stays flat or falls.

``DriftWatch`` keeps one reward worker's shadowed samples (pairs of rewards: the training judge's, the shadow's).
Its first ``window`` pairs are the baseline; each later ``window`` of pairs, with no overlap, is a look. The
rule, why it looks once per window, and the simulation behind the defaults:
docs/trust-your-judge.md#drift-and-what-stops-the-run. Each worker watches its own samples, a random share of
the run's (verl sends each rollout to a random worker; a colocated batch is cut in even chunks), as the failure
guard does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class DriftReading:
    """The watch's last look: ``ready`` once it had one; ``drifting`` once ``looks`` in a row saw drift."""

    ready: bool = False
    train_gain: float = 0.0
    shadow_gain: float = 0.0
    z: float = 0.0
    drifting: bool = False

    def describe(self) -> str:
        return (
            f"the training judge's mean reward rose by {self.train_gain:+.3f} since this worker's first shadowed "
            f"samples, the shadow judge's by {self.shadow_gain:+.3f} on the same samples "
            f"(gap growth {self.train_gain - self.shadow_gain:.3f}, z={self.z:.1f})"
        )


class DriftWatch:
    def __init__(self, window: int, min_gain: float, z: float, looks: int = 3):
        self.window, self.min_gain, self.z, self.looks = window, min_gain, z, looks
        self.baseline: list[tuple[float, float]] = []
        self.current: list[tuple[float, float]] = []
        self.streak = 0  # looks in a row that saw drift
        self.reading = DriftReading()

    def add(self, train_reward: float, shadow_reward: float) -> DriftReading:
        """One shadowed sample's two rewards (finite numbers: the caller leaves out any other)."""
        pair = (float(train_reward), float(shadow_reward))
        if len(self.baseline) < self.window:
            self.baseline.append(pair)
            return self.reading
        self.current.append(pair)
        if len(self.current) == self.window:
            self.reading = self._look(self.current)
            self.current = []
        return self.reading

    def _look(self, window: list[tuple[float, float]]) -> DriftReading:
        train_gain = _mean(t for t, _ in window) - _mean(t for t, _ in self.baseline)
        shadow_gain = _mean(s for _, s in window) - _mean(s for _, s in self.baseline)
        growth = train_gain - shadow_gain
        error = math.sqrt(
            (_variance([t - s for t, s in self.baseline]) + _variance([t - s for t, s in window])) / self.window
        )
        z = growth / error if error > 0 else (math.inf if growth > 0 else 0.0)
        seen = train_gain >= self.min_gain and shadow_gain <= self.min_gain / 2 and z >= self.z
        self.streak = self.streak + 1 if seen else 0
        drifting = self.reading.drifting or self.streak >= self.looks
        return DriftReading(True, train_gain, shadow_gain, min(z, 1e9), drifting)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _variance(values: list[float]) -> float:
    mean = _mean(values)
    return sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1)
