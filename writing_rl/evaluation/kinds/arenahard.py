"""``writing-rl eval arena-hard``: policies on Arena-Hard-Auto v2.0, scored as the benchmark scores
(``..arenahard``)."""

from __future__ import annotations

import argparse

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument("--questions", required=True, help="the benchmark's question.jsonl: {uid, category, prompt}")
    p.add_argument(
        "--answers",
        nargs="+",
        action="extend",
        required=True,
        metavar="MODEL.jsonl",
        help="one model_answer/<model>.jsonl per policy: {uid, model, messages: [user, assistant {content: "
        "{answer}}], [metadata]}; metadata absent: computed (markdown by the official rules, token_len as words, "
        "CJK characters and punctuation marks). Repeatable; Hydra overrides go before it",
    )
    p.add_argument(
        "--baseline",
        nargs="+",
        action="extend",
        required=True,
        metavar="[CATEGORY=]PATH",
        help="the baseline's model_answer file, one for every category or one per category, e.g. "
        "creative_writing=gemini-2.0-flash-001.jsonl hard_prompt=o3-mini-2025-01-31.jsonl (the official "
        "baselines). Repeatable",
    )
    add_out(p)
    p.add_argument(
        "--category",
        default="creative_writing",
        help="creative_writing (the writing policies' headline), hard_prompt, or all: each category its own "
        "leaderboard against its baseline (default: creative_writing)",
    )
    p.add_argument(
        "--reader",
        choices=("arena-hard", "pairwise"),
        default="arena-hard",
        help="arena-hard: the five labels [[A>>B]] .. [[B>>A]] read as the benchmark reads them; pairwise: our "
        "pairwise GenRM's prompt and [[A]]/[[B]]/[[C]] verdicts (default: arena-hard)",
    )
    p.add_argument(
        "--style-control",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="control for length and markdown density (Bradley-Terry with style features); default: the official "
        "choice, on for hard_prompt, off for creative_writing",
    )
    p.add_argument(
        "--template",
        help="request file: arena-hard reader {QUESTION}, {ANSWER_A}, {ANSWER_B} (default: the benchmark's layout); "
        "pairwise reader {prompt}, {response_a}, {response_b} (default: the built-in pairwise prompt)",
    )
    p.add_argument("--system-prompt", help="system message of every request (default: ours, per category)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstraps (the official ones are unseeded)")
    p.add_argument(
        "--recount-metadata",
        action="store_true",
        help="compute every answer's metadata, the baseline's included, so both sides of the length feature use "
        "one token count",
    )
    p.set_defaults(path_kinds={"questions": "file"})


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.arenahard import run_arena_hard

    return run_arena_hard(
        args.questions, args.answers, args.baseline, args.out, judge_settings(), category=args.category,
        reader=args.reader, style_control=args.style_control, template=args.template,
        system_prompt=args.system_prompt, seed=args.seed, recount_metadata=args.recount_metadata, cache=args.cache,
        progress=not args.quiet,
    )  # fmt: skip


KIND = EvalKind(
    name="arena-hard",
    help="policies on Arena-Hard-Auto v2.0 against the category's baseline, scored as the benchmark scores",
    description=(
        "Judge each policy answer against the baseline's answer to the same question in two games (baseline as "
        "A, then as B), from the benchmark's question.jsonl and model_answer files. Scores as show_result.py: a "
        "strong verdict counts three rows, a battle with a failed or unreadable game is dropped whole (counted); "
        "the score is the bootstrapped win rate against the baseline (50), or with style control the "
        "Bradley-Terry score controlled for length and markdown density, with its 5-95% interval. Writes "
        "judgments.jsonl, report.json, report.md and scores.png."
    ),
    epilog=(
        "example: writing-rl eval arena-hard --questions arena-hard-v2.0/question.jsonl --answers policy.jsonl "
        "--baseline creative_writing=arena-hard-v2.0/model_answer/gemini-2.0-flash-001.jsonl --out runs/ah "
        "--judge-url http://127.0.0.1:8000/v1 --judge-model judge"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.arenahard",
    plot="scores.png",
)
