"""``writing-rl eval rmbench``: a pairwise or rating GenRM on RM-Bench's style matrix (``..rmbench``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument(
        "--data",
        required=True,
        help="RM-Bench's file, a JSON list as published (data/total_dataset.json), JSONL or parquet: rows {id, "
        "prompt, chosen[3], rejected[3], domain}, answers in the order concise, detailed plain, detailed markdown",
    )
    add_out(p)
    p.add_argument(
        "--genrm",
        choices=("pairwise", "rated"),
        default="pairwise",
        help="pairwise: [[A]]/[[B]] verdicts on the 9 style pairs, both orders; rated: each of the 6 answers rated "
        "alone, compared as RM-Bench compares reward scores (default: pairwise)",
    )
    p.add_argument(
        "--reader", choices=("rating", "pointwise"), help="--genrm rated: the rating format (default: rating)"
    )
    p.add_argument(
        "--template",
        help="prompt file: pairwise ({prompt}, {response_a}, {response_b}) or, with --genrm rated, the rating prompt "
        "(default: the built-in prompt)",
    )
    p.add_argument("--system-prompt", help="system message before each request (default: the built-in one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default: 0)")


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.inputs import InputError
    from writing_rl.evaluation.rmbench import run_rmbench

    if args.genrm == "pairwise" and args.reader:
        raise InputError("--reader only applies to --genrm rated")
    return run_rmbench(
        args.data, args.out, judge_settings(), genrm=args.genrm, reader=args.reader or "rating",
        template=args.template, system_prompt=args.system_prompt, seed=args.seed, cache=args.cache,
        progress=not args.quiet,
    )  # fmt: skip


KIND = EvalKind(
    name="rmbench",
    help="a pairwise or rating GenRM on RM-Bench, scored by its 3x3 style matrix (hard, normal, easy)",
    description=(
        "Judge RM-Bench's own file. RM-Bench has no official generative-judge path; two are offered: pairwise "
        "GenRMs judge each of a prompt's 9 (chosen, rejected) style pairs in both orders (correct: the chosen "
        "answer wins more orders than it loses); rating GenRMs rate each of the 6 answers alone (correct: a "
        "strictly higher rating, RM-Bench's rule). Reports each domain's 3x3 accuracy matrix, hard, normal, easy "
        "and average (safety-refuse and safety-response pooled) and the total as RM-Bench averages them, with "
        "seeded bootstrap intervals; a failed call leaves its prompt unscored (counted; a rerun retries only "
        "those calls). Writes report.json, report.md, judgments.jsonl, items.jsonl and styles.png."
    ),
    epilog=(
        "example: writing-rl eval rmbench --data RM-Bench/data/total_dataset.json --out runs/rmbench "
        "--judge-url http://127.0.0.1:8000/v1 --judge-model genrm"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.rmbench",
    plot="styles.png",
)
