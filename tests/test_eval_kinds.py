"""`writing-rl eval`'s kinds come from one registry (``evaluation.kinds.KINDS``): each registered kind is a
subcommand with its help, a kind declared anywhere gets its options, the judge options and its run, and
`writing-rl --help` imports the declarations only, never a kind's work module."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from writing_rl.evaluation.kind import EvalKind
from writing_rl.evaluation.kinds import KINDS
from writing_rl.tools.cli import build_parser
from writing_rl.tools.commands.evaluation import add_eval

from conftest import REPO_DIR


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_every_registered_kind_is_an_eval_subcommand_with_its_help():
    eval_parser = subcommands(build_parser())["eval"]
    kinds = subcommands(eval_parser)
    assert list(kinds) == [kind.name for kind in KINDS]
    listing = one_line(eval_parser.format_help())
    for kind in KINDS:
        assert one_line(kind.help) in listing
        assert kinds[kind.name].description == kind.description and kinds[kind.name].epilog == kind.epilog
        assert "--judge-url" in kinds[kind.name].format_help()  # the shared judge options, after the kind's own


def test_each_kind_names_its_work_module_and_its_plot():
    for kind in KINDS:
        work = importlib.import_module(kind.module)
        assert callable(work.summarise) and callable(work.markdown), kind.module
        assert callable(getattr(work, "run_" + kind.name.replace("-", "_"))), kind.module
        assert kind.plot in kind.description


def throwaway_kind(runs: list) -> EvalKind:
    """A kind that writes a report with two failed judge calls and returns one line."""

    def add_arguments(p) -> None:
        p.add_argument("--size", type=int, required=True)
        p.add_argument("--out", required=True)

    def run(args, judge_settings) -> list[str]:
        runs.append((args.size, args.judge_url, callable(judge_settings)))
        report = {"failures": {"judge_error": 2}, "judge": {"first_failure": "HTTP 503"}}
        Path(args.out, "report.json").write_text(json.dumps(report))
        return [f"measured size {args.size}"]

    return EvalKind(
        name="throwaway",
        help="a kind only this test knows",
        description="Measures nothing; writes report.json and none.png.",
        epilog="example: writing-rl eval throwaway --size 3",
        add_arguments=add_arguments,
        run=run,
        module=__name__,
        plot="none.png",
    )


def test_a_kind_declared_anywhere_gets_its_options_the_judge_options_and_its_run(tmp_path, capsys):
    runs = []
    parser = argparse.ArgumentParser(prog="writing-rl")
    add_eval(parser.add_subparsers(dest="command"), kinds=(throwaway_kind(runs),))
    given = ["eval", "throwaway", "--size", "3", "--out", str(tmp_path), "--judge-url", "http://127.0.0.1:9/v1"]

    args = parser.parse_args(given)
    assert args.eval_kind == "throwaway" and args.handler(args) == 1  # judge errors: exit 1 ...
    assert runs == [(3, "http://127.0.0.1:9/v1", True)]
    printed = capsys.readouterr()
    assert printed.out == "measured size 3\n"
    assert printed.err.startswith("writing-rl eval throwaway: error: 2 judge calls failed after retries (the first")

    args = parser.parse_args([*given, "--allow-judge-errors"])
    assert args.handler(args) == 0  # ... unless accepted
    with pytest.raises(SystemExit):
        parser.parse_args(["eval", "writingbench", "--help"])  # only the kinds given are registered
    assert "invalid choice: 'writingbench'" in capsys.readouterr().err


def test_writing_rl_help_imports_no_kind_work_module():
    """The declarations are light: the parser imports no work module, hence no pyarrow or judge cache."""
    code = "import sys; from writing_rl.tools.cli import build_parser; build_parser(); print(*sorted(sys.modules))"
    imported = set(subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, capture_output=True, text=True,
                                  check=True).stdout.split())  # fmt: skip
    assert {"writing_rl.evaluation.kinds.writingbench", "writing_rl.evaluation.kind"} <= imported
    assert not {kind.module for kind in KINDS} & imported
    assert not {"pyarrow", "writing_rl.judge.cache", "writing_rl.offline.judge"} & imported
