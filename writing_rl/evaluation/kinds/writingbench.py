"""``writing-rl eval writingbench``: criteria-based scores in WritingBench's formats (``..writingbench``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument("--benchmark", required=True, help="JSONL: index, domain1, domain2, query, checklist")
    p.add_argument(
        "--responses",
        required=True,
        help="JSONL of {index, response}, a verl dump (trainer.validation_data_dir or rollout_data_dir, or one "
        "<step>.jsonl; the first sample per prompt) or verl's generation parquet (main_generation_server)",
    )
    add_out(p)
    p.add_argument("--step", type=int, help="with a verl dump directory: the step to evaluate (default: the latest)")
    p.add_argument(
        "--compare",
        help="another run's scores.jsonl (ours or WritingBench's): paired by (index, criterion), the overall "
        "difference and per-domain differences (default: none)",
    )
    p.add_argument(
        "--template",
        help="critic prompt file with {query}, {response} (fenced) or {response_text} (as is; one of the two is "
        "required), {criterion}, {criteria}, {criteria_python}; a str.format template's {{ and }} become single "
        "braces (default: our wording; docs/evaluation.md shows how to use the benchmark's published prompt)",
    )
    p.add_argument(
        "--system-prompt",
        help="the critic's system message (default: our own; WritingBench's evaluate_system for its published setup)",
    )
    p.set_defaults(path_kinds={"responses": "exists"})


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.writingbench import run_writingbench

    return run_writingbench(
        args.benchmark, args.responses, args.out, judge_settings(),
        template=args.template, compare=args.compare, step=args.step, cache=args.cache, progress=not args.quiet,
        system_prompt=args.system_prompt,
    )  # fmt: skip


KIND = EvalKind(
    name="writingbench",
    help="criteria-based scores in WritingBench's formats (one critic call per query and criterion)",
    description=(
        "Score responses on a WritingBench-format benchmark: one critic call per (query, checklist item), "
        "the critic answering {'score': 1-10, 'reason': ...}. Writes scores.jsonl in WritingBench's own "
        "format (its score calculator reads it unchanged), report.json, report.md (overall and per-domain "
        "means with 95% bootstrap intervals) and domains.png. Failed or unreadable critic calls are counted "
        "and left out of every mean; a rerun retries them."
    ),
    epilog=(
        "example: writing-rl eval writingbench --benchmark benchmark.jsonl --responses responses.jsonl "
        "--out runs/wb --judge-url http://127.0.0.1:8000/v1 --judge-model critic"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.writingbench",
    plot="domains.png",
)
