"""Sending samples to verl's reward workers as verl's agent loop does in streaming mode: each finished
rollout alone (one sample per ``compute_score`` call) to a random worker, in any order."""

from __future__ import annotations

import random

import ray


def stream(workers, samples, seed: int = 0) -> list[dict]:
    """Every sample alone to a random worker, in shuffled order, all in flight at once; the results in
    the samples' order (``ray.get`` raises the first failure)."""
    rng = random.Random(seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    refs = {i: rng.choice(workers).compute_score.remote(samples[i]) for i in order}
    return ray.get([refs[i] for i in range(len(samples))])


def overlapping(steps: list[list], seed: int = 0) -> list:
    """The samples of consecutive steps in the order rollouts finish under verl's asynchronous trainers:
    each step's own order shuffled, and each sample moved up to one step's length later, so the end of
    a step interleaves with the start of the next (groups of two steps in flight at once)."""
    rng = random.Random(seed)
    placed = []
    start = 0
    for step in steps:
        shuffled = list(step)
        rng.shuffle(shuffled)
        placed += [(start + i + rng.random() * len(step), sample) for i, sample in enumerate(shuffled)]
        start += len(step)
    return [sample for _, sample in sorted(placed, key=lambda pair: pair[0])]


class Continuous:
    """Every sample alone to a random worker with ``in_flight`` calls outstanding at all times: a new one
    goes as soon as one returns, so the workers are never idle (verl's asynchronous trainers: rollouts
    keep finishing while steps train). ``at``: {n: action}, run once n results have returned.

    ``run()`` returns the results in the samples' order (``ray.get`` raises the first failure); ``sent``
    and ``returned`` (indices, in order) tell an action how far the stream had got."""

    def __init__(self, workers, samples, in_flight: int, seed: int = 0, at: dict | None = None):
        self.workers, self.samples, self.in_flight = workers, samples, in_flight
        self.rng = random.Random(seed)
        self.actions = dict(at or {})
        self.sent = 0
        self.returned: list[int] = []

    def run(self) -> list[dict]:
        results: list = [None] * len(self.samples)
        pending: dict = {}
        while self.sent < len(self.samples) or pending:
            while self.sent < len(self.samples) and len(pending) < self.in_flight:
                pending[self.rng.choice(self.workers).compute_score.remote(self.samples[self.sent])] = self.sent
                self.sent += 1
            ready, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(ready[0])
            results[index] = ray.get(ready[0])
            self.returned.append(index)
            if len(self.returned) in self.actions:
                self.actions.pop(len(self.returned))()
        return results
