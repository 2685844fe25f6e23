"""``pref-sft`` and ``pref-rl``: preference pairs -> pairwise GenRM SFT conversations or RL rows
(``writing_rl.data.builders.preference``)."""

from __future__ import annotations

import argparse

from data_prep.commands.options import add_subcommand
from writing_rl.data.builders.preference import OUTPUT_FORMATS, PairReader, PrefRLBuilder, PrefSFTBuilder


def _pair_columns(parser: argparse.ArgumentParser, sft: bool) -> None:
    g = parser.add_argument_group("input columns (default: the first present of the usual names)")
    g.add_argument("--prompt-key", help="the request (default: prompt, question, instruction or input)")
    g.add_argument(
        "--chosen-key", help="preferred response (default: chosen, chosen_response, response_chosen, chosen_story)"
    )
    g.add_argument(
        "--rejected-key",
        help="other response (default: rejected, rejected_response, response_rejected, rejected_story)",
    )
    g.add_argument("--tie-key", help="boolean column marking pairs judged equally good (label C; default: no ties)")
    g.add_argument(
        "--chosen-score-key", help="integer 0-10 score of the chosen response (scores output format; default: none)"
    )
    g.add_argument("--rejected-score-key", help="integer 0-10 score of the rejected response (default: none)")
    if sft:
        g.add_argument("--critique-key", default="critique", help="reasoning that precedes the label (optional column)")
        g.add_argument(
            "--critique-swapped-key", default="critique_swapped",
            help="critique written for the swapped order (optional column)",
        )  # fmt: skip
    parser.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, default="verdict",
        help="what the GenRM answers: a verdict [[A]]/[[B]]/[[C]] (default) or a score line 'A: 7, B: 4'",
    )  # fmt: skip
    parser.add_argument(
        "--no-swap", action="store_true",
        help="one row per pair instead of both orders; the chosen response's slot is drawn with the seed",
    )  # fmt: skip
    parser.add_argument("--system-prompt", help="system message (default: the pairwise judge's for the verdict format)")
    parser.add_argument(
        "--template",
        help="pairwise judge template file for the verdict format (default: the built-in one, writing_rl/protocols/prompts.py)",
    )


def _pair_reader(a, sft: bool) -> PairReader:
    return PairReader(
        prompt_key=a.prompt_key,
        chosen_key=a.chosen_key,
        rejected_key=a.rejected_key,
        tie_key=a.tie_key,
        critique_key=a.critique_key if sft else None,
        critique_swapped_key=a.critique_swapped_key if sft else None,
        chosen_score_key=a.chosen_score_key,
        rejected_score_key=a.rejected_score_key,
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
    _pair_columns(p, sft=True)
    p.add_argument(
        "--critique-chosen-slot", choices=("A", "B"), default="A",
        help="where the chosen response sat when the critique was written (default A)",
    )  # fmt: skip
    p.add_argument("--dataset-name", help="name of the LLaMA-Factory dataset entry (default: the output dir name)")
    p.set_defaults(
        make_builder=lambda a: PrefSFTBuilder(
            reader=_pair_reader(a, sft=True),
            output_format=a.output_format,
            swap=not a.no_swap,
            seed=a.seed,
            system_prompt=a.system_prompt,
            template=a.template,
            critique_slot=a.critique_chosen_slot,
        )
    )


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
    _pair_columns(p, sft=False)
    p.add_argument("--data-source", default="preference", help="data_source of every row (default preference)")
    p.set_defaults(
        make_builder=lambda a: PrefRLBuilder(
            reader=_pair_reader(a, sft=False),
            output_format=a.output_format,
            swap=not a.no_swap,
            seed=a.seed,
            system_prompt=a.system_prompt,
            template=a.template,
            data_source=a.data_source,
        )
    )
