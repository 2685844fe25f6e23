"""``score``, ``preflight``, ``check-config`` and ``curriculum show``: the commands around a training run."""

from __future__ import annotations

import sys

from hydra_configs import DEFAULT_OVERLAY


def add_score(subparsers) -> None:
    p = subparsers.add_parser(
        "score",
        help="judge saved responses offline through verl's reward loop worker, our manager and judge",
        description=(
            "Score responses to the rows of a verl RL parquet with the reward of a Hydra config "
            "(default: hydra_configs/writing_rl.yaml), through verl's RewardLoopWorker, exactly as in "
            "training. Writes scores.jsonl, transcripts.jsonl and summary.json to --out.\n"
            "Each finished chunk of --batch-size samples is kept in OUT/.score_progress.jsonl: after a judge "
            "failure, Ctrl-C or a kill, the same command judges only the samples not yet scored. Progress "
            "from another data file, responses file, tokenizer or config is refused (--restart discards it); "
            "the judge's address, concurrency, timeouts and retries may change between attempts."
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
    p.add_argument("--judge-url", help="shortcut for reward.reward_kwargs.judge.base_url=... (default: the config's)")
    p.add_argument("--judge-model", help="shortcut for reward.reward_kwargs.judge.model=... (default: the config's)")
    p.add_argument(
        "--config-name", default=DEFAULT_OVERLAY, help=f"overlay in hydra_configs/ (default: {DEFAULT_OVERLAY})"
    )
    p.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    p.add_argument(
        "--batch-size", type=int, default=256, help="samples handed to the worker at a time, and kept as they finish"
    )
    p.add_argument(
        "--restart",
        action="store_true",
        help="discard the samples an earlier, stopped run kept in --out and score all again (default: resume)",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. reward.reward_kwargs.judge.max_concurrency=32")
    p.set_defaults(handler=_run_score)


def _run_score(args) -> int:
    from writing_rl.tools.score import run_score

    overrides = list(args.overrides)
    if args.judge_url:
        overrides.append(f"reward.reward_kwargs.judge.base_url={args.judge_url}")
    if args.judge_model:
        overrides.append(f"reward.reward_kwargs.judge.model={args.judge_model}")

    shown = [0, 0]  # done, total of the progress line on screen

    def progress(done: int, total: int) -> None:
        shown[:] = done, total
        print(f"\rscored {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    try:
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
            restart=args.restart,
        )
    finally:
        if shown[0] < shown[1]:  # an error line must not start on the progress line
            print(file=sys.stderr)
    print_score_report(result["records"], result["summary"])
    print(f"wrote {args.out}/scores.jsonl, transcripts.jsonl, summary.json")
    return 0


def print_score_report(records: list[dict], summary: dict, max_rows: int = 20) -> None:
    from writing_rl.reward_loop.health.metrics import RESERVED_AREAS
    from writing_rl.reward_loop.results import FAILURE_KEYS

    shown = ("reward", "win", "tie", "loss", "verdict", "is_reference", "rank_score")
    own = sorted(k for k in records[0] if "/" in k and not k.startswith(RESERVED_AREAS))  # a method's <area>/<name>
    columns = [c for c in (*shown, *own, *FAILURE_KEYS) if c in records[0]]
    if len(records) <= max_rows:
        widths = [max(len(c), 8) + 2 for c in columns]
        print(f"{'sample':<14}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths)))
        for r in records:
            print(f"{r['key']:<14}" + "".join(f"{r[c]:>{w}.3g}" for c, w in zip(columns, widths)))
    width = max(map(len, summary))
    for key, value in summary.items():
        print(f"{key:<{width}}  {value:.4g}" if isinstance(value, float) else f"{key:<{width}}  {value}")


def add_check_config(subparsers) -> None:
    p = subparsers.add_parser(
        "check-config",
        help="compose an overlay, run verl's validate_config and check our reward settings",
        description=(
            "Compose hydra_configs/<name>.yaml with overrides, as verl.trainer.main_ppo would, then run "
            "verl's validate_config, load the reward manager and reward fn, and validate "
            "reward.reward_kwargs. Needs no GPU. `writing-rl preflight` does this and checks the data and judge too."
        ),
        epilog="example: writing-rl check-config --config-name brpo reward.reward_kwargs.judge.base_url=http://judge:8000/v1",
    )
    p.add_argument("--config-name", default=DEFAULT_OVERLAY, help="overlay in hydra_configs/")
    p.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides")
    p.set_defaults(handler=_run_check_config)


def _run_check_config(args) -> int:
    from writing_rl.tools.preflight.config_checks import run_check

    for line in run_check(args.config_name, args.overrides, args.config_dir):
        print(line if line.startswith("WARNING") else f"ok  {line}")
    return 0


def add_preflight(subparsers) -> None:
    from writing_rl.tools.preflight.runner import add_arguments

    p = subparsers.add_parser(
        "preflight",
        help="check a training run before it starts: config, paths, data, prompt lengths, the judge",
        description=(
            "Compose hydra_configs/<name>.yaml with overrides as main_ppo would, then report every problem "
            "the run would meet, one line each: verl's validate_config and our checks, missing paths, parquet "
            "rows the reward fn cannot score, prompt tokens vs data.max_prompt_length, the judge prompt at "
            "max_response_length vs the judge's context, and the judge endpoint (GET /v1/models). Exit 1 on "
            "any problem. DRY_RUN=1 and every scripts/train_*.sh run it."
        ),
        epilog=(
            "example: writing-rl preflight --config-name writing_rl actor_rollout_ref.model.path=/models/Qwen3-8B "
            "data.train_files=data/train.parquet data.val_files=data/test.parquet "
            "reward.reward_kwargs.judge.base_url=http://judge:8000/v1 reward.reward_kwargs.judge.model=judge"
        ),
    )
    add_arguments(p)
    p.add_argument(
        "--probe", action="store_true",
        help="also probe the judge through the config's reward fn: a few master keys, padding, a note to the "
        "judge and position bias on 4 shipped rows (about 40 judge calls; writing-rl probe-judge runs them all)",
    )  # fmt: skip
    p.set_defaults(handler=_run_preflight)


def _run_preflight(args) -> int:
    from writing_rl.tools.preflight.runner import run_from_args

    if args.probe:
        from writing_rl.tools.probe.preflight_probe import probe_check

        return run_from_args(args, [probe_check])
    return run_from_args(args)
