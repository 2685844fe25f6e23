"""build_parquet.py's builder options (data_prep/commands/builder_options.py): each option named, typed and
defaulted by the builder field it sets, and a parse read back into the builder."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import pytest

from data_prep.build_parquet import build_parser
from data_prep.commands.builder_options import BuilderOptions, Option


@dataclass
class Reader:
    text_key: str = "text"
    label_key: str | None = None


@dataclass
class Toy:
    reader: Reader = field(default_factory=lambda: Reader(label_key="label"))
    rounds: int = 2
    swap: bool = True
    slot: str = "A"
    seed: int = 0
    template: str | None = None


def toy_parser() -> tuple[argparse.ArgumentParser, BuilderOptions]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    options = BuilderOptions(Toy, from_build_run=("seed",))
    options.add(parser, {"text_key": "the text", "label_key": "the label"}, under="reader")
    options.add(
        parser,
        {
            "rounds": "how many",
            "swap": Option("one order only", negate=True),
            "slot": Option("where", flag="--chosen-slot", choices=("A", "B")),
            "template": Option("a file", read=lambda path: path and f"text of {path}"),
        },
    )
    return parser, options


def test_the_options_take_the_fields_names_defaults_and_types():
    parser, options = toy_parser()
    assert options.builder(parser.parse_args([])) == Toy()
    args = ["--text-key", "t", "--rounds", "5", "--no-swap", "--chosen-slot", "B", "--seed", "7", "--template", "f"]
    built = options.builder(parser.parse_args(args))
    assert built == Toy(Reader("t", "label"), rounds=5, swap=False, slot="B", seed=7, template="text of f")
    assert options.default("reader.label_key") == "label"  # the builder's default reader, not the reader's
    with pytest.raises(SystemExit):
        parser.parse_args(["--rounds", "x"])  # an integer field takes integers


def test_a_default_of_the_command_line_is_its_own():
    parser = argparse.ArgumentParser()
    options = BuilderOptions(Toy)
    options.add(parser, {"reader.label_key": Option("the label", default="mine")})
    assert options.builder(parser.parse_args([])).reader == Reader("text", "mine")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["gqm-rl", "--duplicates", "keep", "--subgroup-augment", "3", "--seed", "4"],
         {"reader.duplicates": "keep", "subgroup_augment": 3, "seed": 4, "reader.analysis_key": None}),
        (["gqm-sft", "--no-cot", "--mt-key", "texts"],
         {"cot": False, "reader.mt_key": "texts", "reader.analysis_key": "analysis", "reader.duplicates": "keep"}),
        (["pref-sft", "--no-swap", "--critique-chosen-slot", "B"],
         {"swap": False, "critique_slot": "B", "reader.critique_key": "critique"}),
        (["pref-rl"], {"swap": True, "reader.critique_key": None, "data_source": "preference"}),
        (["prompts", "--lang-pair-key", "pair"], {"lang_pair_key": "pair", "data_source": None}),
    ],
)  # fmt: skip
def test_each_subcommand_sets_its_builders_fields(argv, expected):
    args = build_parser().parse_args([*argv, "--input", "in.jsonl", "--output", "out"])
    builder = args.make_builder(args)
    for path, value in expected.items():
        outer, _, inner = path.partition(".")
        assert (getattr(getattr(builder, outer), inner) if inner else getattr(builder, outer)) == value, path
