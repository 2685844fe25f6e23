"""``writing-rl eval rewardbench``: a pairwise, ranking or rating GenRM on RewardBench (v1) or RewardBench 2
(``..rewardbench``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out
from writing_rl.evaluation.ratings import READERS
from writing_rl.protocols.gqm import PROMPT_TYPES, VARIANTS


def add_arguments(p) -> None:
    p.add_argument(
        "--data",
        required=True,
        help="the benchmark's file, parquet or JSONL: v1 rows {prompt, chosen, rejected, subset, [id]}, v2 rows "
        "{id, prompt, chosen[], rejected[], subset} (Ties rows: id ref:<n> or tied:<n>, every correct answer chosen)",
    )
    p.add_argument("--version", type=int, choices=(1, 2), required=True, help="RewardBench 1 or 2")
    add_out(p)
    p.add_argument(
        "--genrm",
        choices=("pairwise", "ranking", "rated"),
        default="pairwise",
        help="pairwise: [[A]]/[[B]] verdicts, both orders; ranking: one GQM ranking call per prompt; rated: each "
        "answer rated alone, 1 to 10 (v2's Ties is rated whatever this says) (default: pairwise)",
    )
    p.add_argument(
        "--exclude",
        type=_subset_names,
        metavar="SUBSET,...",
        default=(),
        help="subsets to leave out (v2's overall score averages all six, Ties included)",
    )
    p.add_argument(
        "--template",
        help="pairwise prompt file ({prompt}, {response_a}, {response_b}), with --genrm ranking a GQM template, "
        "with --genrm rated a rating prompt ({prompt} and {response}, fenced, or {completion}, as it is; "
        "--reader pointwise: {prompt}, {response}, {criteria}) (default: the built-in prompt)",
    )
    p.add_argument(
        "--system-prompt",
        help="system message before each request (default: the built-in pairwise one; none for ranking and for "
        "--reader rating; the pointwise reward's for --reader pointwise; for rating calls an empty string gives none)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default: 0)")
    g = p.add_argument_group("rating calls (--genrm rated, and v2's Ties under every --genrm)")
    g.add_argument(
        "--reader",
        choices=READERS,
        default="rating",
        help="rating: our prompt, the number 1-10 at the very end of the reply read as RewardBench 2 reads it; "
        'pointwise: our pointwise reward\'s prompt and reader, {"score": n} on the last line (default: rating)',
    )
    g.add_argument(
        "--ties-template",
        help="the Ties rows' rating prompt file (default: --template with --genrm rated, else the reader's own; "
        "--reader rating has a Ties variant that need not weigh depth and detail)",
    )
    g = p.add_argument_group("--genrm ranking")
    g.add_argument("--prompt-type", choices=PROMPT_TYPES, help="(default: ranking_score)")
    g.add_argument("--variant", choices=VARIANTS, help="answer format (default: default)")
    g.add_argument("--optional-headers", action="store_true", help="accept final blocks without their headers")


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.genrm_ranking import RankingOptions
    from writing_rl.evaluation.inputs import InputError
    from writing_rl.evaluation.rewardbench import RatingOptions, run_rewardbench

    ranking_only = {"--prompt-type": args.prompt_type, "--variant": args.variant,
                    "--optional-headers": args.optional_headers}  # fmt: skip
    if args.genrm != "ranking" and (given := [flag for flag, value in ranking_only.items() if value]):
        raise InputError(f"{', '.join(given)} only apply to --genrm ranking")
    rated = args.genrm == "rated"
    if args.version == 1 and args.ties_template:
        raise InputError("--ties-template only applies to RewardBench 2 (--version 2)")
    if args.version == 1 and not rated and args.reader != "rating":
        raise InputError("--reader only applies to rating calls: --genrm rated, or RewardBench 2's Ties")
    options = RankingOptions(
        prompt_type=args.prompt_type or "ranking_score", variant=args.variant or "default",
        require_headers=not args.optional_headers, template=args.template, system_prompt=args.system_prompt,
    )  # fmt: skip
    rating = RatingOptions(
        reader=args.reader, template=args.template if rated else None, ties_template=args.ties_template,
        system_prompt=args.system_prompt,
    )  # fmt: skip
    return run_rewardbench(
        args.data, args.out, judge_settings(), args.version, genrm=args.genrm, exclude=args.exclude,
        options=options, rating=rating, cache=args.cache, progress=not args.quiet, seed=args.seed,
    )  # fmt: skip


def _subset_names(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


KIND = EvalKind(
    name="rewardbench",
    help="a pairwise, ranking or rating GenRM on RewardBench (v1) or RewardBench 2, scored as the benchmark scores",
    description=(
        "Judge the benchmark's own file (parquet or JSONL). Pairwise GenRMs compare the chosen answer with "
        "each rejected one in both orders; ranking GenRMs rank all of a prompt's answers in one call; rated "
        "GenRMs rate each answer alone, 1 to 10. RewardBench 2's Ties subset is always rated and scored by the "
        "benchmark's own formula. Reports each subset's score (95% bootstrap CI) and count, the Ties score's "
        "parts, v1's section scores (the benchmark's example weights) and the overall score as the benchmark "
        "defines it (v2: the mean of its six subsets); an unreadable reply counts as the benchmark counts it, a "
        "failed call leaves its prompt unscored (counted; a rerun retries only those calls). "
        "Writes report.json, report.md, judgments.jsonl, items.jsonl and subsets.png."
    ),
    epilog=(
        "example: writing-rl eval rewardbench --data reward-bench-2/test.parquet --version 2 --out runs/rb2 "
        "--judge-url http://127.0.0.1:8000/v1 --judge-model genrm"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.rewardbench",
    plot="subsets.png",
)
