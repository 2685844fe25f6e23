"""Measures of the judge over a tournament, logged beside the reward, never paid."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

from writing_rl.tournament.aggregation import pair_outcomes


def intransitive_triples(n: int, results: Iterable[tuple[int, int, float]]) -> int:
    """Triples of players whose pair-level net outcomes (aggregation.pair_outcomes) form a cycle a > b > c > a,
    each counted once; a tied or unplayed pair breaks a cycle."""
    beats = set()
    for (a, b), outcome in pair_outcomes(n, results).items():
        if outcome != 0.5:
            beats.add((a, b) if outcome == 1.0 else (b, a))
    return sum(
        {(a, b), (b, c), (c, a)} <= beats or {(a, c), (c, b), (b, a)} <= beats for a, b, c in combinations(range(n), 3)
    )


def position_consistency(both_orders: Iterable[tuple[float, float]]) -> float | None:
    """The share of pairs judged in both orders whose two outcomes agree. Each item is one pair's
    (score as judged in the first order, score as judged in the swapped order), both from the same player's
    view (the swapped call's raw score flipped back: 1 - score). None when no pair was judged in both orders."""
    pairs = list(both_orders)
    if not pairs:
        return None
    return sum(abs(first - second) < 1e-9 for first, second in pairs) / len(pairs)
