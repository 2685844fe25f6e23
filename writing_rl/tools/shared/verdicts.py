"""A judge call's result as the offline tools count it (``Judgment``), and a pairwise verdict reply as one
(``verdict_judgment``: ``writing_rl.protocols.read_verdict``'s rules, nothing read on an ``Unreadable``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from writing_rl.protocols import verdict_or_none


@dataclass(frozen=True)
class Judgment:
    """One judge call's result: a verdict "A"/"B"/"C" (or another reader's ``value``), nothing read (a
    parse failure) or a failure kind."""

    verdict: str | None = None
    error: str | None = None  # JudgeError kind: timeout, connection, http, context_length, bad_response
    scores: tuple[int, int] | None = None  # (A, B) when the judge was asked for a score pair
    value: Any = None  # what a reader other than a verdict reader read (e.g. a critic's score and reason)

    @property
    def parse_failure(self) -> bool:
        return self.verdict is None and self.value is None and self.error is None


def verdict_judgment(text: str) -> Judgment:
    """The reply's verdict as a ``Judgment``; ``Judgment()`` (a parse failure) when it has none."""
    return Judgment(verdict=verdict_or_none(text))
