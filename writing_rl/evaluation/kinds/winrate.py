"""``writing-rl eval winrate``: the policy's pairwise win rate against a baseline (``..winrate``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument(
        "--prompts",
        required=True,
        help="Writing-RL parquet (build_parquet.py writing-rl; indexed by ground_truth.id) or JSONL of "
        "{index, prompt, [criteria], [reference]} (reference: one text or a list, easiest first)",
    )
    p.add_argument(
        "--responses",
        required=True,
        help="the policy's responses: JSONL of {index or id, response}, a verl dump (directory or <step>.jsonl) "
        "or verl's generation parquet",
    )
    baseline = p.add_mutually_exclusive_group(required=True)
    baseline.add_argument(
        "--baseline",
        help="the other system's responses, in the same formats as --responses (default: none; give this or "
        "--against-reference)",
    )
    baseline.add_argument(
        "--against-reference",
        action="store_true",
        help="judge against each prompt's best reference (the last of target, as Writing-RL trains)",
    )
    add_out(p)
    p.add_argument(
        "--domain-key",
        default="data_source",
        help="field of the domain for the per-domain rates; dots reach into structs (default: data_source)",
    )
    p.add_argument("--step", type=int, help="with a verl dump directory for --responses: the step (default: latest)")
    p.add_argument("--baseline-step", type=int, help="the same for --baseline (default: its latest step)")
    p.add_argument(
        "--template",
        help="pairwise judge prompt file with {prompt}, {response_a}, {response_b}, {criteria} (default: the "
        "config's reward_kwargs.template, else the built-in prompt of the reward)",
    )
    p.set_defaults(path_kinds={"prompts": "exists", "responses": "exists", "baseline": "exists"})


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.winrate import run_winrate

    return run_winrate(
        args.prompts, args.responses, args.out, judge_settings(),
        baseline=args.baseline, against_reference=args.against_reference, domain_key=args.domain_key,
        step=args.step, baseline_step=args.baseline_step, template=args.template, cache=args.cache,
        progress=not args.quiet,
    )  # fmt: skip


KIND = EvalKind(
    name="winrate",
    help="pairwise win rate against a baseline's responses or the references, judged in both orders",
    description=(
        "Judge each policy response against a baseline in both orders (policy as A, then as B) with the "
        "Writing-RL reward's pairwise prompt and verdict reader. Per prompt: a win when the policy wins both "
        "orders, a loss when it loses both, else a tie (rates: win 1, tie 0.5, loss 0). Reports the win rate "
        "with a 95% bootstrap CI, wins/ties/losses, the share of prompts whose orders disagree, a "
        "length-controlled win rate (logistic on the length difference in characters, AlpacaEval-LC style) "
        "and per-domain rates. Writes judgments.jsonl, report.json, report.md and winrate.png. A prompt with "
        "a failed or unreadable order is counted and left out of every rate; a rerun retries only those calls."
    ),
    epilog=(
        "example: writing-rl eval winrate --prompts data/writing_rl/test.parquet --responses policy.jsonl "
        "--against-reference --out runs/winrate --judge-url http://127.0.0.1:8000/v1 --judge-model judge"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.winrate",
    plot="winrate.png",
)
