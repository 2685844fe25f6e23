"""Rank aggregation for ``writing-rl order-references``: one prompt's pairwise verdicts between its candidate
references turned into an order, easiest first, by the tournament's maths (writing_rl/tournament/, the one home of
Bradley-Terry, Copeland and intransitive triples). The methods and their tie-breaks: docs/offline-tools.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from writing_rl import tournament
from writing_rl.protocols.comparison import POINTS, other_slot, outcome

METHODS = ("bt", "copeland")


def easiest_first(primary: np.ndarray, secondary: np.ndarray, decimals: int = 6) -> list[int]:
    """Candidate indices from weakest to strongest; ties by ``secondary``, then input order."""
    keys = np.round(primary, decimals), np.round(secondary, decimals)
    return sorted(range(len(primary)), key=lambda i: (keys[0][i], keys[1][i], i))


# ---- one prompt's comparisons -------------------------------------------------------------------------


@dataclass
class PromptResult:
    """What the judge said about one prompt's candidates."""

    candidates: int
    # One per verdict: (candidate, other, the candidate's points), as the tournament's games are kept.
    results: list[tournament.Result] = field(default_factory=list)
    # (i, j) with i < j -> i's outcome ("win", "tie", "loss") in each order that gave a verdict
    pair_outcomes: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    judge_calls: int = 0
    parse_failures: int = 0
    judge_errors: int = 0

    def add(self, candidate: int, other: int, slot: str, verdict: str) -> None:
        """A verdict with ``candidate`` shown in ``slot`` against ``other``."""
        result = outcome(verdict, slot)
        self.results.append(tournament.Result(candidate, other, POINTS[result]))
        low, high = sorted((candidate, other))
        low_result = result if low == candidate else outcome(verdict, other_slot(slot))
        self.pair_outcomes.setdefault((low, high), []).append(low_result)

    @property
    def verdicts(self) -> int:
        return len(self.results)

    @property
    def pairs_both_orders(self) -> int:
        return sum(len(found) == 2 for found in self.pair_outcomes.values())

    @property
    def inconsistent_pairs(self) -> list[tuple[int, int]]:
        return [pair for pair, found in self.pair_outcomes.items() if len(found) == 2 and found[0] != found[1]]


@dataclass(frozen=True)
class Ordering:
    order: list[int]  # easiest first
    scores: np.ndarray  # by the chosen method, input order
    triples: int  # intransitive triples among the pairs' majorities


def order_candidates(result: PromptResult, method: str = "bt", prior: float = 1.0) -> Ordering:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    n, results = result.candidates, result.results
    log_strength = np.log(tournament.bradley_terry_strengths(n, results, prior)) if n else np.zeros(0)
    bt = log_strength - log_strength.mean() if n else log_strength
    cope = np.array([0.5 if s is None else s for s in tournament.copeland(n, results)])
    primary, secondary = (bt, cope) if method == "bt" else (cope, bt)
    return Ordering(easiest_first(primary, secondary), primary, tournament.intransitive_triples(n, results))
