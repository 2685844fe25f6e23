"""The settings of one ``writing-rl probe-judge`` run (``ProbeJob``), with their defaults, which the
command's parser shows. Light on purpose: ``writing-rl --help`` imports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from writing_rl.offline.files import JudgedJob

FLAGGED_EXIT = 3  # the exit status when a probe, the position bias or the self-consistency is flagged
UNREADABLE_EXIT = (
    4  # too few judge replies could be read (summary "readable"); before FLAGGED_EXIT: fix the judge first
)


@dataclass(frozen=True, kw_only=True)
class ProbeJob(JudgedJob):
    """What to probe and how (``run_probe``); ``out``, ``cache``, ``allow_judge_errors`` and ``progress``:
    see ``JudgedJob``."""

    method: str  # a registered method that declares a probe placement (probe_methods())
    data: str | Path | None = None  # a training parquet; None: the rows we ship
    responses: str | Path | None = None  # JSONL of honest answers, for rows that hold none
    rows: int = 24  # rows drawn from the data (seeded)
    seed: int = 0  # seed of the row draw
    probes: tuple[str, ...] = ()  # the probes to run; empty: the whole battery
    thresholds: Mapping[str, float] = field(default_factory=dict)  # overrides by probe name (or position-bias...)
    repeat: bool = True  # judge some comparisons twice (self-consistency)
    wrong_language: str = "German"  # what a writing row's honest answer is translated into
    translate_url: str | None = None  # the translator's endpoint; None: the judge's
    translate_model: str | None = None  # the translator's model; None: the judge's


def probe_methods() -> dict:
    """Every installed method probe-judge can probe (its ``RewardMethod.probe``), by name: the registry's."""
    from writing_rl.reward_loop.registry import methods

    return {name: known for name, known in methods().items() if known.method.probe is not None}


def probe_method(name: str):
    """The registered method ``name``; a ValueError naming the ones that can be probed."""
    known = probe_methods()
    if name not in known:
        raise ValueError(
            f"--method must be one of {', '.join(known)} (the installed methods with a probe), got {name!r}"
        )
    return known[name]
