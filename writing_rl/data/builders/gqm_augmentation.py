"""Seeded augmentation of a ranked GQM group for RL rows: random subgroups and reorderings of its candidates
(what ``--subgroup-augment`` and ``--shuffle-augment`` give: docs/genrm/training.md).

Pure functions of the candidates' content classes and a ``random.Random``; the caller seeds it (by the
run's seed and the group's content, ``writing_rl.data.fields.content_seed``).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from functools import lru_cache
from typing import Sequence


def sample_subgroups(classes: Sequence[int], k: int, rng: random.Random) -> list[tuple[int, ...]]:
    """Up to ``k`` distinct subgroups of 2..N-1 candidates (ascending index tuples), uniformly at random.

    ``classes[i]`` is candidate i's content class; subgroups holding the same texts count once (a
    subgroup takes the first candidates of each class it uses). All of them when fewer than ``k`` exist.
    """
    n = len(classes)
    if k <= 0 or n < 3:
        return []
    if len(set(classes)) == n and n <= _TABLE_MAX_CANDIDATES:
        table = _subgroups(n)
        return [table[r] for r in _distinct_ranks(len(table), k, rng)]
    members: dict[int, list[int]] = {}
    for i, c in enumerate(classes):
        members.setdefault(c, []).append(i)
    groups = list(members.values())
    # distinct sub-multisets of size 2..N-1: all, minus the empty one, the singletons and the full group
    wanted = min(k, math.prod(len(g) + 1 for g in groups) - len(groups) - 2)
    chosen: dict[tuple[int, ...], tuple[int, ...]] = {}
    while len(chosen) < wanted:
        counts = tuple(rng.randrange(len(g) + 1) for g in groups)
        if 2 <= sum(counts) <= n - 1 and counts not in chosen:
            chosen[counts] = tuple(sorted(i for g, c in zip(groups, counts) for i in g[:c]))
    return list(chosen.values())


def sample_shuffles(classes: Sequence[int], k: int, rng: random.Random) -> list[tuple[int, ...]]:
    """Up to ``k`` distinct reorderings (index permutations) that read differently from the original
    and from each other: at most N!/(m1!·m2!·...) - 1 exist when classes repeat (N! - 1 otherwise)."""
    n = len(classes)
    if k <= 0:
        return []
    if len(set(classes)) == n and n <= _TABLE_MAX_PERMUTED:
        table = _permutations(n)  # table[0] is the identity
        return [table[r + 1] for r in _distinct_ranks(len(table) - 1, k, rng)]
    wanted = min(k, math.factorial(n) // math.prod(math.factorial(m) for m in Counter(classes).values()) - 1)
    seen = {tuple(classes)}
    chosen: list[tuple[int, ...]] = []
    order = list(range(n))
    while len(chosen) < wanted:
        rng.shuffle(order)
        reading = tuple(classes[i] for i in order)
        if reading not in seen:
            seen.add(reading)
            chosen.append(tuple(order))
    return chosen


def _distinct_ranks(total: int, k: int, rng: random.Random) -> list[int]:
    """min(k, total) distinct integers from range(total), uniformly (a partial Fisher-Yates shuffle)."""
    k = min(k, total)
    pool = list(range(total))
    uniform = rng.random
    for j in range(k):
        r = j + int(uniform() * (total - j))
        pool[j], pool[r] = pool[r], pool[j]
    return pool[:k]


# Groups up to these sizes draw from precomputed tables (distinct candidates, the common case).
_TABLE_MAX_CANDIDATES = 12  # 4083 subgroups
_TABLE_MAX_PERMUTED = 7  # 5040 permutations


@lru_cache(maxsize=None)
def _subgroups(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(members for size in range(2, n) for members in itertools.combinations(range(n), size))


@lru_cache(maxsize=None)
def _permutations(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(itertools.permutations(range(n)))


_REORDERED_MAX_MEMBERS = 5  # subgroups this small keep their reorderings (120 at most) in a shared cache


@lru_cache(maxsize=1024)  # every base of a group of up to 8 candidates fits (210)
def _reorderings(base: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """``base``'s members in every order of ``_permutations`` (the first is ``base`` itself)."""
    return tuple(tuple([base[i] for i in order]) for order in _permutations(len(base)))


def augmentation_plan(
    classes: Sequence[int], subgroups: int, shuffles: int, rng: random.Random
) -> list[tuple[tuple[int, ...], str]]:
    """(candidate order, kind) for every output row of one group: the group, its sampled subgroups,
    and the sampled shuffles of each. Kinds: original, shuffle, subgroup, subgroup_shuffle."""
    n = len(classes)
    distinct = len(set(classes)) == n
    plan = []
    for base in [tuple(range(n)), *sample_subgroups(classes, subgroups, rng)]:
        original = len(base) == n  # subgroups hold 2..N-1 candidates
        plan.append((base, "original" if original else "subgroup"))
        shuffled = "shuffle" if original else "subgroup_shuffle"
        if distinct and shuffles > 0 and len(base) <= _TABLE_MAX_PERMUTED:
            # sample_shuffles' draw for distinct candidates, without its per-call checks
            permutations = _permutations(len(base))
            ranks = _distinct_ranks(len(permutations) - 1, shuffles, rng)
            if len(base) <= _REORDERED_MAX_MEMBERS:
                reordered = _reorderings(base)
                plan += [(reordered[r + 1], shuffled) for r in ranks]
            else:
                plan += [(tuple([base[i] for i in permutations[r + 1]]), shuffled) for r in ranks]
        else:
            orders = sample_shuffles([classes[i] for i in base], shuffles, rng)
            plan += [(tuple([base[i] for i in order]), shuffled) for order in orders]
    return plan
