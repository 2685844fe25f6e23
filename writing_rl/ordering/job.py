"""The settings of one ``writing-rl order-references`` run (``OrderJob``), with their defaults, which the
command's parser shows. Light on purpose: ``writing-rl --help`` imports it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from writing_rl.offline.files import JudgedJob


@dataclass(frozen=True, kw_only=True)
class OrderJob(JudgedJob):
    """Where the candidates are, how to build the rows and how to aggregate (``run_order_references``);
    ``out``, ``cache``, ``allow_judge_errors`` and ``progress``: see ``JudgedJob``."""

    input_path: str | Path  # one row per prompt: parquet, JSONL, JSON, CSV or a datasets directory
    candidates_key: str = "candidates"  # list column of candidate references
    names_key: str | None = None  # list column naming each candidate, for the report
    prompt_key: str = "prompt"
    criteria_key: str = "criteria"
    data_source: str = "writing"  # when the row has none
    system_prompt: str | None = None  # system message put before each prompt
    method: str = "bt"  # "bt" (Bradley-Terry) or "copeland" (rank_aggregation.METHODS)
    prior: float = 1.0  # Bradley-Terry: virtual games, half won, against a fixed opponent of strength 1 (> 0)
    seed: int = 0  # seed of the train/test split
    test_size: float = 0.0  # a fraction in [0, 1) or a number of rows
    skip_bad: bool = False  # skip bad rows (listed in summary.json) instead of stopping
