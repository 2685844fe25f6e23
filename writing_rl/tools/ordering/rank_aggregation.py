"""Rank aggregation for ``writing-rl order-references``: one prompt's pairwise verdicts between its
candidate references, turned into an order, easiest first. Pure functions over numpy tables, with no
judge and no files; ``order_references.py`` runs the judge and writes the rows around them.

- Bradley-Terry (default): strengths p_i with P(i beats j) = p_i / (p_i + p_j), fitted by the MM
  algorithm (Hunter 2004). A tie counts half a win to each side. ``prior`` adds that many virtual
  comparisons to every pair, split evenly, so an undefeated candidate keeps a finite strength and a
  pair the judge never decided stays neutral. Scores are log-strengths centred on 0.
- Copeland (``method="copeland"``): one point per pairwise majority won, half for a drawn or unjudged pair.

Ties in the chosen method are broken by the other method, then by input order (earlier = easier).
Intransitive triples (A>B, B>C, C>A by pairwise majority) are counted for the report.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from writing_rl.protocols.comparison import other_slot, outcome

METHODS = ("bt", "copeland")
POINTS = {"win": 1.0, "tie": 0.5, "loss": 0.0}


# ---- aggregation: pure functions over an n x n table of points ---------------------------------------
# points[i, j]: what i earned against j (1 per win, 0.5 per tie); judged[i, j] = judged[j, i]: verdicts
# between i and j. Hence points[i, j] + points[j, i] == judged[i, j].


def bradley_terry(
    points: np.ndarray, judged: np.ndarray, prior: float = 1.0, tol: float = 1e-12, max_iter: int = 100_000
) -> np.ndarray:
    """Log-strengths (mean 0) maximising the Bradley-Terry likelihood with ``prior`` virtual tied games per pair."""
    if prior <= 0:
        raise ValueError(f"the Bradley-Terry prior must be > 0 (it keeps undefeated candidates finite), got {prior}")
    n = len(points)
    if n < 2:
        return np.zeros(n)
    off_diagonal = 1.0 - np.eye(n)
    wins = (points + prior / 2) * off_diagonal
    games = (judged + prior) * off_diagonal
    total_wins = wins.sum(axis=1)
    strength = np.ones(n)
    for _ in range(max_iter):
        updated = total_wins / (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated /= np.exp(np.log(updated).mean())
        converged = np.max(np.abs(np.log(updated) - np.log(strength))) < tol
        strength = updated
        if converged:
            break
    log_strength = np.log(strength)
    return log_strength - log_strength.mean()


def copeland(points: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Pairwise majorities won (1 each), drawn or unjudged pairs half a point to each side."""
    n = len(points)
    scores = np.zeros(n)
    for i, j in itertools.combinations(range(n), 2):
        if judged[i, j] == 0 or points[i, j] == points[j, i]:
            scores[i] += 0.5
            scores[j] += 0.5
        elif points[i, j] > points[j, i]:
            scores[i] += 1
        else:
            scores[j] += 1
    return scores


def intransitive_triples(points: np.ndarray) -> list[tuple[int, int, int]]:
    """Triples (a, b, c), a < b < c, whose strict pairwise majorities form a cycle."""
    beats = points > points.T
    cycles = []
    for a, b, c in itertools.combinations(range(len(points)), 3):
        if (beats[a, b] and beats[b, c] and beats[c, a]) or (beats[a, c] and beats[c, b] and beats[b, a]):
            cycles.append((a, b, c))
    return cycles


def easiest_first(primary: np.ndarray, secondary: np.ndarray, decimals: int = 6) -> list[int]:
    """Candidate indices from weakest to strongest; ties by ``secondary``, then input order."""
    keys = np.round(primary, decimals), np.round(secondary, decimals)
    return sorted(range(len(primary)), key=lambda i: (keys[0][i], keys[1][i], i))


# ---- one prompt's comparisons -------------------------------------------------------------------------


@dataclass
class PromptResult:
    """What the judge said about one prompt's candidates."""

    candidates: int
    points: np.ndarray = field(init=False)
    judged: np.ndarray = field(init=False)
    # (i, j) with i < j -> i's outcome ("win", "tie", "loss") in each order that gave a verdict
    pair_outcomes: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    judge_calls: int = 0
    parse_failures: int = 0
    judge_errors: int = 0

    def __post_init__(self):
        self.points = np.zeros((self.candidates, self.candidates))
        self.judged = np.zeros((self.candidates, self.candidates))

    def add(self, candidate: int, other: int, slot: str, verdict: str) -> None:
        """A verdict with ``candidate`` shown in ``slot`` against ``other``."""
        result = outcome(verdict, slot)
        won = POINTS[result]
        self.points[candidate, other] += won
        self.points[other, candidate] += 1.0 - won
        self.judged[candidate, other] += 1
        self.judged[other, candidate] += 1
        low, high = sorted((candidate, other))
        low_result = result if low == candidate else outcome(verdict, other_slot(slot))
        self.pair_outcomes.setdefault((low, high), []).append(low_result)

    @property
    def verdicts(self) -> int:
        return int(self.judged.sum() // 2)

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
    triples: list[tuple[int, int, int]]


def order_candidates(result: PromptResult, method: str = "bt", prior: float = 1.0) -> Ordering:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    bt = bradley_terry(result.points, result.judged, prior)
    cope = copeland(result.points, result.judged)
    primary, secondary = (bt, cope) if method == "bt" else (cope, bt)
    return Ordering(easiest_first(primary, secondary), primary, intransitive_triples(result.points))
