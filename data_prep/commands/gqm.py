"""``gqm-sft`` and ``gqm-rl``: ranked candidate groups -> GRRM SFT conversations or RLVR rows
(``writing_rl.data.builders.gqm``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from data_prep.commands.builder_options import BuilderOptions, Option
from data_prep.commands.options import LANGUAGE_COLUMNS, add_dataset_name, add_subcommand
from writing_rl.data.builders.gqm import GQMRLBuilder, GQMSFTBuilder
from writing_rl.data.builders.gqm_rows import DUPLICATES
from writing_rl.protocols import gqm_prompt
from writing_rl.protocols.gqm import PROMPT_TYPES

GROUP_COLUMNS = {  # the fields of the builders' GroupReader
    "source_key": "source text to translate (translation groups)",
    "prompt_key": "writing request (writing groups, used when no source text)",
    **LANGUAGE_COLUMNS,
    "mt_key": "list of candidate texts",
    "score_key": "list of integer scores 0-10, one per candidate",
}


def _group_columns(parser: argparse.ArgumentParser, options: BuilderOptions, analysis: bool) -> None:
    columns = {**GROUP_COLUMNS, "analysis_key": "the annotator's analysis of the group"} if analysis else GROUP_COLUMNS
    options.add(parser.add_argument_group("input columns"), columns, under="reader")


def _gqm_options(parser: argparse.ArgumentParser, options: BuilderOptions, policies=DUPLICATES) -> None:
    duplicates = options.default("reader.duplicates")
    options.add(
        parser,
        {
            "prompt_type": Option(
                "what the GenRM ends with: scores, a ranking, or both (default)", choices=PROMPT_TYPES
            ),
            "reader.duplicates": Option(
                f"identical candidates in a group: {' / '.join(policies)} (default {duplicates}); drop keeps the "
                "first of them; identical candidates with different scores are always rejected",
                choices=policies,
            ),
            "system_prompt": "system message put before each GQM request (default: none)",
            "template": Option(
                "file with a GQM prompt template (placeholders: see writing_rl/protocols/gqm_prompt.py; default: the "
                "built-in one)",
                read=_read_template,
            ),
        },
    )


def add_gqm_sft(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "gqm-sft",
        help="ranked groups + analysis -> GRRM SFT conversations (messages parquet)",
        description=(
            "Each input row: a source text and languages (or a writing prompt), candidates, one integer "
            "score 0-10 per candidate and an analysis. Output: a 'messages' parquet, [system,] user = the GQM "
            "request, assistant = the analysis then the final block of --prompt-type, for verl's SFT trainer "
            "(scripts/train_genrm_sft.sh) or LLaMA-Factory (dataset_info.json is written beside it). "
            "No augmentation: the analysis names candidates by their labels."
        ),
        example="--input ranking.parquet --output data/grrm_sft --test-size 500",
    )
    options = BuilderOptions(GQMSFTBuilder)
    _group_columns(p, options, analysis=True)
    # no "drop": the analysis names candidates by label, and dropping one would relabel the rest
    _gqm_options(p, options, policies=("keep", "reject"))
    options.add(p, {"cot": Option("answers without analysis: just the final lines", negate=True)})
    add_dataset_name(p)
    p.set_defaults(make_builder=options.builder)


def add_gqm_rl(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "gqm-rl",
        help="ranked groups -> GRRM RLVR rows with subgroup/shuffle augmentation",
        description=(
            "Each input row: a source text and languages (or a writing prompt), candidates and one integer "
            "score 0-10 per candidate. Output: verl RL rows whose reward_model.ground_truth is the score "
            'dict as JSON ({"A": 9, ...}) or, for --prompt-type ranking, the ranking line; reward: '
            "reward_fns.ranking_accuracy (hydra_configs/grrm_rlvr.yaml). Augmentation is seeded by --seed "
            "and each group's content, so reruns give the same rows."
        ),
        example="--input ranking.parquet --output data/grrm_rl --subgroup-augment 4 --shuffle-augment 4 --test-size 1000",
    )
    options = BuilderOptions(GQMRLBuilder, from_build_run=("seed",))
    _group_columns(p, options, analysis=False)
    _gqm_options(p, options)
    options.add(
        p,
        {
            "subgroup_augment": Option(
                "add K distinct random subgroups (2..N-1 candidates) of each group (default 0)", metavar="K"
            ),
            "shuffle_augment": Option(
                "add K distinct reorderings of each group and subgroup, at most N!-1 (default 0)", metavar="K"
            ),
            "data_source": "data_source of every row (default gqm)",
        },
    )
    p.set_defaults(make_builder=options.builder)


def _read_template(path: str | None) -> str | None:
    if not path:
        return None
    text = Path(path).read_text(encoding="utf-8")
    gqm_prompt.build_prompt(["a", "b"], writing_prompt="check", template=text)  # fails early on a bad template
    return text
