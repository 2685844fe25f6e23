"""``writing-rl curriculum``: the curriculum's own commands, added to ``writing-rl`` through the entry-point group
``writing-rl.commands`` (setup.py), as a package of yours adds its own."""

from __future__ import annotations

from pathlib import Path


def add_commands(subparsers) -> None:
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
    show.add_argument(
        "--plot",
        help="write a PNG of the level histogram over checkpointed steps (needs matplotlib: "
        "pip install 'writing-rl[plot]'; default: no plot)",
    )
    show.set_defaults(handler=_run_curriculum_show)


def _run_curriculum_show(args) -> int:
    from writing_rl.curriculum.report import describe_state

    print(describe_state(args.state_dir, top=args.top))
    if args.plot:
        print(plot_levels_over_steps(args.state_dir, args.plot))
    return 0


def plot_levels_over_steps(state_dir: str | Path, out: str | Path) -> str:
    """A PNG: one stacked bar per checkpointed step, one colour per level; the line to print about it."""
    from writing_rl.curriculum.report import histogram_over_steps
    from writing_rl.plot import plot, stacked_bars

    steps, table = histogram_over_steps(state_dir)
    if not steps:
        raise FileNotFoundError(f"no step snapshots in {state_dir} (written when verl saves a checkpoint)")
    series = [(f"level {level}", table[:, level].tolist()) for level in range(table.shape[1])]
    return plot(
        out,
        lambda axes: stacked_bars(
            axes, [str(s) for s in steps], series, title="reference levels per step", x_label="step", y_label="ids"
        ),
    )
