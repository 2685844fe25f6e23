"""A pairwise comparison, the one home of its rules: a candidate judged against another answer (a
reference, a sibling rollout, a baseline) in the orders a strategy names, each verdict turned back into
the candidate's outcome, and the orders combined.

Every pairwise reward (reward_fns/pairwise.py, brpo.py), offline tool (win rate, data selection,
reference ordering) and the preference builder (data/builders/preference.py) places answers and reads
verdicts through here; a new strategy is a new entry in ``STRATEGIES``.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

from writing_rl.protocols.pairwise import VERDICTS, read_comparison
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, Messages, pairwise_messages
from writing_rl.protocols.text import Unreadable

T = TypeVar("T")

# The judge's two slots: A is shown first.
SLOTS = ("A", "B")

# Which slot the candidate takes in each judge call of a comparison.
STRATEGIES = {
    "position-advantage": ("A",),  # the candidate shown first
    "position-disadvantage": ("B",),  # the other answer shown first
    "both": SLOTS,  # both orders
}

OUTCOMES = ("win", "tie", "loss")
# An outcome as points for the candidate: a tie is half a win (win rates, tournaments, reference ordering).
POINTS = {"win": 1.0, "tie": 0.5, "loss": 0.0}
# What an ensemble's split (no majority) counts as under each judge.ensemble.split rule, by the values it split
# over: never more than a tie (reward_loop/failures.py); another split is unreadable.
SPLIT_AS = {
    "tie": ((frozenset(OUTCOMES), "tie"), (frozenset(VERDICTS), "C")),
    "loss": ((frozenset(OUTCOMES), "loss"),),
}


def shown(candidate: T, other: T, slot: str) -> tuple[T, T]:
    """``(a, b)``: what goes in the judge's slots A and B with the candidate in ``slot``.

    Its own inverse: ``shown(a, b, slot)`` gives ``(candidate's, other's)`` back, e.g. for the judge's
    score pair."""
    return (candidate, other) if slot == "A" else (other, candidate)


def comparison_messages(
    prompt: str,
    candidate: str,
    other: str,
    slot: str,
    *,
    criteria: str | None = None,
    template: str | None = None,
    system: str | None = PAIRWISE_SYSTEM,
    output: str = "verdict",
) -> Messages:
    """The pairwise judge prompt with the candidate in ``slot`` (protocols/prompts.py); ``output`` is what
    the reply is read as (``auto`` asks for a verdict)."""
    a, b = shown(candidate, other, slot)
    asked = "scores" if output == "scores" else "verdict"
    return pairwise_messages(prompt, a, b, criteria=criteria, template=template, system=system, output=asked)


def read_outcome(text: str, slot: str, output: str = "verdict", tie_margin: float = 0.0) -> str | Unreadable:
    """The candidate's outcome in a judge reply to ``comparison_messages(..., slot)``, or ``Unreadable``
    (protocols/pairwise.py: ``read_comparison``)."""
    read = read_comparison(text, output, tie_margin)
    return read if isinstance(read, Unreadable) else outcome(read.verdict, slot)


def outcome(verdict: str, slot: str) -> str:
    """'win', 'tie' or 'loss' for the candidate shown in ``slot``, given the judge's verdict (A, B or C)."""
    if verdict == "C":
        return "tie"
    return "win" if verdict == slot else "loss"


def verdict_for(result: str, slot: str) -> str:
    """The verdict (A, B or C) that gives the candidate in ``slot`` this outcome: ``outcome``'s inverse."""
    if result == "tie":
        return "C"
    return slot if result == "win" else other_slot(slot)


def other_slot(slot: str) -> str:
    return "B" if slot == "A" else "A"


def agreed(outcomes: Sequence[str]) -> str:
    """One outcome for the comparison: the one every order gave, else a tie (the judge followed the
    position, not the answers)."""
    return outcomes[0] if len(set(outcomes)) == 1 else "tie"


def consistency(outcomes: Sequence[str], orders: int) -> int:
    """1 when every order gave the same outcome, 0 when they differ, -1 when it cannot be told (one order
    judged, or an order without an outcome)."""
    if orders < 2 or len(outcomes) < orders:
        return -1
    return int(len(set(outcomes)) == 1)
