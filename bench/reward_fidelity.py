"""Reward fidelity: how well each judge reward orders a group by its true quality, per judge call.

    python bench/reward_fidelity.py [--sizes 4 8 16] [--groups 16] [--seeds 3] [--temperature 0.5]
        [--position-bias 0.3] [--tie-band 0.5] [--rows NAME ...] [--quick] [--json PATH] [--plot PATH]

Each step is `groups` prompts x n rollouts whose true qualities are drawn N(0, 1) per group from a seed;
each rollout's text carries its quality as a token (``Q=0.7310``) that only the judge reads
(bench/fidelity_judge.py: a Bradley-Terry pairwise judge with position bias and Rao-Kupper ties, a
noisy-score listwise judge). verl's own RewardLoopManager (local Ray, batch mode: compute_rm_score on the
whole step, as the colocated trainer calls it) scores the step with each row of ROWS, through our
GroupRewardManager or ParallelRewardManager as hydra_configs/*.yaml set them. Per row and n: Kendall's
tau-b between a group's rewards and its qualities (a group whose rewards are all equal counts 0), averaged
over the groups, mean +- std over the seeds; judge calls per rollout as the judge server counted them.
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from fidelity_judge import ENSEMBLE_SIZE, JudgeNoise, Judges, judge_calls  # noqa: E402

BRPO, GRRM, PAIRWISE = "pkg://reward_fns.brpo", "pkg://reward_fns.group_ranking", "pkg://reward_fns.pairwise"
TOURNAMENT, POINTWISE = "pkg://reward_fns.tournament", "pkg://reward_fns.pointwise"
# The reward fn each hydra config ships: a row with that fn keeps the config's options and sets its own on top.
CONFIG_FN = {
    "brpo": BRPO,
    "grrm_mt_grpo": GRRM,
    "writing_rl": PAIRWISE,
    "tournament": TOURNAMENT,
    "pointwise": POINTWISE,
}
MANAGERS = {"group": "GroupRewardManager", "parallel": "ParallelRewardManager"}  # by name, in verl's registry
# Writing-RL per sample, curriculum off (tests/conftest.py's PER_SAMPLE).
NO_CURRICULUM = ("~reward.custom_reward_function.reward_kwargs.advance_threshold", "reward.reward_kwargs.curriculum.enable=false")  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One method: a reward fn under a manager, its options, the judge it is run against."""

    name: str
    config: str  # hydra_configs/<config>.yaml
    fn: str  # reward.custom_reward_function.path
    manager: str = "group"  # MANAGERS
    kwargs: dict = field(default_factory=dict)  # reward.custom_reward_function.reward_kwargs
    fn_name: str = "compute_score"
    overrides: tuple = ()  # more hydra overrides; {ensemble_members} is filled in
    judge: str = "main"  # main (the noise model), random (answers at random), ensemble (3 noisy judges)
    reference_quantile: float = 0.5  # the reference's quality (Writing-RL's target), a quantile of N(0, 1)
    calls: Callable[[int], float] | None = None  # declared judge calls per rollout; None: the fn's METHOD
    requires: str | None = None  # a repo file the row needs: skipped (with a note) without it
    notes: str = ""


def _tour(name: str, notes: str, **kwargs) -> Row:
    return Row(name, "tournament", TOURNAMENT, kwargs=kwargs, requires="reward_fns/tournament.py", notes=notes)


def _brpo(name: str, k: int, notes: str, strategy: str = "both", **more) -> Row:
    return Row(name, "brpo", BRPO, kwargs={"num_references": k, "strategy": strategy}, notes=notes, **more)


ROWS = [
    _brpo("control", 1, "brpo-k1 against a judge that answers at random: tau must be ~0", judge="random"),
    _brpo("brpo-k1-1order", 1, "BRPO, 1 reference, rollout shown first only", strategy="position-advantage"),
    _brpo("brpo-k1", 1, "BRPO as shipped (hydra_configs/brpo.yaml): 1 reference, both orders"),
    _brpo("brpo-k2", 2, "BRPO, 2 references, both orders"),
    _brpo("brpo-k4", 4, "BRPO, 4 references (3 at n=4), both orders"),
    Row("grrm", "grrm_mt_grpo", GRRM, notes="GRRM listwise (hydra_configs/grrm_mt_grpo.yaml): one call ranks the group"),
    Row("pointwise", "pointwise", POINTWISE, requires="reward_fns/pointwise.py",
        notes="pointwise (hydra_configs/pointwise.yaml): each rollout scored 1-10 alone, win rate in the group"),
    Row("writing-rl@median", "writing_rl", PAIRWISE, manager="parallel", overrides=NO_CURRICULUM,
        notes="Writing-RL vs a reference at the median quality, reference first, curriculum off"),
    Row("writing-rl@q90", "writing_rl", PAIRWISE, manager="parallel", overrides=NO_CURRICULUM,
        reference_quantile=0.9, notes="Writing-RL vs a reference at the 90th percentile"),
    Row("round-robin", "brpo", str(REPO / "bench/group_baselines.py"), fn_name="round_robin",
        overrides=("reward.reward_kwargs.failure_score=-1.0",), calls=lambda n: n - 1.0,
        notes="bench/group_baselines.py: every pair in both orders, mean outcome"),
    _tour("tour-k2-1o", "tournament: 2 opponents each, 1 order, Bradley-Terry", schedule="k_opponents", opponents=2,
          orders=1),
    _tour("tour-swiss-1o", "tournament: swiss, log2(n) rounds, 1 order, Bradley-Terry", schedule="swiss", orders=1),
    _tour("tour-knockout-1o", "tournament: single elimination (n-1 games), 1 order, Bradley-Terry",
          schedule="single_elimination", orders=1),
    _tour("tour-knockout", "tournament: single elimination (n-1 games), both orders, Bradley-Terry",
          schedule="single_elimination"),
    _tour("tour-k2", "tournament: 2 opponents each, both orders, Bradley-Terry", schedule="k_opponents", opponents=2),
    _tour("tour-k4-1o", "tournament: 4 opponents each, 1 order, Bradley-Terry", schedule="k_opponents", opponents=4,
          orders=1),
    _tour("tour-k4", "tournament: 4 opponents each, both orders, Bradley-Terry", schedule="k_opponents", opponents=4),
    _tour("tour-rr-1o-copeland", "tournament: round robin, 1 order, Copeland", aggregation="copeland", orders=1),
    _tour("tour-rr-winrate", "tournament: round robin, both orders, win rate", aggregation="win_rate"),
    _tour("tour-rr-bt", "tournament as shipped (hydra_configs/tournament.yaml): round robin, both orders, "
          "Bradley-Terry"),
    # Three independent noisy judges vote on every judgment (reward.reward_kwargs.judge.ensemble, majority, a
    # split is a tie). If the ensemble's shape changes, this one override is what to change.
    _brpo("ensemble3-brpo-k1", 1, "brpo-k1, every judgment voted by 3 independent noisy judges", judge="ensemble",
          overrides=("++reward.reward_kwargs.judge.ensemble.members={ensemble_members}",)),
]  # fmt: skip
ROW_NAMES = [r.name for r in ROWS]


# ---------------------------------------------------------------- the step: groups with hidden qualities

FILLER = "lamp harbour tide gull rope keeper storm night window stair salt letter bell fog".split()


def draw_qualities(seed: int, n: int, groups: int) -> list[list[float]]:
    """The true qualities, N(0, 1), per group: the same for every row at one (seed, n)."""
    rng = random.Random(f"fidelity:{seed}:{n}")
    return [[rng.gauss(0.0, 1.0) for _ in range(n)] for _ in range(groups)]


def answer_text(tag: str, r: int, quality: float, rng: random.Random) -> str:
    words = " ".join(rng.choice(FILLER) for _ in range(8))
    return f"Draft {r} of {tag}. The {words}. Q={quality:.4f}. The end."


def make_step(tokenizer, row: Row, qualities: list[list[float]], seed: int):
    """One step of len(qualities) prompts x n rollouts, its uids named after the row, seed and group."""
    from writing_rl.reward_loop.batch import build_reward_batch

    n = len(qualities[0])
    reference_q = statistics.NormalDist().inv_cdf(row.reference_quantile)
    rng = random.Random(f"text:{seed}:{n}")
    rows, texts, uids = [], [], []
    for g, group in enumerate(qualities):
        tag = f"set {seed}-{n}-{g}"
        prompt = f"Write a short story about a lighthouse keeper ({tag})."
        reference = f"Reference story for {tag}. Q={reference_q:.4f}. The end."
        truth = {"prompt": prompt, "target": [reference], "criteria": None, "id": f"{seed}-{n}-{g}"}
        for r, quality in enumerate(group):
            rows.append({"data_source": "writing", "prompt": [{"role": "user", "content": prompt}],
                         "reward_model": {"ground_truth": truth}, "extra_info": {"index": g, "group_size": n}})  # fmt: skip
            texts.append(answer_text(tag, r, quality, rng))
            uids.append(f"fid-{row.name}-{seed}-{n}-{g}")
    return build_reward_batch(tokenizer, rows, texts, uids)


# ---------------------------------------------------------------- measures


def kendall_tau_b(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b (ties in either list handled); 0 when either list is constant."""
    concordant = discordant = tied_x = tied_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = (x[i] > x[j]) - (x[i] < x[j]), (y[i] > y[j]) - (y[i] < y[j])
            tied_x += dx == 0
            tied_y += dy == 0
            if dx and dy:
                concordant += dx == dy
                discordant += dx != dy
    pairs = len(x) * (len(x) - 1) // 2
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denominator if denominator else 0.0


def declared_calls(row: Row, n: int, fn_kwargs: dict) -> float:
    """Judge calls per rollout the row declares: its own formula, else its reward fn's METHOD (x the ensemble)."""
    if row.calls is not None:
        per_rollout = row.calls(n)
    else:
        module = importlib.import_module(row.fn.removeprefix("pkg://"))
        per_rollout = module.METHOD.calls_per_rollout(None, n, fn_kwargs)
    return per_rollout * (ENSEMBLE_SIZE if row.judge == "ensemble" else 1)


# ---------------------------------------------------------------- running a row through verl's reward loop


def row_overrides(row: Row, tokenizer_dir, urls: list[str], workers: int) -> list[str]:
    name = MANAGERS[row.manager]
    keep = CONFIG_FN.get(row.config) == row.fn
    fn_kwargs = [f"++reward.custom_reward_function.reward_kwargs.{k}={v}" for k, v in row.kwargs.items()]
    members = "[" + ",".join(f"{{name:judge{i},base_url:'{u}'}}" for i, u in enumerate(urls)) + "]"
    return [
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        f"reward.num_workers={workers}",
        f"reward.reward_kwargs.judge.base_url={urls[0]}",
        "reward.reward_kwargs.judge.model=sim",
        "reward.reward_kwargs.judge.max_concurrency=64",
        "reward.reward_kwargs.judge.hedge_after=0",  # no hedged copies: the server counts the method's calls
        f"reward.reward_manager.name={name}",
        f"reward.custom_reward_function.path={row.fn}",
        f"reward.custom_reward_function.name={row.fn_name}",
        *([] if keep else ["~reward.custom_reward_function.reward_kwargs"]),
        *(o.format(ensemble_members=members) for o in row.overrides),
        *fn_kwargs,
    ]


def row_config(row: Row, tokenizer_dir, urls: list[str], workers: int):
    """The composed config, checked as a reward worker reads it (a refused key raises ConfigError)."""
    from writing_rl.offline.compose import compose
    from writing_rl.reward_loop.config import ManagerConfig

    config = compose(row.config, row_overrides(row, tokenizer_dir, urls, workers))
    ManagerConfig.from_verl(config)
    declared_calls(row, 4, fn_options(config))  # the fn's options read as its METHOD reads them
    return config


def fn_options(config) -> dict:
    return dict(config.reward.custom_reward_function.get("reward_kwargs") or {})


def measure_row(row: Row, config, tokenizer, urls, sizes, groups, seeds, keep_rewards=False) -> list[dict]:
    """One result per (n, seed): the mean tau over the groups, the judge calls per rollout counted."""
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    fn_kwargs = fn_options(config)
    manager = RewardLoopManager(config)
    results = []
    try:
        for n in sizes:
            for seed in seeds:
                qualities = draw_qualities(seed, n, groups)
                step = make_step(tokenizer, row, qualities, seed)
                before = sum(judge_calls(u) for u in urls)
                out = manager.compute_rm_score(step)
                calls = sum(judge_calls(u) for u in urls) - before
                flat = out.batch["rm_scores"].sum(-1).tolist()
                rewards = [flat[g * n : (g + 1) * n] for g in range(groups)]
                taus = [kendall_tau_b(r, q) for r, q in zip(rewards, qualities)]
                result = {"row": row.name, "n": n, "seed": seed, "tau": statistics.fmean(taus),
                          "calls_per_rollout": calls / (n * groups), "declared": declared_calls(row, n, fn_kwargs)}  # fmt: skip
                if keep_rewards:
                    result.update(rewards=rewards, qualities=qualities)
                results.append(result)
    finally:
        for worker in manager.reward_loop_workers:
            ray.kill(worker, no_restart=True)
        time.sleep(1)
    return results


def run_benchmark(rows, sizes, groups, seeds, noise: JudgeNoise, workers=2, log=print, keep_rewards=False) -> dict:
    """Every row at every n and seed: {"results": [...], "skipped": {row: why}, "failed": {row: error}, "wall_s"}."""
    import ray
    from transformers import AutoTokenizer

    from tiny import build_tiny_tokenizer

    texts = [answer_text("x", 0, 0.5, random.Random(0))] * 50
    tokenizer_dir = build_tiny_tokenizer(tempfile.mkdtemp(prefix="bench-fidelity-"), texts)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    own_ray = not ray.is_initialized()
    if own_ray:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    judges, out = Judges(noise), {"results": [], "skipped": {}, "failed": {}, "wall_s": {}}
    try:
        for row in rows:
            start = time.perf_counter()
            kind, found = try_row(row, judges, tokenizer_dir, tokenizer, (sizes, groups, seeds), workers, keep_rewards)
            if kind == "results":
                out["results"] += found
                out["wall_s"][row.name] = time.perf_counter() - start
                found = f"{len(found)} measurements, {out['wall_s'][row.name]:.1f}s"
            else:
                out[kind][row.name] = found
            log(f"  {row.name} ({kind}): {found}")
    finally:
        judges.stop()
        if own_ray:
            ray.shutdown()
    return out


def try_row(row: Row, judges: Judges, tokenizer_dir, tokenizer, plan, workers: int, keep_rewards: bool):
    """("results", [...]); ("skipped", why) when the row's fn is missing or its config refused; ("failed", error)."""
    if row.requires and not (REPO / row.requires).exists():
        return "skipped", f"{row.requires} does not exist yet"
    try:
        urls = judges.urls(row.judge)
        config = row_config(row, tokenizer_dir, urls, workers)
    except Exception as err:  # noqa: BLE001 (a key or option refused: the row is skipped)
        return "skipped", f"config refused: {first_line(err)}"
    try:
        return "results", measure_row(row, config, tokenizer, urls, *plan, keep_rewards)
    except Exception as err:  # noqa: BLE001 (reported; the other rows still run)
        return "failed", f"{type(err).__name__}: {first_line(err)}"


def first_line(err: Exception) -> str:
    return (str(err).splitlines() or [""])[0][:300]


# ---------------------------------------------------------------- report


def summarize(results: list[dict]) -> list[dict]:
    """Per (row, n): tau mean and std over the seeds, calls per rollout (counted, mean over seeds) and declared."""
    by_key: dict[tuple, list[dict]] = {}
    for r in results:
        by_key.setdefault((r["row"], r["n"]), []).append(r)
    summary = []
    for (row, n), found in by_key.items():
        taus = [r["tau"] for r in found]
        summary.append({"row": row, "n": n, "seeds": len(found), "tau_mean": statistics.fmean(taus),
                        "tau_std": statistics.stdev(taus) if len(taus) > 1 else None,
                        "calls_per_rollout": statistics.fmean(r["calls_per_rollout"] for r in found),
                        "declared_calls_per_rollout": found[0]["declared"]})  # fmt: skip
    return summary


def print_table(summary: list[dict], run: dict, header: str) -> None:
    print(f"\n{header}\n")
    print(f"{'row':<20}{'n':>4}{'calls/rollout':>15}{'declared':>10}{'tau-b mean':>12}{'± std':>8}")
    for s in summary:
        spread = f"{s['tau_std']:.3f}" if s["tau_std"] is not None else "-"
        print(f"{s['row']:<20}{s['n']:>4}{s['calls_per_rollout']:>15.3f}{s['declared_calls_per_rollout']:>10.3f}"
              f"{s['tau_mean']:>12.3f}{spread:>8}")  # fmt: skip
    for name, why in run["skipped"].items():
        print(f"skipped {name}: {why}")
    for name, why in run["failed"].items():
        print(f"FAILED {name}: {why}")


def plot(summary: list[dict], path: Path, title: str) -> None:
    """tau vs judge calls per rollout (log x), a panel per n, a marker per row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter, StrMethodFormatter

    sizes = sorted({s["n"] for s in summary})
    names = list(dict.fromkeys(s["row"] for s in summary))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.6 * len(sizes) + 2, 4.8), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], sizes):
        for i, name in enumerate(names):
            for s in (s for s in summary if s["row"] == name and s["n"] == n):
                ax.errorbar(s["calls_per_rollout"], s["tau_mean"], yerr=s["tau_std"] or 0, fmt="osD^v<>pPXh*"[i % 12],
                            color=plt.get_cmap("tab20")(i % 20), label=name, capsize=3, ms=7)  # fmt: skip
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator([1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16]))
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axhline(0, color="grey", lw=0.5)
        ax.grid(alpha=0.3)
        ax.set(title=f"n = {n}", xlabel="judge calls per rollout (counted, log)")
    axes[0][0].set_ylabel("Kendall tau-b, rewards vs true quality")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.suptitle(title.replace("; ", "\n"), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1 - 1.9 / fig.get_figwidth(), 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--groups", type=int, default=16, help="prompts (groups) per step")
    parser.add_argument("--seeds", type=int, default=3)
    for flag, default in (("--temperature", 0.5), ("--position-bias", 0.3), ("--tie-band", 0.5)):
        parser.add_argument(flag, type=float, default=default, help="the judge's noise (bench/fidelity_judge.py)")
    parser.add_argument("--score-noise", type=float, default=None, help="listwise score noise (default T*pi/sqrt 6)")
    parser.add_argument("--judge-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rows", nargs="+", default=ROW_NAMES, choices=ROW_NAMES, metavar="NAME")
    parser.add_argument("--quick", action="store_true", help="n 4 and 8, 4 groups, 1 seed")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.groups, args.seeds = [4, 8], 4, 1
    noise = JudgeNoise(args.temperature, args.position_bias, args.tie_band, args.score_noise, seed=args.judge_seed)
    rows = [r for r in ROWS if r.name in args.rows]
    start = time.perf_counter()
    run = run_benchmark(rows, args.sizes, args.groups, list(range(args.seeds)), noise, args.workers,
                        log=lambda line: print(line, file=sys.stderr))  # fmt: skip
    wall = time.perf_counter() - start
    summary = summarize(run["results"])
    header = (f"{args.groups} groups x n rollouts, qualities N(0,1), {args.seeds} seed(s); judge T={noise.temperature:g} "
              f"bias={noise.position_bias:g} tie-band={noise.tie_band:g} listwise noise={noise.listwise_noise:.3f}; "
              f"batch mode, {args.workers} reward workers; wall {wall:.0f}s")  # fmt: skip
    print_table(summary, run, header)
    if args.json:
        from judge_throughput import write_json

        settings = {**vars(noise), "groups": args.groups, "seeds": args.seeds, "sizes": args.sizes, "wall_s": wall}
        notes = {r.name: r.notes for r in rows}
        write_json(args.json, {"settings": {**settings, "mode": "batch"}, "summary": summary, "notes": notes, **run})
    if args.plot:
        plot(summary, args.plot, header)


if __name__ == "__main__":
    main()
