"""``pref-sft`` and ``pref-rl``: preference pairs -> pairwise GenRM SFT conversations or RL rows
(``writing_rl.data.builders.preference``)."""

from __future__ import annotations

import argparse

from data_prep.commands.builder_options import BuilderOptions, Option
from data_prep.commands.options import add_dataset_name, add_subcommand
from writing_rl.data.builders.preference import OUTPUT_FORMATS, PrefRLBuilder, PrefSFTBuilder


def _pair_options(parser: argparse.ArgumentParser, options: BuilderOptions, sft: bool) -> None:
    g = parser.add_argument_group("input columns (default: the first present of the usual names)")
    columns: dict[str, Option | str] = {
        "prompt_key": "the request (default: prompt, question, instruction or input)",
        "chosen_key": "preferred response (default: chosen, chosen_response, response_chosen, chosen_story)",
        "rejected_key": "other response (default: rejected, rejected_response, response_rejected, rejected_story)",
        "tie_key": "boolean column marking pairs judged equally good (label C; default: no ties)",
        "chosen_score_key": "integer 0-10 score of the chosen response (scores output format; default: none)",
        "rejected_score_key": "integer 0-10 score of the rejected response (default: none)",
    }
    if sft:  # the command line reads critiques from these columns unless told otherwise; the reader, from none
        columns["critique_key"] = Option("reasoning that precedes the label (optional column)", default="critique")
        columns["critique_swapped_key"] = Option(
            "critique written for the swapped order (optional column)", default="critique_swapped"
        )
    options.add(g, columns, under="reader")
    options.add(
        parser,
        {
            "output_format": Option(
                "what the GenRM answers: a verdict [[A]]/[[B]]/[[C]] (default) or a score line 'A: 7, B: 4'",
                choices=OUTPUT_FORMATS,
            ),
            "swap": Option(
                "one row per pair instead of both orders; the chosen response's slot is drawn with the seed",
                negate=True,
            ),
            "system_prompt": "system message (default: the pairwise judge's for the verdict format)",
            "template": "pairwise judge template file for the verdict format (default: the built-in one, "
            "writing_rl/protocols/prompts.py)",
        },
    )


def add_pref_sft(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "pref-sft",
        help="preference pairs (+ critique) -> pairwise GenRM SFT conversations (messages parquet)",
        description=(
            "Each input row: a prompt, a chosen and a rejected response (texts or chats), optionally a "
            "critique. Output: a 'messages' parquet, user = the pairwise judge request, assistant = the "
            "critique then the label ([[A]]/[[B]]/[[C]], or a score line). Each pair is written in both "
            "orders (the label follows the chosen response) unless --no-swap; a critique fits only the order "
            "it was written for (--critique-chosen-slot), so the other order needs --critique-swapped-key."
        ),
        example="--input litbench.parquet --output data/genrm_sft --test-size 0.02",
    )
    options = BuilderOptions(PrefSFTBuilder, from_build_run=("seed",))
    _pair_options(p, options, sft=True)
    options.add(
        p,
        {
            "critique_slot": Option(
                "where the chosen response sat when the critique was written (default A)",
                flag="--critique-chosen-slot",
                choices=("A", "B"),
            )
        },
    )
    add_dataset_name(p)
    p.set_defaults(make_builder=options.builder)


def add_pref_rl(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "pref-rl",
        help="preference pairs -> pairwise GenRM RL rows (ground truth: the label A/B/C)",
        description=(
            "Each input row: a prompt, a chosen and a rejected response (texts or chats). Output: verl RL "
            "rows asking the GenRM to compare A and B, reward_model.ground_truth = the chosen response's slot "
            "(A or B; C for ties); reward: reward_fns.preference (hydra_configs/genrm_pairwise_rl.yaml). Each "
            "pair is written in both orders unless --no-swap."
        ),
        example="--input litbench.parquet --output data/genrm_rl --test-size 0.02",
    )
    options = BuilderOptions(PrefRLBuilder, from_build_run=("seed",))
    _pair_options(p, options, sft=False)
    options.add(p, {"data_source": "data_source of every row (default preference)"})
    p.set_defaults(make_builder=options.builder)
