"""``gqm-sft`` and ``gqm-rl``: ranked candidate groups -> GRRM SFT conversations or RLVR rows
(``writing_rl.data.builders.gqm``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from data_prep.commands.options import add_subcommand
from writing_rl.data.builders.gqm import GQMRLBuilder, GQMSFTBuilder
from writing_rl.data.builders.gqm_rows import DUPLICATES, GroupReader
from writing_rl.protocols import gqm_prompt
from writing_rl.protocols.gqm import PROMPT_TYPES


def _group_columns(parser: argparse.ArgumentParser, analysis: bool) -> None:
    g = parser.add_argument_group("input columns")
    g.add_argument("--source-key", default="src_text", help="source text to translate (translation groups)")
    g.add_argument("--prompt-key", default="prompt", help="writing request (writing groups, used when no source text)")
    g.add_argument("--src-lang-key", default="src_lang", help="source language, code or name")
    g.add_argument("--trg-lang-key", default="trg_lang", help="target language, code or name")
    g.add_argument("--lang-pair-key", default="lang_pair", help='language pair like "en-zh" (when src/trg are absent)')
    g.add_argument("--mt-key", default="mt_texts", help="list of candidate texts")
    g.add_argument("--score-key", default="scores", help="list of integer scores 0-10, one per candidate")
    if analysis:
        g.add_argument("--analysis-key", default="analysis", help="the annotator's analysis of the group")


def _gqm_options(parser: argparse.ArgumentParser, duplicates: str, policies=DUPLICATES) -> None:
    parser.add_argument(
        "--prompt-type", choices=PROMPT_TYPES, default="ranking_score",
        help="what the GenRM ends with: scores, a ranking, or both (default)",
    )  # fmt: skip
    parser.add_argument(
        "--duplicates", choices=policies, default=duplicates,
        help=f"identical candidates in a group: {' / '.join(policies)} (default {duplicates}); drop keeps the "
        "first of them; identical candidates with different scores are always rejected",
    )  # fmt: skip
    parser.add_argument("--system-prompt", help="system message put before each GQM request (default: none)")
    parser.add_argument(
        "--template",
        help="file with a GQM prompt template (placeholders: see writing_rl/protocols/gqm_prompt.py; default: the built-in one)",
    )


def _reader(a, analysis: bool) -> GroupReader:
    return GroupReader(
        source_key=a.source_key,
        prompt_key=a.prompt_key,
        src_lang_key=a.src_lang_key,
        trg_lang_key=a.trg_lang_key,
        lang_pair_key=a.lang_pair_key,
        mt_key=a.mt_key,
        score_key=a.score_key,
        analysis_key=a.analysis_key if analysis else None,
        duplicates=a.duplicates,
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
    _group_columns(p, analysis=True)
    # no "drop": the analysis names candidates by label, and dropping one would relabel the rest
    _gqm_options(p, duplicates="keep", policies=("keep", "reject"))
    p.add_argument("--no-cot", action="store_true", help="answers without analysis: just the final lines")
    p.add_argument("--dataset-name", help="name of the LLaMA-Factory dataset entry (default: the output dir name)")
    p.set_defaults(
        make_builder=lambda a: GQMSFTBuilder(
            reader=_reader(a, analysis=True),
            prompt_type=a.prompt_type,
            cot=not a.no_cot,
            system_prompt=a.system_prompt,
            template=_read_template(a.template),
        )
    )


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
    _group_columns(p, analysis=False)
    _gqm_options(p, duplicates="drop")
    p.add_argument(
        "--subgroup-augment", type=int, default=0, metavar="K",
        help="add K distinct random subgroups (2..N-1 candidates) of each group (default 0)",
    )  # fmt: skip
    p.add_argument(
        "--shuffle-augment", type=int, default=0, metavar="K",
        help="add K distinct reorderings of each group and subgroup, at most N!-1 (default 0)",
    )  # fmt: skip
    p.add_argument("--data-source", default="gqm", help="data_source of every row (default gqm)")
    p.set_defaults(
        make_builder=lambda a: GQMRLBuilder(
            reader=_reader(a, analysis=False),
            prompt_type=a.prompt_type,
            subgroup_augment=a.subgroup_augment,
            shuffle_augment=a.shuffle_augment,
            seed=a.seed,
            data_source=a.data_source,
            system_prompt=a.system_prompt,
            template=_read_template(a.template),
        )
    )


def _read_template(path: str | None) -> str | None:
    if not path:
        return None
    text = Path(path).read_text(encoding="utf-8")
    gqm_prompt.build_prompt(["a", "b"], writing_prompt="check", template=text)  # fails early on a bad template
    return text
