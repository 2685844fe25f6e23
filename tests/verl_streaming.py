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
