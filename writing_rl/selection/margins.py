"""The math of margin-aware selection (``writing-rl select``): points, margins, ranking, budget and quotas. Pure
functions over plain values: ``select.py`` runs the judge around them, ``outputs.py`` writes what they chose.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

from writing_rl.protocols.comparison import outcome, shown
from writing_rl.protocols.gqm import MAX_SCORE, MIN_SCORE

# The response's outcome in one judged order -> the reference's points (win-rate margin).
REFERENCE_POINTS = {"loss": 1.0, "tie": 0.5, "win": 0.0}


class Verdict(Protocol):
    """A judgment as ``MarginKind.reference_points`` reads it (``shared.verdicts.Judgment`` is one)."""

    @property
    def verdict(self) -> str | None: ...

    @property
    def scores(self) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class MarginKind:
    name: str
    judge_output: str  # what the built-in prompt asks the judge to end with: "verdict" or "scores"
    low: float  # range of the margin; a response with no answer gets ``high``
    high: float
    label: str

    def reference_points(self, judgment: Verdict, response_slot: str) -> float:
        """The reference's points against the response in one judged order (a judgment with a verdict)."""
        if self.judge_output == "verdict":
            return REFERENCE_POINTS[outcome(judgment.verdict, response_slot)]
        response, reference = shown(*judgment.scores, response_slot)
        return float(reference - response)


MARGIN_KINDS = {
    "win-rate": MarginKind("win-rate", "verdict", 0.0, 1.0, "margin (reference win rate vs policy)"),
    "score-gap": MarginKind(
        "score-gap",
        "scores",
        float(MIN_SCORE - MAX_SCORE),
        float(MAX_SCORE - MIN_SCORE),
        "margin (reference score - policy score)",
    ),  # fmt: skip
}
PROPORTIONAL = "proportional"


@dataclass
class IdMargin:
    id: int
    row: int
    domain: str
    responses: int = 0
    comparisons: int = 0  # judged orders that gave a verdict
    parse_failures: int = 0
    judge_errors: int = 0
    format_errors: int = 0  # responses with no answer: scored 1 without a judge call
    response_scores: list[float] = field(default_factory=list)
    rank: int | None = None
    selected: bool = False

    @property
    def margin(self) -> float | None:
        return sum(self.response_scores) / len(self.response_scores) if self.response_scores else None

    @property
    def status(self) -> str:
        if self.responses == 0:
            return "no_responses"
        return "judged" if self.response_scores else "no_verdict"


def response_score(points: Sequence[float]) -> float | None:
    """The reference's mean points against one response over its judged orders; None if none judged."""
    if not points:
        return None
    return sum(points) / len(points)


def parse_quotas(specs: Sequence[str] | None) -> dict[str, int] | str | None:
    """``["creative=100", "business=50"]`` -> counts per domain; ``["proportional"]`` -> "proportional"."""
    if not specs:
        return None
    if PROPORTIONAL in specs:
        if len(specs) > 1:
            raise ValueError("--quota proportional cannot be combined with DOMAIN=N quotas")
        return PROPORTIONAL
    quotas: dict[str, int] = {}
    for spec in specs:
        domain, sep, count = spec.rpartition("=")
        if not sep or not domain or not count.strip().isdigit():
            raise ValueError(f"--quota {spec!r}: expected DOMAIN=N (N a whole number >= 0) or 'proportional'")
        if domain in quotas:
            raise ValueError(f"--quota names domain {domain!r} twice")
        quotas[domain] = int(count)
    return quotas


def budget(judged: int, top_k: int | None, top_percent: float | None) -> int:
    """How many ids to keep out of ``judged``: ``top_k`` (capped) or ``top_percent`` % rounded half up."""
    if top_k is not None:
        return min(top_k, judged)
    if top_percent is not None:
        return min(judged, math.floor(judged * top_percent / 100 + 0.5))
    return judged


def proportional_quotas(counts: Mapping[str, int], total: int) -> dict[str, int]:
    """``total`` split over domains in proportion to ``counts`` (largest remainder; ties by name)."""
    size = sum(counts.values())
    if size == 0:
        return {domain: 0 for domain in counts}
    exact = {domain: total * n / size for domain, n in counts.items()}
    quotas = {domain: math.floor(share) for domain, share in exact.items()}
    by_remainder = sorted(counts, key=lambda d: (-(exact[d] - quotas[d]), d))
    for domain in by_remainder[: total - sum(quotas.values())]:
        quotas[domain] += 1
    return quotas


def tie_key(seed: int, id_: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{id_}".encode()).digest()[:8], "big")


def rank_ids(margins: Sequence[IdMargin], seed: int = 0) -> list[IdMargin]:
    """Ids with a margin, highest margin first, equal margins in seeded-hash order; sets ``rank`` (1-based)."""
    ranked = sorted((m for m in margins if m.margin is not None), key=lambda m: (-m.margin, tie_key(seed, m.id)))
    for position, item in enumerate(ranked, start=1):
        item.rank = position
    return ranked


@dataclass
class Selection:
    chosen: list[IdMargin]  # rank order
    targets: dict[str, int] | None  # per-domain quotas actually applied (None: one global cut)
    shortfall: dict[str, int]  # domain -> ids missing to fill its quota


def choose(
    ranked: Sequence[IdMargin],
    top_k: int | None = None,
    top_percent: float | None = None,
    quotas: Mapping[str, int] | str | None = None,
) -> Selection:
    """Pick from ``ranked`` (see ``rank_ids``), in rank order; marks ``selected``."""
    if quotas is None:
        chosen = list(ranked[: budget(len(ranked), top_k, top_percent)])
        targets, shortfall = None, {}
    else:
        if quotas == PROPORTIONAL:
            domains = Counter(m.domain for m in ranked)
            targets = proportional_quotas(domains, budget(len(ranked), top_k, top_percent))
        else:
            targets = dict(quotas)
        taken: Counter = Counter()
        chosen = []
        for item in ranked:
            if taken[item.domain] < targets.get(item.domain, 0):
                taken[item.domain] += 1
                chosen.append(item)
        shortfall = {domain: n - taken[domain] for domain, n in targets.items() if taken[domain] < n}
    for item in chosen:
        item.selected = True
    return Selection(chosen=chosen, targets=targets, shortfall=shortfall)


def check_options(top_k: int | None, top_percent: float | None, quotas: Mapping[str, int] | str | None) -> None:
    if isinstance(quotas, Mapping):
        if top_k is not None or top_percent is not None:
            raise ValueError("--quota DOMAIN=N sets the counts itself: drop --top-k / --top-percent")
        return
    if (top_k is None) == (top_percent is None):
        raise ValueError("pass exactly one of --top-k or --top-percent (or DOMAIN=N quotas)")
    if top_k is not None and top_k < 1:
        raise ValueError(f"--top-k must be >= 1, got {top_k}")
    if top_percent is not None and not 0 < top_percent <= 100:
        raise ValueError(f"--top-percent must be in (0, 100], got {top_percent}")


def bin_counts(values: Sequence[float], low: float, high: float, bins: int) -> list[int]:
    """How many values fall in each of ``bins`` equal bins over [low, high] (the last bin holds ``high``)."""
    found = [0] * bins
    for value in values:
        # the epsilon keeps a value on an edge (5/3 with 12 bins over [-10, 10]) out of the bin below
        found[max(0, min(int((value - low) / (high - low) * bins + 1e-9), bins - 1))] += 1
    return found
