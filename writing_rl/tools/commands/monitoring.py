"""``monitor``: judge health per training step from a run's rollout dumps."""

from __future__ import annotations


def add_monitor(subparsers) -> None:
    p = subparsers.add_parser(
        "monitor",
        help="judge health per training step, read from a run's rollout dumps (trainer.rollout_data_dir)",
        description=(
            "Reads the <step>.jsonl files verl writes to trainer.rollout_data_dir and prints one row per step: "
            "samples, mean reward, mean response length and its correlation with the reward (a length-hacking "
            "alarm), judge error rate, unreadable replies, format errors, position consistency, judge calls, "
            "latency p50/p95, and retries, 429s and judge tokens where the run has those keys.\n"
            "verl's v1 trainer (trainer.use_v1=true) dumps no reward extra info: its dumps give only reward and "
            "length; the same numbers reach the run's tracker under judge/ (docs/judges/health.md)."
        ),
        epilog="example: writing-rl monitor runs/exp1/rollouts --plot runs/exp1/health.png",
    )
    p.add_argument("rollout_dir", help="the run's trainer.rollout_data_dir (a directory of <step>.jsonl)")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON instead of the table")
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="also draw the health numbers over the steps into this PNG (needs matplotlib; default: no plot)",
    )
    p.set_defaults(handler=_run_monitor)


def _run_monitor(args) -> int:
    from writing_rl.tools.monitor import as_json, monitor, plot_health, table

    steps = monitor(args.rollout_dir)
    print(as_json(steps) if args.json else table(steps))
    if args.plot:
        print(plot_health(steps, args.plot))
    return 0
