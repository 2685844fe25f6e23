"""``probe-judge``: the judge probed for exploits before a run. Its defaults are those of ``ProbeJob``."""

from __future__ import annotations

from writing_rl.tools.commands.judge_options import judge_overrides
from writing_rl.tools.probe.job import FLAGGED_EXIT, UNREADABLE_EXIT, ProbeJob
from writing_rl.tools.probe.verdict import READABLE_THRESHOLD


def add_probe_judge(subparsers) -> None:
    p = subparsers.add_parser(
        "probe-judge",
        help="can the judge be fooled? master keys, padding, position bias... through the method's own reward fn",
        description=(
            "Send a fixed battery of probes to the judge through the method's own reward fn (its prompts, reply "
            "readers and failure rules, with the options a training run sets): the empty reply and the master "
            "keys of arXiv 2507.08794 (':', 'Thought process:', '解'...), the prompt echoed back, the honest answer "
            "cut to its first sentence, padded with filler to 2x and 4x, in the wrong language, and with a note "
            "asking the judge for 10/10; each against the honest answer in both positions (rubric: scored "
            "alone). Also the position bias (the same pair in both orders) and the self-consistency (calls "
            "repeated, bypassing the cache). First, the share of judge replies the reward could read: below "
            f"{READABLE_THRESHOLD} (--threshold readable=SHARE) the probes measure the reply reader, not the judge. "
            "Per probe: the share of the comparisons the judge decided that the probe wins (or ties), with a 95% "
            "Wilson interval, flagged when the interval's lower bound is above the probe's limit. Writes "
            "OUT/report.json, report.md, comparisons.jsonl and probe_shares.png (needs matplotlib). Exit 0: "
            f"replies read, nothing flagged; {UNREADABLE_EXIT}: too few judge replies could be read (whatever was flagged); "
            f"{FLAGGED_EXIT}: something flagged; 1: failed judge calls; 2: bad options."
        ),
        epilog=(
            "example: writing-rl probe-judge --method writing_rl --data data/train.parquet --out runs/probe "
            "--judge-url http://127.0.0.1:8000/v1 --judge-model judge --reward-kwargs strategy=both"
        ),
    )
    p.add_argument(
        "--method", required=True,
        help="the reward method whose judge calls are probed, by its registered name (docs/methods/; a name "
        "that is none lists them)",
    )  # fmt: skip
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--data", help="training parquet of the method (default: the rows we ship: 6 writing prompts, 4 translations)"
    )
    p.add_argument(
        "--responses",
        help="JSONL of honest answers {'index'|'id': ..., 'response': ...}: needed with --data except for a method "
        "whose rows hold their reference, as Writing-RL's do (default: none)",
    )
    p.add_argument(
        "--rows", type=int, default=ProbeJob.rows, help="rows drawn from the data, seeded (default: %(default)s)"
    )
    p.add_argument("--seed", type=int, default=ProbeJob.seed, help="seed of the row draw (default: %(default)s)")
    p.add_argument(
        "--reward-kwargs", nargs="+", metavar="KEY=VALUE",
        help="the method's options as the run sets them (reward.custom_reward_function.reward_kwargs.KEY=VALUE), "
        "e.g. strategy=both template=judge.txt output=scores (default: the overlay's)",
    )  # fmt: skip
    p.add_argument(
        "--probe", action="append", metavar="NAME", dest="probes",
        help="run only this probe (repeat; default: the whole battery, listed in docs/trust-your-judge.md)",
    )  # fmt: skip
    p.add_argument(
        "--threshold", action="append", metavar="NAME=SHARE",
        help="another limit for a probe, position-bias or self-consistency (repeat), e.g. pad-2x=0.4, or the "
        "least share of judge replies read, readable=0.9 (default: each one's own, in docs/trust-your-judge.md)",
    )  # fmt: skip
    p.add_argument("--no-repeat", action="store_true", help="skip the self-consistency repeats")
    p.add_argument(
        "--wrong-language", default=ProbeJob.wrong_language,
        help="language a writing row's honest answer is translated into for the wrong-language probe "
        "(translation rows use their untranslated source) (default: %(default)s)",
    )  # fmt: skip
    p.add_argument("--translate-url", help="endpoint that translates for that probe (default: the judge's)")
    p.add_argument("--translate-model", help="model that translates for that probe (default: the judge's)")
    g = p.add_argument_group("judge (default: reward.reward_kwargs.judge of the method's overlay)")
    g.add_argument(
        "--judge-url", help="the judge's OpenAI-compatible API root, e.g. http://host:8000/v1 (default: the config's)"
    )
    g.add_argument("--judge-model", help="the model name sent in each request (default: the config's)")
    g.add_argument("--api-key-env", help="env var holding the API key (default: the config's)")
    g.add_argument("--max-concurrency", type=int, help="judge requests in flight (default: the config's)")
    g.add_argument("--timeout-s", type=float, help="seconds per attempt (default: the config's)")
    g.add_argument("--max-retries", type=int, help="retries per call (default: the config's)")
    g.add_argument("--config-name", help="overlay in hydra_configs/ (default: the method's own, as it declares it)")
    g.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    g.add_argument(
        "--cache", help="judge cache file (default: OUT/judge_cache.sqlite); a rerun repeats no answered call"
    )
    g.add_argument(
        "--allow-judge-errors", action="store_true", help="report what was judged despite failed judge calls"
    )
    g.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. reward.reward_kwargs.judge.temperature=0")
    p.set_defaults(handler=_run_probe_judge, path_kinds={"responses": "file"})


def _run_probe_judge(args) -> int:
    from writing_rl.tools.probe.battery import PROBES_BY_NAME
    from writing_rl.tools.probe.run import load_target, run_probe
    from writing_rl.tools.probe.verdict import parse_thresholds

    for item in args.reward_kwargs or []:
        if "=" not in item:
            raise ValueError(f"--reward-kwargs {item!r}: write KEY=VALUE, e.g. strategy=both")
    options = [f"reward.custom_reward_function.reward_kwargs.{item}" for item in args.reward_kwargs or []]
    shortcuts = judge_overrides(
        args.judge_url, args.judge_model, args.api_key_env, args.max_concurrency, args.timeout_s, args.max_retries
    )
    thresholds = parse_thresholds(args.threshold, [*PROBES_BY_NAME, "position-bias", "self-consistency", "readable"])
    job = ProbeJob(
        method=args.method, out=args.out, data=args.data, responses=args.responses, rows=args.rows, seed=args.seed,
        probes=tuple(args.probes or ()), thresholds=thresholds, repeat=not args.no_repeat,
        wrong_language=args.wrong_language, translate_url=args.translate_url, translate_model=args.translate_model,
        cache=args.cache, allow_judge_errors=args.allow_judge_errors, progress=not args.no_progress,
    )  # fmt: skip
    target = load_target(args.method, args.config_name, [*args.overrides, *options, *shortcuts], args.config_dir)
    report = run_probe(job, target)
    print("\n".join(report.lines()))
    if report.unreadable:
        return UNREADABLE_EXIT
    return FLAGGED_EXIT if report.flagged else 0
