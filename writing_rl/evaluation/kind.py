"""What ``writing-rl eval`` needs of a kind of evaluation (``EvalKind``): its subcommand, its own options and
how it runs from them. The command line (``tools/commands/evaluation.py``) adds one subcommand per kind of
``kinds.KINDS``, with the shared judge options, and prints what the kind returns.

A kind is its work module here (``<kind>.py``: ``run_<kind>`` judges, then writes report.json from its
``summarise``, report.md from its ``markdown`` and a PNG plot) and its declaration (``kinds/<kind>.py``:
``KIND``). The declarations are light on purpose: ``writing-rl --help`` imports them all, so a kind's ``run``
imports its work module (pyarrow, the judge cache) only when the kind runs.
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
