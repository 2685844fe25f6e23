"""Drift: the training judge's reward rising while a shadow judge's, on the same samples, does not.

A policy optimised against one judge can learn what that judge alone pays for; its reward then climbs
while a second judge, scoring the same rollouts, does not see the gain. ``DriftWatch`` keeps one reward
worker's shadowed samples (pairs of rewards: the training judge's, the shadow's) and compares its latest
``window`` pairs with its first ``window``, the policy at the start of the run:

- the training judge's gain: the mean training reward of the latest window minus that of the first;
- the shadow's gain: the same for the shadow's rewards;
- drift: the training judge's gain is at least ``min_gain`` more than the shadow's (so with the training
  reward up by ``min_gain``, the shadow's is flat or falling), and that growth of the gap between the two
  judges is ``z`` standard errors or more: not the noise of two windows.

A worker's samples are a random share of the run's (verl sends each rollout to a random worker; a colocated
batch is cut in even chunks), so each worker watches on its own, as the failure guard does.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class DriftReading:
    """Where a worker's watch stands: ``ready`` once it holds two windows of pairs."""

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
    def __init__(self, window: int, min_gain: float, z: float):
        self.window, self.min_gain, self.z = window, min_gain, z
        self.first: list[tuple[float, float]] = []
        self.latest: deque[tuple[float, float]] = deque(maxlen=window)
        self.pairs = 0

    def add(self, train_reward: float, shadow_reward: float) -> DriftReading:
        pair = (float(train_reward), float(shadow_reward))
        self.pairs += 1
        if len(self.first) < self.window:
            self.first.append(pair)
        else:
            self.latest.append(pair)
        return self.reading()

    def reading(self) -> DriftReading:
        if len(self.latest) < self.window:
            return DriftReading()
        train_gain = _mean(t for t, _ in self.latest) - _mean(t for t, _ in self.first)
        shadow_gain = _mean(s for _, s in self.latest) - _mean(s for _, s in self.first)
        growth = train_gain - shadow_gain
        error = math.sqrt(
            _variance([t - s for t, s in self.first]) / self.window
            + _variance([t - s for t, s in self.latest]) / self.window
        )
        z = growth / error if error > 0 else (math.inf if growth > 0 else 0.0)
        drifting = growth >= self.min_gain and train_gain >= self.min_gain and z >= self.z
        return DriftReading(True, train_gain, shadow_gain, min(z, 1e9), drifting)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _variance(values: list[float]) -> float:
    mean = _mean(values)
    return sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1)
