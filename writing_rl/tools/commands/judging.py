"""``select`` and ``order-references``: the offline judge commands. Their defaults are those of the jobs
they build (``SelectJob``, ``OrderJob``)."""

from __future__ import annotations

from writing_rl.ordering.job import OrderJob
from writing_rl.selection.job import SelectJob
from writing_rl.tools.commands.judge_options import add_judge_options, judge_settings_from


def add_select(subparsers) -> None:
    p = subparsers.add_parser(
        "select",
        help="margin-aware selection: keep the prompts where the policy trails the best reference most",
        description=(
            "Judge each policy response against the row's best reference (last of target) in both orders. "
            "Margin of an id = the reference's win rate (loss 1, tie 0.5, win 0 for the policy), or with "
            "--margin score-gap its score minus the response's, averaged over the id's responses. Keep the top-K or top-P% ids by margin, optionally with per-domain quotas. "
            "Writes OUT/selected.parquet (same rows and schema), margins.csv, margins.png (needs matplotlib: "
            "pip install 'writing-rl[plot]'), summary.json."
        ),
        epilog=(
            "example: writing-rl select --data data/train.parquet --responses policy.jsonl --out runs/select "
            "--top-percent 30 --quota proportional --judge-url http://127.0.0.1:8000/v1 --judge-model judge"
        ),
    )
    p.add_argument("--data", required=True, help="Writing-RL parquet (build_parquet.py writing-rl)")
    p.add_argument(
        "--responses", required=True, help="JSONL: {'id': <ground_truth.id>, 'response': ...}, one or more per id"
    )
    p.add_argument("--out", required=True, help="output directory")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--top-k", type=int, help="keep this many ids (default: all judged ids)")
    budget.add_argument("--top-percent", type=float, help="keep this percentage of the judged ids (default: all)")
    p.add_argument(
        "--quota", action="append", metavar="DOMAIN=N|proportional",
        help="per-domain counts (repeat; replaces --top-k/--top-percent; unnamed domains get none), or "
        "'proportional' to split the top-k/top-percent budget by each domain's share (default: no quotas)",
    )  # fmt: skip
    p.add_argument(
        "--domain-key",
        default=SelectJob.domain_key,
        help="column of the domain; dots reach into structs (extra_info.domain)",
    )
    p.add_argument(
        "--margin", choices=("win-rate", "score-gap"), default=SelectJob.margin,
        help="win-rate: the reference's win rate from verdicts, in [0, 1]; score-gap: the judge rates both 0-10 "
        "(last line 'A: 7, B: 4') and the margin is the reference's score minus the response's, in [-10, 10]",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=SelectJob.seed, help="seed of the tie-breaking among equal margins")
    p.add_argument("--bins", type=int, default=SelectJob.bins, help="histogram bins over the margin's range")
    add_judge_options(p)
    p.set_defaults(handler=_run_select)


def _run_select(args) -> int:
    from writing_rl.selection.margins import parse_quotas
    from writing_rl.selection.select import run_select

    job = SelectJob(
        data=args.data, responses=args.responses, out=args.out, top_k=args.top_k, top_percent=args.top_percent,
        quotas=parse_quotas(args.quota), domain_key=args.domain_key, margin=args.margin, seed=args.seed,
        bins=args.bins, cache=args.cache, allow_judge_errors=args.allow_judge_errors, progress=not args.quiet,
    )  # fmt: skip
    print("\n".join(run_select(job, judge_settings_from(args)).lines()))
    return 0


def add_order_references(subparsers) -> None:
    p = subparsers.add_parser(
        "order-references",
        help="order candidate references by judged quality -> Writing-RL rows with target easiest first",
        description=(
            "Each input row: a prompt, optional criteria and a list of candidate references (e.g. answers of "
            "several LLMs). Every pair is judged in both orders and aggregated by Bradley-Terry (ties half a win, "
            "--prior virtual games against a fixed opponent) or Copeland. Writes OUTPUT/train.parquet (+ test.parquet) as "
            "build_parquet.py writing-rl does, with target = the candidates easiest first, plus "
            "order_report.csv (inconsistent pairs, intransitive triples per prompt) and summary.json."
        ),
        epilog=(
            "example: writing-rl order-references --input answers.jsonl --candidates-key answers --names-key models "
            "--output data/writing_rl --judge-url http://127.0.0.1:8000/v1 --judge-model judge"
        ),
    )
    p.add_argument("--input", required=True, help="parquet, .jsonl, .json, .csv/.tsv or a datasets directory")
    p.add_argument("--output", required=True, help="output directory for train.parquet / test.parquet and the report")
    p.add_argument("--candidates-key", default=OrderJob.candidates_key, help="list column of candidate references")
    p.add_argument(
        "--names-key", help="list column naming each candidate (e.g. the model), for the report (default: none)"
    )
    p.add_argument("--prompt-key", default=OrderJob.prompt_key, help="column of the prompt")
    p.add_argument("--criteria-key", default=OrderJob.criteria_key, help="column of the criteria (string or list)")
    p.add_argument("--data-source", default=OrderJob.data_source, help="data_source when the row has none")
    p.add_argument("--system-prompt", help="system message put before each prompt (default: none)")
    p.add_argument(
        "--method",
        choices=["bt", "copeland"],
        default=OrderJob.method,
        help="aggregation (default: bt = Bradley-Terry)",
    )
    p.add_argument(
        "--prior",
        type=float,
        default=OrderJob.prior,
        help="Bradley-Terry: virtual games, half won, against a fixed opponent of strength 1 (> 0)",
    )
    p.add_argument("--seed", type=int, default=OrderJob.seed, help="seed of the train/test split")
    p.add_argument(
        "--test-size",
        type=float,
        default=OrderJob.test_size,
        help="test split: a fraction in [0, 1) or a number of rows",
    )
    p.add_argument("--skip-bad", action="store_true", help="skip bad rows (listed in summary.json) instead of stopping")
    add_judge_options(p)
    p.set_defaults(handler=_run_order_references)


def _run_order_references(args) -> int:
    from writing_rl.ordering.order_references import run_order_references

    job = OrderJob(
        input_path=args.input, out=args.output, candidates_key=args.candidates_key, names_key=args.names_key,
        prompt_key=args.prompt_key, criteria_key=args.criteria_key, data_source=args.data_source,
        system_prompt=args.system_prompt, method=args.method, prior=args.prior, seed=args.seed,
        test_size=args.test_size, skip_bad=args.skip_bad, cache=args.cache,
        allow_judge_errors=args.allow_judge_errors, progress=not args.quiet,
    )  # fmt: skip
    print("\n".join(run_order_references(job, judge_settings_from(args)).lines()))
    return 0
