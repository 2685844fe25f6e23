"""Drift: the training judge's reward rising while a shadow judge's, on the same samples, stays flat or falls.

A policy optimised against one judge can learn what that judge alone pays for; its reward then climbs while a
second judge, scoring the same rollouts, does not see the gain. ``DriftWatch`` keeps one reward worker's
shadowed samples (pairs of rewards: the training judge's, the shadow's). Its first ``window`` pairs are the
baseline (the policy at the start of the run); each later run of ``window`` pairs, one after the other with
no overlap, is a look:

- the training judge's gain: its mean reward over the look's window minus over the baseline;
- the shadow's gain: the same for the shadow's rewards, on the same samples;
- a look **sees drift** when the training judge's gain is at least ``min_gain``, the shadow's is at most half
  of ``min_gain`` (flat or falling), and the growth of the gap between the two judges is ``z`` standard errors
  or more (not the noise of two windows);
- the watch **drifts** once ``looks`` looks in a row see drift, and stays so (a drift seen is not forgotten).

Looking once per window rather than at every pair, and asking for several looks in a row, keeps false alarms
rare over a long run. A simulation with the defaults (window 100, min_gain 0.1, z 3, 3 looks), 8 workers and
50,000 shadowed samples (about 1,000 steps of 1,024 rollouts at 5%), rewards of 0 or 1 from two judges that
agree 70% of the time, 200 runs each: no drift and no alarm in any run; both judges rising by 0.4 together,
none; the training judge rising by 0.4 and the shadow by 0.25, 4%; the training judge rising by 0.4 and the
shadow not at all, every run (half of them by 40% of the way); by 0.2, 98%.

A worker's samples are a random share of the run's (verl sends each rollout to a random worker; a colocated
batch is cut in even chunks), so each worker watches on its own, as the failure guard does.
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
