"""``writing-rl eval genrm-ranking``: a GQM GenRM's ranking accuracy on groups with gold scores
(``..genrm_ranking``)."""

from __future__ import annotations

import argparse

from writing_rl.evaluation.kind import EvalKind, add_out
from writing_rl.protocols.gqm import PROMPT_TYPES, VARIANTS


def add_arguments(p) -> None:
    p.add_argument(
        "--data",
        required=True,
        help="gqm-rl parquet (build_parquet.py gqm-rl: a file or directory; rows are sent as built) or JSONL of "
        "groups {prompt or src_text + src_lang/trg_lang, candidates, scores, [index or id]}",
    )
    add_out(p)
    p.add_argument(
        "--prompt-type",
        choices=PROMPT_TYPES,
        help="what the answer must end with (default: each row's extra_info.prompt_type, else ranking_score for "
        "gold scores and ranking for a gold ranking; JSONL groups: ranking_score)",
    )
    p.add_argument(
        "--variant", choices=VARIANTS, default="default",
        help="answer format: reasoning then the final block, no_cot or zero (default: default)",
    )  # fmt: skip
    p.add_argument(
        "--optional-headers",
        action="store_true",
        help="accept final blocks without their '### Final Ranking:' / '### Scores:' lines (require_headers=false)",
    )
    p.add_argument(
        "--margin-rewards",
        type=_margin_rewards,
        default=(1.0, 0.6, 0.2),
        metavar="X,X,...",
        help="score-term reward for a pair's score-difference error 0, 1, 2, ... (default: 1.0,0.6,0.2, the reward's)",
    )
    p.add_argument(
        "--template",
        help="GQM prompt template file for JSONL groups (placeholders: writing_rl/protocols/gqm_prompt.py; "
        "default: the built-in prompt)",
    )
    p.add_argument("--system-prompt", help="system message before each JSONL group's request (default: none)")


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.genrm_ranking import RankingOptions, run_genrm_ranking

    options = RankingOptions(
        prompt_type=args.prompt_type, variant=args.variant, require_headers=not args.optional_headers,
        margin_rewards=args.margin_rewards, template=args.template, system_prompt=args.system_prompt,
    )  # fmt: skip
    settings = judge_settings()
    return run_genrm_ranking(args.data, args.out, settings, options, cache=args.cache, progress=not args.quiet)


def _margin_rewards(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 1.0,0.6,0.2, got {text!r}") from None


KIND = EvalKind(
    name="genrm-ranking",
    help="a GQM GenRM's ranking accuracy on groups with gold scores (the ranking-accuracy reward's terms)",
    description=(
        "Send each group's GQM request to the GenRM and read the answer as reward_fns.ranking_accuracy does. "
        "Reports, with 95% bootstrap CIs over groups: the pairwise-order accuracy (the reward's ranking term), "
        "the score term, their sum, Kendall tau-b per group between the gold and the predicted ranking, the "
        "exact-ranking rate, the accuracy by group size and augmentation, and judge errors and unreadable "
        "answers (counted, never scored; a rerun retries only those calls). Writes report.json, report.md, "
        "judgments.jsonl and kendall_tau.png."
    ),
    epilog=(
        "example: writing-rl eval genrm-ranking --data data/grrm_rl/test.parquet --out runs/genrm_ranking "
        "--judge-url http://127.0.0.1:8000/v1 --judge-model grrm"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.genrm_ranking",
    plot="kendall_tau.png",
)
