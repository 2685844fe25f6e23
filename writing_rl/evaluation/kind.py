"""What ``writing-rl eval`` needs of a kind of evaluation (``EvalKind``), declared in ``kinds/<kind>.py``. The
declarations stay light: ``writing-rl --help`` imports them all, so a kind's ``run`` imports its work module (pyarrow,
the judge cache) only when the kind runs. How to add a kind: docs/evaluation.md.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from writing_rl.offline.judge import JudgeSettings


@dataclass(frozen=True)
class EvalKind:
    name: str  # the subcommand: writing-rl eval <name>
    help: str  # its line in `writing-rl eval --help`
    description: str  # what it judges, what it reports, the files it writes in --out
    epilog: str  # an example command line
    add_arguments: Callable[[argparse.ArgumentParser], None]  # its own options (the judge options are shared)
    # run(args, judge_settings) -> the lines to print. judge_settings() loads the settings of the judge options,
    # called after the kind's own checks so that an option error is reported before a config error.
    run: Callable[[argparse.Namespace, Callable[[], JudgeSettings]], list[str]]
    module: str  # the work module: run_<kind>, summarise (report.json), markdown (report.md)
    plot: str  # the PNG its run draws in --out


def add_out(p: argparse.ArgumentParser) -> None:
    """``--out``, required by every kind (``writing-rl eval`` reads report.json back from it)."""
    p.add_argument("--out", required=True, help="output directory (also holds the judge cache)")
