"""``eval``: measure what training bought, one subcommand per kind of evaluation (``evaluation.kinds.KINDS``;
each kind declares its own options and run in ``writing_rl/evaluation/kinds/``)."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Sequence

from writing_rl.evaluation.kind import EvalKind
from writing_rl.evaluation.kinds import KINDS
from writing_rl.tools.commands.judge_options import add_judge_options, judge_settings_from


def add_eval(subparsers, kinds: Sequence[EvalKind] = KINDS) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a policy (WritingBench scores, win rate) or a GenRM (pairwise or ranking accuracy, RewardBench)",
        description=(
            "Evaluate with the same judge layer, cache and progress output as the other tools. Each kind is "
            "resumable: rerun the same command with the same --out and no answered judge call is made again. "
            "Outputs: report.json, report.md and plots (PNG, with matplotlib) in --out."
        ),
        epilog="example: writing-rl eval writingbench --help",
    )
    kind_parsers = p.add_subparsers(dest="eval_kind", required=True)
    for kind in kinds:
        add_kind(kind_parsers, kind)


def add_kind(kind_parsers, kind: EvalKind) -> None:
    """``writing-rl eval <kind.name>``: the kind's own options, then the judge options."""
    p = kind_parsers.add_parser(kind.name, help=kind.help, description=kind.description, epilog=kind.epilog)
    kind.add_arguments(p)
    add_judge_options(p)
    p.set_defaults(handler=partial(run_kind, kind))


def run_kind(kind: EvalKind, args) -> int:
    return _printed(kind.run(args, partial(judge_settings_from, args)), args, kind.name)


def _printed(lines: list[str], args, kind: str) -> int:
    """Print a kind's lines; exit 1 when its report counts judge calls that failed after their retries
    (the reports are written either way), unless ``--allow-judge-errors``."""
    print("\n".join(lines))
    report = json.loads((Path(args.out) / "report.json").read_text(encoding="utf-8"))
    failures = report.get("failures") or {}
    failed = failures.get("judge_error") or 0
    if failed and not args.allow_judge_errors:
        first = (report.get("judge") or {}).get("first_failure")
        scored = f"scores them as the benchmark does ({failures['rule']})" if failures.get("rule") else "scores none"
        print(
            f"writing-rl eval {kind}: error: {failed} judge calls failed after retries"
            + (f" (the first: {first})" if first else "")
            + f"; the report counts them and {scored}; rerun the same command to retry only those calls (or "
            "pass --allow-judge-errors to accept the report)",
            file=sys.stderr,
        )
        return 1
    return 0
