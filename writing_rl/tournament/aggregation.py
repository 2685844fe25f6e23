"""Per-player rewards in [0, 1] from the judged games of one group, None for a player with no results (the
caller pays it a loss), so a failed player is never paid more than a loss."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from writing_rl.tournament.schedules import ordered

AGGREGATIONS = ("win_rate", "copeland", "bradley_terry")


class Result(NamedTuple):
    """One judged game: score 1.0 when i beat j, 0.5 a tie, 0.0 when j beat i (a game judged in both orders
    gives two results, or one combined score in between; every result counts)."""

    i: int
    j: int
    score: float


def checked(n: int, results: Iterable[tuple[int, int, float]]) -> list[Result]:
    out = [Result(int(i), int(j), float(score)) for i, j, score in results]
    for r in out:
        if r.i == r.j or not (0 <= r.i < n and 0 <= r.j < n):
            raise ValueError(f"result {r}: players must be two different indices in 0..{n - 1}")
        if not 0.0 <= r.score <= 1.0:
            raise ValueError(f"result {r}: the score must lie in [0, 1]")
    return out


def _means(score: list[float], games: list[int]) -> list[float | None]:
    return [s / g if g else None for s, g in zip(score, games)]


def pair_outcomes(n: int, results: Iterable[tuple[int, int, float]]) -> dict[tuple[int, int], float]:
    """Each pair that met, (a, b) with a < b: 1.0 when a's scores over all their results sum above b's, 0.5
    when equal, 0.0 when below."""
    totals: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in checked(n, results):
        pair = ordered(r.i, r.j)
        totals[pair][0] += r.score if r.i == pair[0] else 1.0 - r.score
        totals[pair][1] += 1.0
    return {pair: 0.5 if abs(2 * s - g) < 1e-9 else float(2 * s > g) for pair, (s, g) in totals.items()}


def win_rate(n: int, results: Iterable[tuple[int, int, float]]) -> list[float | None]:
    """A player's mean score over its results."""
    score, games = [0.0] * n, [0] * n
    for r in checked(n, results):
        score[r.i] += r.score
        score[r.j] += 1.0 - r.score
        games[r.i] += 1
        games[r.j] += 1
    return _means(score, games)


def copeland(n: int, results: Iterable[tuple[int, int, float]]) -> list[float | None]:
    """Copeland's score over [0, 1]: a player's mean over its opponents of the pair's net outcome (a won pair 1,
    a tied pair 0.5, a lost pair 0), however many results each pair has."""
    score, games = [0.0] * n, [0] * n
    for (a, b), outcome in pair_outcomes(n, results).items():
        score[a] += outcome
        score[b] += 1.0 - outcome
        games[a] += 1
        games[b] += 1
    return _means(score, games)


def bradley_terry_strengths(
    n: int,
    results: Iterable[tuple[int, int, float]],
    prior: float = 1.0,
    iterations: int = 10_000,
    tol: float = 1e-9,
) -> list[float]:
    """Maximum-likelihood strengths p for P(i beats j) = p_i / (p_i + p_j), a tie half a win to each side, each
    player also credited `prior` games, half of them won, against a virtual opponent of strength 1. That
    opponent fixes the scale (so no renormalisation: it would move the fit off the maximum): a player with no
    results sits at 1, an unbeaten or winless one stays finite. Hunter's (2004) MM iteration,
    p_i <- W_i / sum_j n_ij / (p_i + p_j) with the virtual games in W_i and the sum, until no strength moves by
    a relative tol, or `iterations` rounds."""
    if prior <= 0:
        raise ValueError(f"bradley_terry: prior must be positive, not {prior}")
    wins, games = np.full(n, prior / 2), np.zeros((n, n))
    for r in checked(n, results):
        wins[r.i] += r.score
        wins[r.j] += 1.0 - r.score
        games[r.i, r.j] += 1
        games[r.j, r.i] += 1
    p = np.ones(n)
    for _ in range(iterations):
        new = wins / (prior / (p + 1.0) + (games / (p[:, None] + p[None, :])).sum(axis=1))
        moved = np.max(np.abs(new - p) / p, initial=0.0)
        p = new
        if moved < tol:
            break
    return p.tolist()


def bradley_terry(
    n: int,
    results: Iterable[tuple[int, int, float]],
    prior: float = 1.0,
    iterations: int = 10_000,
    tol: float = 1e-9,
) -> list[float | None]:
    """A player's expected score under the fitted strengths against the group's other players with results:
    the mean over them of p_i / (p_i + p_j), in (0, 1)."""
    results = checked(n, results)
    p = bradley_terry_strengths(n, results, prior, iterations, tol)
    present = sorted({x for r in results for x in (r.i, r.j)})
    return [
        sum(p[i] / (p[i] + p[j]) for j in present if j != i) / (len(present) - 1) if i in present else None
        for i in range(n)
    ]


_BY_NAME = {"win_rate": win_rate, "copeland": copeland, "bradley_terry": bradley_terry}


def aggregate(name: str, n: int, results: Iterable[tuple[int, int, float]], **kwargs) -> list[float | None]:
    """The aggregation called `name` (one of AGGREGATIONS); kwargs go to it (bradley_terry's prior, ...)."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown tournament aggregation {name!r}: choose one of {', '.join(AGGREGATIONS)}")
    return _BY_NAME[name](n, results, **kwargs)
