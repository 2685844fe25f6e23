"""``writing-rl eval judgebench``: a judge on JudgeBench's pairs, scored as the benchmark scores them
(``..judgebench``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument(
        "--data",
        required=True,
        help="the benchmark's file, JSONL (data/dataset=judgebench,response_model=*.jsonl) or parquet (an HF split): "
        "rows {pair_id, source, question, response_A, response_B, label A>B|B>A}",
    )
    add_out(p)
    p.add_argument(
        "--reader",
        choices=("pairwise", "arena-hard"),
        default="pairwise",
        help="pairwise: our pairwise GenRM's prompt and [[A]]/[[B]]/[[C]] verdict; arena-hard: a prompt asking for "
        "[[A>>B]] ... [[B>>A]], read as the benchmark reads it (default: pairwise)",
    )
    p.add_argument("--single-game", action="store_true", help="judge each pair once (A, B) instead of in both orders")
    p.add_argument(
        "--template",
        help="the request as a file with {prompt}, {response_a} and {response_b} ({response_a_text}: unfenced) "
        "(default: the reader's built-in prompt)",
    )
    p.add_argument("--system-prompt", help="system message before each request (default: the reader's built-in one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default: 0)")


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.judgebench import run_judgebench

    return run_judgebench(
        args.data, args.out, judge_settings(), reader=args.reader, single_game=args.single_game,
        template=args.template, system_prompt=args.system_prompt, seed=args.seed, cache=args.cache,
        progress=not args.quiet,
    )  # fmt: skip


KIND = EvalKind(
    name="judgebench",
    help="a judge on JudgeBench's pairs (knowledge, reasoning, math, coding), scored as the benchmark scores",
    description=(
        "Judge the benchmark's own file (JSONL or parquet), each pair in both orders (game 1: A, B; game 2: B, A) "
        "unless --single-game. Reports the benchmark's scores (100 x correct / pairs) for Knowledge, Reasoning, "
        "Math, Coding and Overall (pooled), each with a seeded 95% bootstrap interval and its tallies; a reply "
        "with no decision and a failed call both count neither way, as in the benchmark, and are counted in the "
        "report (a rerun retries only the failed calls). Writes report.json, report.md, judgments.jsonl, "
        "pairs.jsonl and buckets.png."
    ),
    epilog=(
        "example: writing-rl eval judgebench --data 'dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl' "
        "--out runs/judgebench --judge-url http://127.0.0.1:8000/v1 --judge-model genrm"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.judgebench",
    plot="buckets.png",
)
