"""Build verl-ready parquet from raw data, one subcommand per kind of training data.

Every subcommand reads parquet, JSONL, JSON, CSV or a local HF datasets directory in chunks, validates
each row (a bad one is reported with its line or row, the field and what was expected), keeps your row
id and other columns in extra_info, splits train/test with a seed, and writes <output>/train.parquet
(and test.parquet) all-or-nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from data_prep.commands import gqm, preference, prompts, rubric, writing  # noqa: E402
from data_prep.commands.options import BuilderHelpFormatter, build_settings  # noqa: E402
from writing_rl.data import driver  # noqa: E402
from writing_rl.files import atomic_write_text  # noqa: E402

# The subcommands in the order --help lists them; each adds its parser (data_prep/commands/).
SUBCOMMANDS = (
    writing.add_writing_rl,
    gqm.add_gqm_sft,
    gqm.add_gqm_rl,
    preference.add_pref_sft,
    preference.add_pref_rl,
    prompts.add_prompts,
    rubric.add_rubric,
)


def write_dataset_info(output_dir: str, splits: list[str], name: str | None = None) -> Path:
    """LLaMA-Factory's dataset_info.json for a messages parquet (sharegpt format, OpenAI-style tags)."""
    name = name or Path(output_dir).resolve().name
    entry = {
        "formatting": "sharegpt",
        "columns": {"messages": "messages"},
        "tags": {
            "role_tag": "role",
            "content_tag": "content",
            "user_tag": "user",
            "assistant_tag": "assistant",
            "system_tag": "system",
        },
    }
    info = {f"{name}_{split}": {"file_name": f"{split}.parquet", **entry} for split in splits}
    path = Path(output_dir) / "dataset_info.json"
    atomic_write_text(path, json.dumps(info, indent=2) + "\n")
    return path


def _paragraphs(text: str) -> str:
    """``text`` with each paragraph on one line, for the help formatter to wrap."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in text.strip().split("\n\n"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="build_parquet.py", description=_paragraphs(__doc__), formatter_class=BuilderHelpFormatter
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    lines = ["subcommands, with an example each (python data_prep/build_parquet.py SUBCOMMAND --help for all options):"]
    for action in subparsers._choices_actions:
        example = subparsers.choices[action.dest].epilog.splitlines()[-1].strip()
        lines += [f"  {action.dest}: {action.help}", f"    {example}"]
    parser.epilog = "\n".join(lines)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        builder = args.make_builder(args)
        report = driver.run(builder, build_settings(args))
    except (ValueError, OSError) as exc:
        print(f"build_parquet {args.command}: error: {exc}", file=sys.stderr)
        return 2
    if "messages" in builder.schema.names:
        splits = [name for name in report.written]
        report.outputs["llama-factory"] = str(write_dataset_info(args.output, splits, args.dataset_name))
    print("\n".join(report.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
