"""One probe comparison, paid by the method's own reward fn exactly as training would pay it: the same
prompts, reply readers, think-stripping and failure rules. Each method declares how a probe is placed in its
judge calls (``RewardMethod.probe``, reward_loop/probing.py, which lists the outcomes); this module holds the
comparison and applies what the run pays for an unreadable reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from writing_rl.judge import SampleJudge
from writing_rl.reward_loop.probing import ProbePlacement
from writing_rl.tools.probe.rows import ProbeRow


@dataclass(frozen=True)
class Comparison:
    row: ProbeRow
    probe: str  # the probe's name
    reply: str  # the probe's text
    slot: str  # where the probe stands: "A", "B", or "-" (a method that scores each reply alone)
    repeat: bool = False  # the self-consistency repeat (judged bypassing the cache)


def winner(outcome: str, slot: str) -> str | None:
    """The slot the judge preferred ("A", "B"), "tie", or None for no decision."""
    if outcome == "tie":
        return "tie"
    if outcome not in ("win", "loss") or slot not in ("A", "B"):
        return None
    return slot if outcome == "win" else ("B" if slot == "A" else "A")


class Placer:
    """A method's placement with the run's options; ``slots`` are the positions each probe is judged in."""

    def __init__(self, placement: ProbePlacement, options: dict[str, Any], on_parse_error: str):
        self.placement, self.options = placement, dict(options)
        self.slots = placement.slots
        self.on_parse_error = "loss" if on_parse_error == "raise" else on_parse_error  # count, never stop

    async def outcome(self, comparison: Comparison, judge: SampleJudge) -> str:
        """The probe's outcome against the honest answer (reward_loop/probing.py)."""
        return await self.placement.outcome(comparison, judge, self.options, self.on_parse_error)

    def as_paid(self, outcome: str) -> str:
        """An unreadable reply counts as the run pays it: a tie under on_parse_error=tie (a probe that breaks the
        judge's format is paid a tie there, which a policy can learn), else a loss (kept as ``unreadable``)."""
        return "tie" if outcome == "unreadable" and self.on_parse_error == "tie" else outcome
