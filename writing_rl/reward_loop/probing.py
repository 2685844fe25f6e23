"""What a method declares so that ``writing-rl probe-judge`` can put a probe before its judge exactly as
training would (``RewardMethod.probe``, docs/methods/your-own.md), and the helpers its placement uses.

A placement judges a probe (a reply written to fool the judge) against the row's honest answer through the
method's own reward fn, and returns one outcome, from the probe's side:

- ``win``, ``tie``, ``loss``: what the judge decided;
- ``refused``: the method paid the probe a loss without asking the judge (no answer: the empty reply);
- ``unreadable``: the judge's reply could not be read (the run then pays what ``on_parse_error`` says);
- ``unjudged``: the method's extraction left the probe identical to the honest answer (nothing to judge);
- ``error``: a judge call failed after its retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from writing_rl.reward_loop.results import UNREADABLE_KEYS

# A pairwise strategy that shows the probe in each slot (the pairwise fns' ``strategy`` option).
PROBE_FIRST = {"A": "position-advantage", "B": "position-disadvantage"}


@dataclass(frozen=True)
class ProbePlacement:
    """How probe-judge places a probe in the method's judge calls."""

    # outcome(comparison, judge, options, on_parse_error) -> one of the outcomes above. ``comparison`` has
    # ``row`` (``prompt``, ``honest``, ``data_source``, ``ground_truth``, ``extra_info``), ``probe`` (its name),
    # ``reply`` (its text) and ``slot``; ``options`` are the run's reward_kwargs.
    outcome: Callable[..., Awaitable[str]]
    # The overlay (hydra_configs/) whose judge and options a probe run reads by default.
    overlay: str
    # Where each probe is shown: ("A", "B"), or ("-",) for a method that scores each reply alone.
    slots: tuple[str, ...] = ("A", "B")
    # The method's rows hold the honest answer (its reference); else probe-judge asks for --responses.
    rows_hold_answer: bool = False


def probe_failure(result: dict, judge: Any) -> str | None:
    """The outcome of a result that holds no decision of the judge, else None."""
    if result.get("format_error"):
        return "refused"
    if judge.errors or result.get("judge_error"):
        return "error"
    if any(result.get(key) for key in UNREADABLE_KEYS):
        return "unreadable"
    return None


def by_sign(difference: float) -> str:
    return "win" if difference > 0 else "loss" if difference < 0 else "tie"


def uid_where(test: Callable[[str], bool], tag: str) -> str:
    """The first of ``probe-<tag>-0``, ``-1``... that ``test`` accepts (a placement the fn's seeded draw
    gives about every other uid)."""
    for number in range(1000):
        uid = f"probe-{tag}-{number}"
        if test(uid):
            return uid
    raise RuntimeError(f"no uid places the probe as wanted ({tag}); the reward fn's draw changed")
