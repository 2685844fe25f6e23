"""What every ``build_parquet.py`` subcommand shares: its help formatter, the options of the build run
(input, output, split, rejects, ids) read into ``driver.BuildSettings``, a parser whose ``--help`` ends
with an example, and the helps of builder fields several subcommands have."""

from __future__ import annotations

import argparse

from writing_rl.data.builder import parse_test_size
from writing_rl.data.driver import BuildSettings
from writing_rl.help_format import HelpFormatter

# Helps of builder fields that several subcommands have (``builder_options``).
SYSTEM_PROMPT = "system message put before each prompt (default: none)"
LANGUAGE_COLUMNS = {
    "src_lang_key": "source language, code or name",
    "trg_lang_key": "target language, code or name",
    "lang_pair_key": 'language pair like "en-zh" (when src/trg are absent)',
}


class BuilderHelpFormatter(HelpFormatter):
    """writing-rl's formatter (every default shown, examples kept whole), saying also which options are
    required and that a flag is off unless given."""

    def _get_help_string(self, action) -> str:
        text = super()._get_help_string(action)
        if not action.option_strings or isinstance(action, argparse._HelpAction) or "default" in text.lower():
            return text
        if action.required:
            return f"{text} (required)"
        if action.nargs == 0 and action.default is False:
            return f"{text} (default: off)"
        return text if action.default is not None else f"{text} (default: none)"


def add_subcommand(subparsers, name: str, help: str, description: str, example: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with an example (``example`` holds its arguments), with the
    options every build run takes."""
    parser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=f"example:\n  python data_prep/build_parquet.py {name} {example}",
        formatter_class=BuilderHelpFormatter,
    )
    parser.add_argument("--input", required=True, help="parquet, .jsonl, .json, .csv/.tsv or a datasets directory")
    parser.add_argument("--output", required=True, help="output directory for train.parquet / test.parquet")
    parser.add_argument(
        "--seed", type=int, default=BuildSettings.seed, help="seed of the split and of any augmentation"
    )
    parser.add_argument(
        "--test-size",
        type=parse_test_size,
        default=BuildSettings.test_size,
        help="test split: a fraction in [0, 1) or a number of input rows (default 0: no test split)",
    )
    parser.add_argument(
        "--rejects", help="write rejected rows with their line and reason to this JSONL file (default: none)"
    )
    parser.add_argument("--skip-bad", action="store_true", help="skip bad rows instead of stopping at the first")
    parser.add_argument(
        "--id-key",
        help="input column with your row id, kept as extra_info.source_id; every row must have one "
        "(default: the 'id' column, else 'index', where the input has one; rows may lack it)",
    )
    parser.add_argument(
        "--chunk-size", type=int, default=BuildSettings.chunk_size, help="rows read and written at a time"
    )
    parser.add_argument("--hf-split", default=BuildSettings.hf_split, help="split to read from a datasets directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def add_dataset_name(parser: argparse.ArgumentParser) -> None:
    """The option of the SFT builders, which write LLaMA-Factory's dataset_info.json beside their parquet."""
    parser.add_argument("--dataset-name", help="name of the LLaMA-Factory dataset entry (default: the output dir name)")


def build_settings(args: argparse.Namespace) -> BuildSettings:
    """The build run the options of ``add_subcommand`` ask for."""
    return BuildSettings(
        input_path=args.input,
        output_dir=args.output,
        seed=args.seed,
        test_size=args.test_size,
        rejects_path=args.rejects,
        skip_bad=args.skip_bad,
        chunk_size=args.chunk_size,
        hf_split=args.hf_split,
        progress=not args.quiet,
        id_key=args.id_key,
    )
