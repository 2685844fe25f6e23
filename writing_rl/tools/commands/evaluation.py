"""``eval``: measure what training bought, one subcommand per kind of evaluation."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from writing_rl.tools.commands.judge_options import add_judge_options, judge_settings_from


def add_eval(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a policy (WritingBench scores, win rate) or a GenRM (pairwise or ranking accuracy, RewardBench)",
        description=(
            "Evaluate with the same judge layer, cache and progress output as the other tools. Each kind is "
            "resumable: rerun the same command with the same --out and no answered judge call is made again. "
            "Outputs: report.json, report.md and plots (PNG, with matplotlib) in --out."
        ),
        epilog="example: writing-rl eval writingbench --help",
    )
    kinds = p.add_subparsers(dest="eval_kind", required=True)
    add_writingbench(kinds)
    add_winrate(kinds)
    add_genrm_pairwise(kinds)
    add_genrm_ranking(kinds)
    add_rewardbench(kinds)


def add_writingbench(kinds) -> None:
    p = kinds.add_parser(
        "writingbench",
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
    )
    p.add_argument("--benchmark", required=True, help="JSONL: index, domain1, domain2, query, checklist")
    p.add_argument(
        "--responses",
        required=True,
        help="JSONL of {index, response}, a verl dump (trainer.validation_data_dir or rollout_data_dir, or one "
        "<step>.jsonl; the first sample per prompt) or verl's generation parquet (main_generation_server)",
    )
    p.add_argument("--out", required=True, help="output directory (also holds the judge cache)")
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
    add_judge_options(p)
    p.set_defaults(handler=run_writingbench_command, path_kinds={"responses": "exists"})


def run_writingbench_command(args) -> int:
    from writing_rl.tools.evaluation.writingbench import run_writingbench

    lines = run_writingbench(
        args.benchmark, args.responses, args.out, judge_settings_from(args),
        template=args.template, compare=args.compare, step=args.step, cache=args.cache, progress=not args.quiet,
        system_prompt=args.system_prompt,
    )  # fmt: skip
    return _printed(lines, args, "writingbench")


def add_winrate(kinds) -> None:
    p = kinds.add_parser(
        "winrate",
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
    )
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
    p.add_argument("--out", required=True, help="output directory (also holds the judge cache)")
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
    add_judge_options(p)
    p.set_defaults(
        handler=run_winrate_command, path_kinds={"prompts": "exists", "responses": "exists", "baseline": "exists"}
    )


def run_winrate_command(args) -> int:
    from writing_rl.tools.evaluation.winrate import run_winrate

    lines = run_winrate(
        args.prompts, args.responses, args.out, judge_settings_from(args),
        baseline=args.baseline, against_reference=args.against_reference, domain_key=args.domain_key,
        step=args.step, baseline_step=args.baseline_step, template=args.template, cache=args.cache,
        progress=not args.quiet,
    )  # fmt: skip
    return _printed(lines, args, "winrate")


def add_genrm_pairwise(kinds) -> None:
    p = kinds.add_parser(
        "genrm-pairwise",
        help="a pairwise GenRM's accuracy on labelled preference pairs, judged in both orders",
        description=(
            "Judge each labelled pair twice, the chosen response as A and then as B, with the pairwise prompt and "
            "verdict reader ([[A]]/[[B]]/[[C]]; a tie is wrong). Reports the accuracy in each order and over both "
            "(95% bootstrap CI, pairs resampled), both orders right, position consistency, the tie rate, the "
            "accuracy by length difference len(chosen) - len(rejected) in characters, and judge errors and "
            "unreadable replies (counted, never scored; a rerun retries only those calls). Writes report.json, "
            "report.md, judgments.jsonl and length_buckets.png."
        ),
        epilog=(
            "example: writing-rl eval genrm-pairwise --data data/genrm_rl/test.parquet --out runs/genrm_pairwise "
            "--judge-url http://127.0.0.1:8000/v1 --judge-model genrm"
        ),
    )
    p.add_argument(
        "--data",
        required=True,
        help="pref-rl parquet (build_parquet.py pref-rl, verdict format: a file or directory) or JSONL of "
        "{prompt, chosen, rejected, [index or id]}",
    )
    p.add_argument("--out", required=True, help="output directory (also holds the judge cache)")
    p.add_argument(
        "--template",
        help="pairwise judge prompt file with {prompt}, {response_a}, {response_b} for JSONL pairs (default: the "
        "built-in pairwise prompt, never the config's reward_kwargs.template; pref-rl rows are sent as built, "
        "so --template with a parquet is an error)",
    )
    p.add_argument(
        "--length-edges",
        type=_length_edges,
        default=(100, 500),
        metavar="N,N",
        help="character edges of the length-difference buckets, mirrored around 0; a bucket holds |d| in "
        "(low, high] (default: 100,500: shorter by >500, by 100-500, within ±100, longer by 100-500, by >500)",
    )
    add_judge_options(p)
    p.set_defaults(handler=run_genrm_pairwise_command)


def run_genrm_pairwise_command(args) -> int:
    from writing_rl.tools.evaluation.genrm_pairwise import run_genrm_pairwise

    settings = judge_settings_from(args)
    options = {"template": args.template, "length_edges": args.length_edges}
    return _printed(
        run_genrm_pairwise(args.data, args.out, settings, **options, cache=args.cache, progress=not args.quiet),
        args,
        "genrm-pairwise",
    )


def add_genrm_ranking(kinds) -> None:
    from writing_rl.protocols.gqm import PROMPT_TYPES, VARIANTS

    p = kinds.add_parser(
        "genrm-ranking",
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
    )
    p.add_argument(
        "--data",
        required=True,
        help="gqm-rl parquet (build_parquet.py gqm-rl: a file or directory; rows are sent as built) or JSONL of "
        "groups {prompt or src_text + src_lang/trg_lang, candidates, scores, [index or id]}",
    )
    p.add_argument("--out", required=True, help="output directory (also holds the judge cache)")
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
    add_judge_options(p)
    p.set_defaults(handler=run_genrm_ranking_command)


def run_genrm_ranking_command(args) -> int:
    from writing_rl.tools.evaluation.genrm_ranking import RankingOptions, run_genrm_ranking

    options = RankingOptions(
        prompt_type=args.prompt_type, variant=args.variant, require_headers=not args.optional_headers,
        margin_rewards=args.margin_rewards, template=args.template, system_prompt=args.system_prompt,
    )  # fmt: skip
    settings = judge_settings_from(args)
    return _printed(
        run_genrm_ranking(args.data, args.out, settings, options, cache=args.cache, progress=not args.quiet),
        args,
        "genrm-ranking",
    )


def add_rewardbench(kinds) -> None:
    from writing_rl.protocols.gqm import PROMPT_TYPES, VARIANTS

    p = kinds.add_parser(
        "rewardbench",
        help="a pairwise or ranking GenRM on RewardBench (v1) or RewardBench 2, scored as the benchmark scores",
        description=(
            "Judge the benchmark's own file (parquet or JSONL). Pairwise GenRMs compare the chosen answer with "
            "each rejected one in both orders; ranking GenRMs rank all of a prompt's answers in one call. Reports "
            "each subset's accuracy (95% bootstrap CI) and count, v1's section scores (the benchmark's example "
            "weights) and the overall score as the benchmark defines it; an unreadable reply counts as no "
            "preference, a failed call leaves its prompt unscored (counted; a rerun retries only those calls). "
            "Writes report.json, report.md, judgments.jsonl, items.jsonl and subsets.png."
        ),
        epilog=(
            "example: writing-rl eval rewardbench --data reward-bench-2/test.parquet --version 2 --out runs/rb2 "
            "--judge-url http://127.0.0.1:8000/v1 --judge-model genrm"
        ),
    )
    p.add_argument(
        "--data",
        required=True,
        help="the benchmark's file, parquet or JSONL: v1 rows {prompt, chosen, rejected, subset, [id]}, v2 rows "
        "{id, prompt, chosen[], rejected[], subset}",
    )
    p.add_argument("--version", type=int, choices=(1, 2), required=True, help="RewardBench 1 or 2")
    p.add_argument("--out", required=True, help="output directory (also holds the judge cache)")
    p.add_argument(
        "--genrm",
        choices=("pairwise", "ranking"),
        default="pairwise",
        help="pairwise: [[A]]/[[B]] verdicts, both orders; ranking: one GQM ranking call per prompt (default: pairwise)",
    )
    p.add_argument(
        "--exclude",
        type=lambda text: tuple(s.strip() for s in text.split(",") if s.strip()),
        metavar="SUBSET,...",
        default=(),
        help="subsets to leave out; v2's Ties, scored from scalar reward margins, is always left out",
    )
    p.add_argument(
        "--template",
        help="pairwise prompt file ({prompt}, {response_a}, {response_b}) or, with --genrm ranking, a GQM template "
        "(default: the built-in prompt)",
    )
    p.add_argument(
        "--system-prompt",
        help="system message before each request (default: the built-in pairwise one; none for ranking)",
    )
    g = p.add_argument_group("--genrm ranking")
    g.add_argument("--prompt-type", choices=PROMPT_TYPES, help="(default: ranking_score)")
    g.add_argument("--variant", choices=VARIANTS, help="answer format (default: default)")
    g.add_argument("--optional-headers", action="store_true", help="accept final blocks without their headers")
    add_judge_options(p)
    p.set_defaults(handler=run_rewardbench_command)


def run_rewardbench_command(args) -> int:
    from writing_rl.tools.evaluation.genrm_ranking import RankingOptions
    from writing_rl.tools.evaluation.inputs import InputError
    from writing_rl.tools.evaluation.rewardbench import run_rewardbench

    ranking_only = {"--prompt-type": args.prompt_type, "--variant": args.variant,
                    "--optional-headers": args.optional_headers}  # fmt: skip
    if args.genrm == "pairwise" and (given := [flag for flag, value in ranking_only.items() if value]):
        raise InputError(f"{', '.join(given)} only apply to --genrm ranking")
    options = RankingOptions(
        prompt_type=args.prompt_type or "ranking_score", variant=args.variant or "default",
        require_headers=not args.optional_headers, template=args.template, system_prompt=args.system_prompt,
    )  # fmt: skip
    lines = run_rewardbench(
        args.data, args.out, judge_settings_from(args), args.version, genrm=args.genrm, exclude=args.exclude,
        options=options, cache=args.cache, progress=not args.quiet,
    )  # fmt: skip
    return _printed(lines, args, "rewardbench")


def _printed(lines: list[str], args, kind: str) -> int:
    """Print a kind's lines; exit 1 when its report counts judge calls that failed after their retries
    (the reports are written either way), unless ``--allow-judge-errors``."""
    print("\n".join(lines))
    report = json.loads((Path(args.out) / "report.json").read_text(encoding="utf-8"))
    failed = (report.get("failures") or {}).get("judge_error") or 0
    if failed and not args.allow_judge_errors:
        first = (report.get("judge") or {}).get("first_failure")
        print(
            f"writing-rl eval {kind}: error: {failed} judge calls failed after retries"
            + (f" (the first: {first})" if first else "")
            + "; the report counts them and scores none; rerun the same command to retry only those calls (or "
            "pass --allow-judge-errors to accept the report)",
            file=sys.stderr,
        )
        return 1
    return 0


def _length_edges(text: str) -> tuple[int, ...]:
    try:
        edges = tuple(int(v) for v in text.split(","))
    except ValueError:
        edges = ()
    if not edges or edges[0] <= 0 or list(edges) != sorted(set(edges)):
        raise argparse.ArgumentTypeError(f"expected increasing positive whole numbers like 100,500, got {text!r}")
    return edges


def _margin_rewards(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 1.0,0.6,0.2, got {text!r}") from None
