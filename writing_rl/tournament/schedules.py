"""Who meets whom among the n answers (players 0..n-1) of one prompt: games are pairs (i, j) with i < j."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence

SCHEDULES = ("round_robin", "k_opponents", "swiss", "single_elimination")
ADAPTIVE = ("swiss", "single_elimination")  # schedules whose later games depend on the results so far
SEARCH_BUDGET = 20_000  # pairing steps a Swiss round may spend looking for a rematch-free pairing


def ordered(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def round_robin(n: int) -> list[tuple[int, int]]:
    """Every unordered pair once: n(n-1)/2 games."""
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def k_opponents(n: int, k: int, rng: random.Random) -> list[tuple[int, int]]:
    """Each player meets k distinct opponents (k capped at n-1): ceil(n*k/2) games, no pair twice.

    The players sit on a circle in random order, each joined to the players 1..floor(k/2) seats on. An odd k
    adds one game per player: across the circle when n is even; when n is odd, along the cycle of jumps of
    (n-1)/2 seats (coprime with n, so it passes every seat once), every other step of it, and the one player
    it leaves out plays the cycle's first player, who thus plays k+1. No two of the seat distances used are
    equal or add up to n, and the n/2 chords (n even) are taken once each, so no pair repeats.
    """
    if k < 1:
        raise ValueError(f"k_opponents: k must be at least 1, not {k}")
    k = min(k, n - 1)
    seat = list(range(n))
    rng.shuffle(seat)
    places = [(p, p + d) for p in range(n) for d in range(1, k // 2 + 1)]
    if k % 2:
        half = n // 2
        if n % 2 == 0:
            places += [(p, p + half) for p in range(half)]
        else:
            cycle = [t * half % n for t in range(n)]
            places += [(cycle[t], cycle[t + 1]) for t in range(0, n - 1, 2)] + [(cycle[-1], cycle[0])]
    return sorted(ordered(seat[a % n], seat[b % n]) for a, b in places)


def swiss_rounds_default(n: int) -> int:
    """ceil(log2(n)) rounds: enough for one unbeaten player to remain when n is a power of two."""
    return (n - 1).bit_length() if n > 1 else 0


def swiss_round(
    n: int, standings: Sequence[float], played: set[frozenset], rng: random.Random
) -> list[tuple[int, int]]:
    """One Swiss round, best-placed game first: players ranked by standing (ties in random order), each paired
    with the nearest-ranked player it has not met, searching (with backtracking, up to SEARCH_BUDGET steps) for
    a pairing with no rematch before accepting one. With n odd one player sits out (a bye): the lowest-ranked
    of those who have met the most opponents, unless only another bye allows a rematch-free pairing."""
    if len(standings) != n:
        raise ValueError(f"swiss_round: {len(standings)} standings for {n} players")
    order = list(range(n))
    rng.shuffle(order)
    order.sort(key=lambda p: -standings[p])
    rank = {p: r for r, p in enumerate(order)}
    met = Counter(p for pair in played for p in pair)
    byes = sorted(order, key=lambda p: (-met[p], -rank[p])) if n % 2 else [None]
    budget = [SEARCH_BUDGET]

    def search(pool: list[int]) -> list[tuple[int, int]] | None:
        if not pool:
            return []
        first = pool[0]
        for idx in range(1, len(pool)):
            budget[0] -= 1
            if budget[0] < 0:
                return None
            if frozenset((first, pool[idx])) in played:
                continue
            rest = search(pool[1:idx] + pool[idx + 1 :])
            if rest is not None:
                return [(first, pool[idx])] + rest
        return None

    for bye in byes:
        pairs = search([p for p in order if p != bye])
        if pairs is not None:
            return [ordered(a, b) for a, b in pairs]
    pool, pairs = [p for p in order if p != byes[0]], []
    while pool:
        first = pool.pop(0)
        other = next((p for p in pool if frozenset((first, p)) not in played), pool[0])
        pool.remove(other)
        pairs.append(ordered(first, other))
    return pairs


class Bracket:
    """A single-elimination bracket (ArenaRL's schedule): n-1 games, each eliminating one player.

    The players are drawn into seeds 1..n at random and placed as a seeded bracket places them: seed 1 against
    the last seed, and the first seeds on opposite sides, so that they could meet only late. With n not a power
    of two the first seeds sit out the first round (a bye). A game the judge could not decide (a tie, or no
    result that could be read) sends the better seed on."""

    def __init__(self, n: int, rng: random.Random):
        seeds = list(range(n))
        rng.shuffle(seeds)
        self.seed_of = {player: seed for seed, player in enumerate(seeds)}
        order = [0]
        while len(order) < n:  # seed positions: [0], [0, 1], [0, 3, 1, 2], [0, 7, 3, 4, 1, 6, 2, 5], ...
            last = 2 * len(order) - 1
            order = [s for seed in order for s in (seed, last - seed)]
        self.slots: list[int | None] = [seeds[s] if s < n else None for s in order]  # None: a bye

    @property
    def finished(self) -> bool:
        return len(self.slots) <= 1

    def games(self) -> list[tuple[int, int]]:
        """This round's games (a bye plays none)."""
        return [ordered(a, b) for a, b in zip(self.slots[::2], self.slots[1::2]) if a is not None and b is not None]

    def advance(self, score: Callable[[tuple[int, int]], float | None]) -> None:
        """The next round: each game's winner goes on, by ``score(game)``, the game's first player's mean result
        (None: none could be read)."""
        self.slots = [self._winner(a, b, score) for a, b in zip(self.slots[::2], self.slots[1::2])]

    def _winner(self, a: int, b: int | None, score: Callable[[tuple[int, int]], float | None]) -> int:
        if b is None:  # a bye (a seed past n sits second in its game)
            return a
        first, second = ordered(a, b)
        mean = score((first, second))
        if mean is None or mean == 0.5:
            return min(a, b, key=self.seed_of.__getitem__)
        return first if mean > 0.5 else second


def calls_per_rollout(schedule: str, n: int, k: int | None = None, rounds: int | None = None, orders: int = 1) -> float:
    """Judge calls per rollout when every call succeeds: the schedule's games times the orders each game is
    judged in, over n. round_robin n(n-1)/2, k_opponents ceil(n*k/2), swiss rounds*floor(n/2) games,
    single_elimination n-1."""
    if schedule == "round_robin":
        games = n * (n - 1) // 2
    elif schedule == "k_opponents":
        if k is None:
            raise ValueError("calls_per_rollout: k_opponents needs k")
        games = math.ceil(n * min(k, n - 1) / 2)
    elif schedule == "swiss":
        games = (swiss_rounds_default(n) if rounds is None else rounds) * (n // 2)
    elif schedule == "single_elimination":
        games = max(n - 1, 0)
    else:
        raise ValueError(f"unknown tournament schedule {schedule!r}: choose one of {', '.join(SCHEDULES)}")
    return games * orders / n if n > 0 else 0.0
