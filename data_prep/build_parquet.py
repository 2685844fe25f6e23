"""Build verl-ready parquet from raw data: ``python data_prep/build_parquet.py <subcommand> --help``.

Every subcommand reads parquet, JSONL, JSON, CSV or a local HF ``datasets`` directory in chunks,
validates each row (a bad row is reported with its row number, field and reason), splits train/test
with a seed, and writes ``<output>/train.parquet`` (and ``test.parquet``) all-or-nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from data_prep import pipeline  # noqa: E402
from data_prep.writing_rl import WritingRLBuilder  # noqa: E402


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, help="parquet, .jsonl, .json, .csv/.tsv or a datasets directory")
    parser.add_argument("--output", required=True, help="output directory for train.parquet / test.parquet")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and of any augmentation")
    parser.add_argument(
        "--test-size",
        type=pipeline.parse_test_size,
        default=0.0,
        help="test split: a fraction in [0, 1) or a number of input rows (default 0: no test split)",
    )
    parser.add_argument("--rejects", help="write rejected rows with their reasons to this JSONL file")
    parser.add_argument("--skip-bad", action="store_true", help="skip bad rows instead of stopping at the first")
    parser.add_argument("--chunk-size", type=int, default=10_000, help="rows read and written at a time")
    parser.add_argument("--hf-split", default="train", help="split to read from a datasets directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _writing_rl(subparsers) -> None:
    p = subparsers.add_parser(
        "writing-rl",
        help="prompts (+ criteria, references easiest first) -> Writing-RL rows",
        description=(
            "Each input row: a prompt, optional criteria (string or list) and optional references "
            "(string or list, easiest first). Output rows carry reward_model.ground_truth = "
            "{prompt, target, criteria, id} with ids dense 0..N-1 and extra_info.index = id."
        ),
    )
    _common(p)
    p.add_argument("--prompt-key", default="prompt")
    p.add_argument("--references-key", default="references", help="input column with the reference list")
    p.add_argument("--criteria-key", default="criteria")
    p.add_argument("--data-source", default="writing", help="data_source when the row has none")
    p.add_argument("--system-prompt", help="system message put before each prompt")
    p.set_defaults(
        make_builder=lambda a: WritingRLBuilder(
            prompt_key=a.prompt_key,
            references_key=a.references_key,
            criteria_key=a.criteria_key,
            data_source=a.data_source,
            system_prompt=a.system_prompt,
        )
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="build_parquet.py", description=__doc__.split("\n\n")[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    _writing_rl(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        report = pipeline.run(
            args.make_builder(args),
            args.input,
            args.output,
            seed=args.seed,
            test_size=args.test_size,
            rejects_path=args.rejects,
            skip_bad=args.skip_bad,
            chunk_size=args.chunk_size,
            hf_split=args.hf_split,
            progress=not args.quiet,
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"build_parquet {args.command}: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
