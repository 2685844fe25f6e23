"""The settings of one ``writing-rl select`` run (``SelectJob``), with their defaults, which the command's
parser shows. Light on purpose: ``writing-rl --help`` imports it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from writing_rl.offline.files import JudgedJob


@dataclass(frozen=True, kw_only=True)
class SelectJob(JudgedJob):
    """What to judge, how to rank and how many ids to keep (``run_select``); ``out``, ``cache``,
    ``allow_judge_errors`` and ``progress``: see ``JudgedJob``."""

    data: str | Path  # Writing-RL parquet
    responses: str | Path  # JSONL of policy responses, one or more per id
    top_k: int | None = None  # keep this many ids ...
    top_percent: float | None = None  # ... or this percentage of the judged ids
    quotas: Mapping[str, int] | str | None = None  # counts per domain, or "proportional"
    domain_key: str = "data_source"  # the domain's column; dots reach into structs
    margin: str = "win-rate"  # "win-rate" or "score-gap" (margins.MARGIN_KINDS)
    seed: int = 0  # seed of the tie-breaking among equal margins
    bins: int = 20  # histogram bins over the margin's range
