"""The ``writing-rl`` command line: the parser, path checks and one-line errors. The subcommands live in
``writing_rl/tools/commands/``; each is a thin layer over a module that does the work."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from pathlib import Path

from writing_rl.help_format import HelpFormatter
from writing_rl.tools.commands import evaluation, judging, models, monitoring, probing, serving, training

COMMANDS = "writing-rl.commands"  # the entry-point group of the commands methods add (setup.py)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("writing-rl")
    except PackageNotFoundError:
        from writing_rl import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="writing-rl",
        description="Judge-based rewards (GenRM / LLM judges) for stock verl.",
        epilog="example: writing-rl preflight --help",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"writing-rl {_version()}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    subparsers = parser.add_subparsers(dest="command", required=True)
    training.add_score(subparsers)
    training.add_preflight(subparsers)
    training.add_check_config(subparsers)
    serving.add_serve_judge(subparsers)
    judging.add_select(subparsers)
    judging.add_order_references(subparsers)
    for point in sorted(entry_points(group=COMMANDS), key=lambda p: p.name):  # a method's own (the curriculum's)
        point.load()(subparsers)
    evaluation.add_eval(subparsers)
    probing.add_probe_judge(subparsers)
    monitoring.add_monitor(subparsers)
    models.add_model(subparsers)
    for sub in _parsers(parser):
        sub.formatter_class = HelpFormatter
        if sub._subparsers is None:  # also after the command: writing-rl score ... --debug
            sub.add_argument(
                "--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of an error"
            )
    return parser


def _parsers(parser: argparse.ArgumentParser):
    """Every (sub)command parser under ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield sub
                yield from _parsers(sub)


# Options naming paths, checked before a command starts. exists: a file or a directory (a parquet may be
# a directory of files); file; dir; local: checked only when written as a path (else a hub id);
# out: a directory to write, which must not be a file. A command may override a kind with
# ``set_defaults(path_kinds={...})``.
_PATH_OPTIONS = {
    "data": "exists",
    "responses": "file",
    "input": "exists",
    "config_dir": "dir",
    "state_dir": "dir",
    "tokenizer": "local",
    "model": "local",
    "out": "out",
    "output": "out",
    "benchmark": "file",
    "compare": "file",
    "template": "file",
}


def path_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the first path option of ``args`` that names no usable path (None: all fine)."""
    for dest, kind in {**_PATH_OPTIONS, **getattr(args, "path_kinds", {})}.items():
        value = getattr(args, dest, None)
        if not isinstance(value, str) or (kind == "local" and not value.startswith(("/", ".", "~"))):
            continue
        option, path = "--" + dest.replace("_", "-"), Path(value).expanduser()
        if kind == "out":
            if path.exists() and not path.is_dir():
                return f"{option}: {value} is a file, expected a directory to write to"
        elif not path.exists():
            return f"{option}: no such file or directory: {value}"
        elif kind == "dir" and not path.is_dir():
            return f"{option}: not a directory: {value}"
        elif kind == "file" and path.is_dir():
            return f"{option}: {value} is a directory, expected a file"
    return None


def main(argv: list[str] | None = None) -> int:
    from writing_rl.offline.errors import describe_error

    args = build_parser().parse_args(argv)
    prefix = f"writing-rl {args.command}: error:"
    problem = path_problem(args)
    if problem:
        print(f"{prefix} {problem}", file=sys.stderr)
        return 2
    try:
        return args.handler(args)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - one line for the user; --debug shows the traceback
        if args.debug:
            raise
        code, line = describe_error(exc)
        print(f"{prefix} {' '.join(line.splitlines())}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
