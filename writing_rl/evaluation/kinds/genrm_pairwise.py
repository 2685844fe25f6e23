"""``writing-rl eval genrm-pairwise``: a pairwise GenRM's accuracy on labelled pairs (``..genrm_pairwise``)."""

from __future__ import annotations

import argparse

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument(
        "--data",
        required=True,
        help="pref-rl parquet (build_parquet.py pref-rl, verdict format: a file or directory) or JSONL of "
        "{prompt, chosen, rejected, [index or id]}",
    )
    add_out(p)
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


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.genrm_pairwise import run_genrm_pairwise

    settings = judge_settings()
    options = {"template": args.template, "length_edges": args.length_edges}
    return run_genrm_pairwise(args.data, args.out, settings, **options, cache=args.cache, progress=not args.quiet)


def _length_edges(text: str) -> tuple[int, ...]:
    try:
        edges = tuple(int(v) for v in text.split(","))
    except ValueError:
        edges = ()
    if not edges or edges[0] <= 0 or list(edges) != sorted(set(edges)):
        raise argparse.ArgumentTypeError(f"expected increasing positive whole numbers like 100,500, got {text!r}")
    return edges


KIND = EvalKind(
    name="genrm-pairwise",
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
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.genrm_pairwise",
    plot="length_buckets.png",
)
