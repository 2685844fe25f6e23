"""The settings of one ``writing-rl probe-judge`` run (``ProbeJob``), with their defaults, which the
command's parser shows. Light on purpose: ``writing-rl --help`` imports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from writing_rl.tools.shared.judged_job import JudgedJob

# --method -> (the overlay whose judge and reward options a run reads by default, the reward fn it must name)
METHODS = {
    "pairwise": ("writing_rl", "pkg://reward_fns.pairwise"),
    "brpo": ("brpo", "pkg://reward_fns.brpo"),
    "ranking": ("grrm_mt_grpo", "pkg://reward_fns.group_ranking"),
    "rubric": ("rubric", "pkg://reward_fns.rubric"),
}
FLAGGED_EXIT = 3  # the exit status when a probe, the position bias or the self-consistency is flagged
UNREADABLE_EXIT = 4  # too few judge replies could be read (summary "readable"); before FLAGGED_EXIT: fix the judge first


@dataclass(frozen=True, kw_only=True)
class ProbeJob(JudgedJob):
    """What to probe and how (``run_probe``); ``out``, ``cache``, ``allow_judge_errors`` and ``progress``:
    see ``JudgedJob``."""

    method: str  # a key of METHODS
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
