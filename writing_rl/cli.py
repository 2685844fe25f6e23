"""The ``writing-rl`` command line. Each subcommand is a thin layer over a module that does the work."""

from __future__ import annotations

import argparse
import sys


def _add_score(subparsers) -> None:
    p = subparsers.add_parser(
        "score",
        help="judge saved responses offline through verl's reward loop worker, our manager and judge",
        description=(
            "Score responses to the rows of a verl RL parquet with the reward of a Hydra config "
            "(default: hydra_configs/writing_rl.yaml), through verl's RewardLoopWorker, exactly as in "
            "training. Writes scores.jsonl, transcripts.jsonl and summary.json to --out."
        ),
        epilog=(
            "example: writing-rl score --data data/train.parquet --responses rollouts.jsonl --out runs/score "
            "--tokenizer Qwen/Qwen3-8B --judge-url http://127.0.0.1:8000/v1 --judge-model judge "
            "reward.custom_reward_function.reward_kwargs.strategy=both"
        ),
    )
    p.add_argument("--data", required=True, help="verl RL parquet (prompt, data_source, reward_model, extra_info)")
    p.add_argument(
        "--responses",
        required=True,
        help="JSONL, one response per line: {'id': <ground_truth.id>, 'response': ...} or {'index': <extra_info.index>, ...}",
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--tokenizer", help="policy tokenizer dir or hub id (default: actor_rollout_ref.model.path)")
    p.add_argument("--judge-url", help="shortcut for reward.reward_kwargs.judge.base_url=...")
    p.add_argument("--judge-model", help="shortcut for reward.reward_kwargs.judge.model=...")
    p.add_argument("--config-name", default="writing_rl", help="overlay in hydra_configs/ (default: writing_rl)")
    p.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    p.add_argument("--batch-size", type=int, default=256, help="samples handed to the worker at a time")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. reward.reward_kwargs.judge.max_concurrency=32")
    p.set_defaults(handler=_run_score)


def _run_score(args) -> int:
    from .score import run_score

    overrides = list(args.overrides)
    if args.judge_url:
        overrides.append(f"reward.reward_kwargs.judge.base_url={args.judge_url}")
    if args.judge_model:
        overrides.append(f"reward.reward_kwargs.judge.model={args.judge_model}")

    def progress(done: int, total: int) -> None:
        print(f"\rscored {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    result = run_score(
        data=args.data,
        responses=args.responses,
        out=args.out,
        tokenizer=args.tokenizer,
        config_name=args.config_name,
        overrides=overrides,
        config_dir=args.config_dir,
        batch_size=args.batch_size,
        progress=progress,
    )
    print_score_report(result["records"], result["summary"])
    print(f"wrote {args.out}/scores.jsonl, transcripts.jsonl, summary.json")
    return 0


def print_score_report(records: list[dict], summary: dict, max_rows: int = 20) -> None:
    columns = [c for c in ("reward", "win", "tie", "loss", "parse_error", "format_error", "judge_error") if c in records[0]]
    if len(records) <= max_rows:
        print(f"{'sample':<14}" + "".join(f"{c:>13}" for c in columns))
        for r in records:
            print(f"{r['key']:<14}" + "".join(f"{r[c]:>13.3g}" for c in columns))
    width = max(map(len, summary))
    for key, value in summary.items():
        print(f"{key:<{width}}  {value:.4g}" if isinstance(value, float) else f"{key:<{width}}  {value}")


def _add_check_config(subparsers) -> None:
    p = subparsers.add_parser(
        "check-config",
        help="compose an overlay, run verl's validate_config and check our reward settings",
        description=(
            "Compose hydra_configs/<name>.yaml with overrides, as verl.trainer.main_ppo would, then run "
            "verl's validate_config, load the reward manager and reward fn, and validate "
            "reward.reward_kwargs. Needs no GPU."
        ),
    )
    p.add_argument("--config-name", default="writing_rl")
    p.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides")
    p.set_defaults(handler=_run_check_config)


def _run_check_config(args) -> int:
    from .check import run_check

    for line in run_check(args.config_name, args.overrides, args.config_dir):
        print(f"ok  {line}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="writing-rl", description="Judge-based rewards (GenRM / LLM judges) for stock verl."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_score(subparsers)
    _add_check_config(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"writing-rl {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
