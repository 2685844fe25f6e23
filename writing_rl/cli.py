"""The ``writing-rl`` command line. Each subcommand is a thin layer over a module that does the work."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path


def _add_score(subparsers) -> None:
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
    p.add_argument("--config-name", default="writing_rl", help="overlay in hydra_configs/ (default: writing_rl)")
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
    from .score import run_score

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
    shown = ("reward", "win", "tie", "loss", "verdict", "is_reference", "rank_score", "reference_level")
    columns = [c for c in (*shown, "parse_error", "format_error", "judge_error") if c in records[0]]
    if len(records) <= max_rows:
        widths = [max(len(c), 8) + 2 for c in columns]
        print(f"{'sample':<14}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths)))
        for r in records:
            print(f"{r['key']:<14}" + "".join(f"{r[c]:>{w}.3g}" for c, w in zip(columns, widths)))
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
            "reward.reward_kwargs. Needs no GPU. `writing-rl preflight` does this and checks the data and judge too."
        ),
        epilog="example: writing-rl check-config --config-name brpo reward.reward_kwargs.judge.base_url=http://judge:8000/v1",
    )
    p.add_argument("--config-name", default="writing_rl", help="overlay in hydra_configs/")
    p.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides")
    p.set_defaults(handler=_run_check_config)


def _run_check_config(args) -> int:
    from .check import run_check

    for line in run_check(args.config_name, args.overrides, args.config_dir):
        print(line if line.startswith("WARNING") else f"ok  {line}")
    return 0


def _add_serve_judge(subparsers) -> None:
    p = subparsers.add_parser(
        "serve-judge",
        help="host a GenRM on Ray replicas behind an OpenAI-compatible HTTP server",
        description=(
            "Start --replicas GenRM replicas (Ray actors, spread over the cluster) and serve them at "
            "http://HOST:PORT/v1 (/v1/chat/completions, /v1/models, /health). Uses the Ray cluster at "
            "--ray-address / $RAY_ADDRESS, else starts a local one. Stop with Ctrl-C or SIGTERM: the "
            "replicas are killed and their GPUs freed."
        ),
        epilog=(
            "examples:\n"
            "  writing-rl serve-judge --engine vllm --model /models/genrm --replicas 4 --tensor-parallel-size 2 "
            "--host 0.0.0.0 --port 8000\n"
            "  writing-rl serve-judge --engine hf --model /models/tiny-judge --port 8000   # CPU\n"
            "then: writing-rl score ... --judge-url http://HOST:8000/v1 --judge-model /models/genrm"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="GenRM: local model directory (or hub id the nodes can download)")
    p.add_argument(
        "--engine", required=True, choices=["vllm", "hf"], help="vllm: GPUs only; hf: transformers, CPU or GPU"
    )
    p.add_argument("--replicas", type=int, default=1, help="number of replicas (default 1)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface; default 127.0.0.1)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--served-model-name", help="name clients send as 'model' (default: --model)")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm: GPUs per replica (default 1)")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="vllm: GPU memory fraction per replica")
    p.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="hf: cpu, cuda (one GPU per replica) or auto (cuda when the cluster has one per replica)",
    )
    p.add_argument("--num-cpus", type=float, default=1.0, help="CPUs reserved per replica (hf on CPU: its threads)")
    p.add_argument("--dtype", default="auto", help="auto, bfloat16, float16 or float32")
    p.add_argument("--max-model-len", type=int, help="longest prompt + completion in tokens (default: the model's)")
    p.add_argument("--default-max-tokens", type=int, default=4096, help="completion budget when a request sets none")
    p.add_argument("--max-batch-size", type=int, default=16, help="hf: most requests per generate call")
    p.add_argument(
        "--max-batch-tokens",
        type=int,
        help="hf: most padded tokens (prompt + new) per generate call (default: no limit)",
    )
    p.add_argument(
        "--chat-template-kwargs",
        type=json.loads,
        default={},
        help="JSON passed to the chat template, e.g. '{\"enable_thinking\": false}'",
    )
    p.add_argument(
        "--trust-remote-code", action="store_true", help="run the model repo's own Python code (transformers)"
    )
    p.add_argument("--seed", type=int, default=0, help="base seed of the replicas' samplers")
    p.add_argument("--max-pending", type=int, default=256, help="requests admitted at once; beyond: 429 + Retry-After")
    p.add_argument("--retry-after-s", type=float, default=1.0, help="Retry-After sent with 429 and 503")
    p.add_argument("--request-timeout-s", type=float, default=600.0, help="per request, retries included")
    p.add_argument(
        "--api-key-env",
        help="require 'Authorization: Bearer $THIS_VAR' on /v1/* (the key never leaves the env; default: no key)",
    )
    p.add_argument("--ray-address", help="Ray cluster to use (default: $RAY_ADDRESS, else a new local Ray)")
    p.set_defaults(handler=_run_serve_judge)


def _run_serve_judge(args) -> int:
    from .judge.pool import PoolConfig, PoolStartError
    from .serve import run_serve_judge

    config = PoolConfig(
        model=args.model,
        engine=args.engine,
        replicas=args.replicas,
        served_model_name=args.served_model_name,
        device=args.device,
        tensor_parallel_size=args.tensor_parallel_size,
        num_cpus=args.num_cpus,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        default_max_tokens=args.default_max_tokens,
        max_batch_size=args.max_batch_size,
        max_batch_tokens=args.max_batch_tokens,
        gpu_memory_utilization=args.gpu_memory_utilization,
        chat_template_kwargs=args.chat_template_kwargs,
        trust_remote_code=args.trust_remote_code,
        seed=args.seed,
        request_timeout_s=args.request_timeout_s,
    ).validate()
    try:
        run_serve_judge(
            config, args.host, args.port, args.max_pending, args.retry_after_s, args.api_key_env, args.ray_address
        )
    except PoolStartError as exc:
        print(f"writing-rl serve-judge: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the port is taken, or the host is not an address of this machine
        print(f"writing-rl serve-judge: error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


def _offline_judge_args(p) -> None:
    """Judge settings of the offline tools: the training config's, with the same shortcuts as `score`."""
    g = p.add_argument_group("judge (default: reward.reward_kwargs.judge of --config-name)")
    g.add_argument("--judge-url", help="shortcut for reward.reward_kwargs.judge.base_url=... (default: the config's)")
    g.add_argument("--judge-model", help="shortcut for reward.reward_kwargs.judge.model=... (default: the config's)")
    g.add_argument(
        "--api-key-env",
        help="env var holding the API key (reward.reward_kwargs.judge.api_key_env; default: the config's)",
    )
    g.add_argument(
        "--max-concurrency",
        type=int,
        help="judge requests in flight (reward.reward_kwargs.judge.max_concurrency; default: the config's)",
    )
    g.add_argument(
        "--timeout-s",
        type=float,
        help="seconds per attempt (reward.reward_kwargs.judge.timeout_s; default: the config's)",
    )
    g.add_argument(
        "--max-retries",
        type=int,
        help="retries per call (reward.reward_kwargs.judge.max_retries; default: the config's)",
    )
    g.add_argument("--config-name", default="writing_rl", help="overlay in hydra_configs/ (default: writing_rl)")
    g.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    g.add_argument(
        "--cache", help="judge cache file (default: OUT/judge_cache.sqlite); a rerun repeats no answered call"
    )
    g.add_argument(
        "--allow-judge-errors", action="store_true",
        help="write results even if some judge calls failed after retries (they are counted, never scored)",
    )  # fmt: skip
    g.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. reward.reward_kwargs.judge.temperature=0")


def _offline_judge(args):
    from .offline import judge_overrides, load_judge_settings

    shortcuts = judge_overrides(
        args.judge_url, args.judge_model, args.api_key_env, args.max_concurrency, args.timeout_s, args.max_retries
    )
    return load_judge_settings(args.config_name, [*args.overrides, *shortcuts], args.config_dir)


def _add_select(subparsers) -> None:
    p = subparsers.add_parser(
        "select",
        help="margin-aware selection: keep the prompts where the policy trails the best reference most",
        description=(
            "Judge each policy response against the row's best reference (last of target) in both orders. "
            "Margin of an id = the reference's win rate (loss 1, tie 0.5, win 0 for the policy), or with "
            "--margin score-gap its score minus the response's, averaged over the id's responses. Keep the top-K or top-P% ids by margin, optionally with per-domain quotas. "
            "Writes OUT/selected.parquet (same rows and schema), margins.csv, margins.png, summary.json."
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
        "--domain-key", default="data_source", help="column of the domain; dots reach into structs (extra_info.domain)"
    )
    p.add_argument(
        "--margin", choices=("win-rate", "score-gap"), default="win-rate",
        help="win-rate: the reference's win rate from verdicts, in [0, 1]; score-gap: the judge rates both 0-10 "
        "(last line 'A: 7, B: 4') and the margin is the reference's score minus the response's, in [-10, 10]",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the tie-breaking among equal margins")
    p.add_argument("--bins", type=int, default=20, help="histogram bins over the margin's range")
    _offline_judge_args(p)
    p.set_defaults(handler=_run_select)


def _run_select(args) -> int:
    from .offline import JudgeFailures
    from .selection import parse_quotas, run_select

    quotas = parse_quotas(args.quota)
    settings = _offline_judge(args)
    try:
        report = run_select(
            args.data, args.responses, args.out, settings,
            top_k=args.top_k, top_percent=args.top_percent, quotas=quotas, domain_key=args.domain_key,
            seed=args.seed, cache=args.cache, allow_judge_errors=args.allow_judge_errors, bins=args.bins,
            progress=not args.quiet, margin=args.margin,
        )  # fmt: skip
    except JudgeFailures as exc:
        print(f"writing-rl select: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    return 0


def _add_order_references(subparsers) -> None:
    p = subparsers.add_parser(
        "order-references",
        help="order candidate references by judged quality -> Writing-RL rows with target easiest first",
        description=(
            "Each input row: a prompt, optional criteria and a list of candidate references (e.g. answers of "
            "several LLMs). Every pair is judged in both orders and aggregated by Bradley-Terry (ties half a win, "
            "--prior virtual ties per pair) or Copeland. Writes OUTPUT/train.parquet (+ test.parquet) as "
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
    p.add_argument("--candidates-key", default="candidates", help="list column of candidate references")
    p.add_argument(
        "--names-key", help="list column naming each candidate (e.g. the model), for the report (default: none)"
    )
    p.add_argument("--prompt-key", default="prompt", help="column of the prompt")
    p.add_argument("--criteria-key", default="criteria", help="column of the criteria (string or list)")
    p.add_argument("--data-source", default="writing", help="data_source when the row has none")
    p.add_argument("--system-prompt", help="system message put before each prompt (default: none)")
    p.add_argument(
        "--method", choices=["bt", "copeland"], default="bt", help="aggregation (default: bt = Bradley-Terry)"
    )
    p.add_argument("--prior", type=float, default=1.0, help="Bradley-Terry: virtual tied comparisons per pair (> 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split")
    p.add_argument("--test-size", type=float, default=0.0, help="test split: a fraction in [0, 1) or a number of rows")
    p.add_argument("--skip-bad", action="store_true", help="skip bad rows (listed in summary.json) instead of stopping")
    _offline_judge_args(p)
    p.set_defaults(handler=_run_order_references)


def _run_order_references(args) -> int:
    from .offline import JudgeFailures
    from .ordering import run_order_references

    settings = _offline_judge(args)
    try:
        report = run_order_references(
            args.input, args.output, settings,
            candidates_key=args.candidates_key, names_key=args.names_key, prompt_key=args.prompt_key,
            criteria_key=args.criteria_key, data_source=args.data_source, system_prompt=args.system_prompt,
            method=args.method, prior=args.prior, seed=args.seed, test_size=args.test_size, cache=args.cache,
            allow_judge_errors=args.allow_judge_errors, skip_bad=args.skip_bad, progress=not args.quiet,
        )  # fmt: skip
    except JudgeFailures as exc:
        print(f"writing-rl order-references: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    return 0


def _add_curriculum(subparsers) -> None:
    p = subparsers.add_parser(
        "curriculum",
        help="inspect Writing-RL's reference curriculum (levels per prompt)",
        description="Inspect the reference levels a Writing-RL run keeps in its curriculum state dir.",
        epilog="example: writing-rl curriculum show --state-dir checkpoints/writing-rl/writing_rl_pairwise/curriculum",
    )
    commands = p.add_subparsers(dest="curriculum_command", required=True)
    show = commands.add_parser(
        "show",
        help="level histogram, share at the hardest reference, most and least advanced ids",
        description=(
            "Print the level histogram of the latest snapshot, the share of ids at their hardest reference "
            "and the most and least advanced ids; --plot draws the levels at each checkpointed step."
        ),
        epilog="example: writing-rl curriculum show --state-dir runs/x/curriculum --plot levels.png",
    )
    show.add_argument("--state-dir", required=True, help="reward.reward_kwargs.curriculum.state_dir of the run")
    show.add_argument("--top", type=int, default=5, help="ids listed as most / least advanced")
    show.add_argument("--plot", help="write a PNG of the level histogram over checkpointed steps (default: no plot)")
    show.set_defaults(handler=_run_curriculum_show)


def _run_curriculum_show(args) -> int:
    from .curriculum import describe, plot_levels_over_steps

    print(describe(args.state_dir, top=args.top))
    if args.plot:
        plot_levels_over_steps(args.state_dir, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _add_preflight(subparsers) -> None:
    from .preflight import add_arguments, run_from_args

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
    p.set_defaults(handler=run_from_args)


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped line by line (their own line breaks kept; indented lines kept
    whole; a wrapped example indented under its first line); every option's help ends with its default."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(self._fill_line(line, width, indent) for line in text.splitlines())

    @staticmethod
    def _fill_line(line: str, width: int, indent: str) -> str:
        if not line or line[0].isspace():
            return indent + line
        hang = "  " if line.startswith(("example", "then")) else ""
        return textwrap.fill(  # commands and paths are not split at their hyphens
            line, width, initial_indent=indent, subsequent_indent=indent + hang, break_on_hyphens=False
        )

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, argparse.SUPPRESS) or action.default is False:
            return text
        if not action.option_strings or action.required:
            return text
        return f"{text} (default: {action.default})"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("writing-rl")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="writing-rl",
        description="Judge-based rewards (GenRM / LLM judges) for stock verl.",
        epilog="example: writing-rl preflight --help",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"writing-rl {_version()}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_score(subparsers)
    _add_preflight(subparsers)
    _add_check_config(subparsers)
    _add_serve_judge(subparsers)
    _add_select(subparsers)
    _add_order_references(subparsers)
    _add_curriculum(subparsers)
    for sub in _parsers(parser):
        sub.formatter_class = HelpFormatter
        if sub._subparsers is None:  # also after the command: writing-rl score ... --debug
            sub.add_argument(
                "--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of an error"
            )
    return parser


def _parsers(parser: argparse.ArgumentParser):
    """Every (sub)command parser under ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield sub
                yield from _parsers(sub)


# Options naming paths, checked before a command starts. exists: a file or a directory (a parquet may be
# a directory of files); file; dir; local: checked only when written as a path (else a hub id);
# out: a directory to write, which must not be a file.
_PATH_OPTIONS = {
    "data": "exists",
    "responses": "file",
    "input": "exists",
    "config_dir": "dir",
    "state_dir": "dir",
    "tokenizer": "local",
    "model": "local",
    "out": "out",
    "output": "out",
}


def path_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the first path option of ``args`` that names no usable path (None: all fine)."""
    for dest, kind in _PATH_OPTIONS.items():
        value = getattr(args, dest, None)
        if not isinstance(value, str) or (kind == "local" and not value.startswith(("/", ".", "~"))):
            continue
        option, path = "--" + dest.replace("_", "-"), Path(value).expanduser()
        if kind == "out":
            if path.exists() and not path.is_dir():
                return f"{option}: {value} is a file, expected a directory to write to"
        elif not path.exists():
            return f"{option}: no such file or directory: {value}"
        elif kind == "dir" and not path.is_dir():
            return f"{option}: not a directory: {value}"
        elif kind == "file" and path.is_dir():
            return f"{option}: {value} is a directory, expected a file"
    return None


def main(argv: list[str] | None = None) -> int:
    from .errors import describe

    args = build_parser().parse_args(argv)
    prefix = f"writing-rl {args.command}: error:"
    problem = path_problem(args)
    if problem:
        print(f"{prefix} {problem}", file=sys.stderr)
        return 2
    try:
        return args.handler(args)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - one line for the user; --debug shows the traceback
        if args.debug:
            raise
        code, line = describe(exc)
        print(f"{prefix} {' '.join(line.splitlines())}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
