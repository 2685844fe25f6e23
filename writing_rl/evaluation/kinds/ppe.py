"""``writing-rl eval ppe``: a pairwise GenRM on PPE's human-preference and best-of-K correctness sets
(``..ppe``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument(
        "--data",
        required=True,
        nargs="+",
        metavar="[SET=]PATH",
        help="PPE files as published (parquet, JSON array or JSONL): human-preference rows {question_id, winner, "
        "prompt, response_1, response_2, [language, is_code]} or best-of-K rows {question_id, model_name, prompt, "
        "scores, sampled_conflict_pairs, response_1..K}; a path holding a PPE dataset's name (PPE-MATH-Best-of-K) "
        "is named after it, else SET=PATH names the set",
    )
    add_out(p)
    p.add_argument("--template", help="pairwise prompt file ({prompt}, {response_a}, {response_b}; default: built-in)")
    p.add_argument("--system-prompt", help="system message before each request (default: the built-in pairwise one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default: 0)")


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.ppe import run_ppe

    return run_ppe(
        args.data, args.out, judge_settings(), template=args.template, system_prompt=args.system_prompt,
        seed=args.seed, cache=args.cache, progress=not args.quiet,
    )  # fmt: skip


KIND = EvalKind(
    name="ppe",
    help="a pairwise GenRM on PPE (Preference Proxy Evaluations): human-preference and correctness accuracy",
    description=(
        "Judge PPE's own files: the human-preference pairs with a winner (ties left out) and each best-of-K row's "
        "sampled conflict pairs (the response scored correct preferred), every pair in both orders, each order "
        "counting half; a tie or a reply without a verdict is wrong, a failed call leaves its pair unscored "
        "(counted; a rerun retries only those calls). Reports each set's accuracy (95% bootstrap CI over rows, "
        "--seed), its breakdown by language and code (human preference) or by answering model (correctness), and "
        "the unweighted mean over the correctness sets. PPE's best-of-K curves and leaderboard correlations are "
        "not computed. Writes report.json, report.md, judgments.jsonl and sets.png."
    ),
    epilog=(
        "example: writing-rl eval ppe --data PPE-Human-Preference-V1/test.parquet PPE-MATH-Best-of-K/train.parquet "
        "--out runs/ppe --judge-url http://127.0.0.1:8000/v1 --judge-model genrm"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.ppe",
    plot="sets.png",
)
