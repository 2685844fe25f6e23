"""The project's own checks, seen failing on what they must refuse and passing on what they must accept: the
learning check (scripts/tiny_results.py), the release suite's speed guard (bench/guard.py), and the cluster
preflight's placement of verl's worker groups (writing_rl/tools/shared/cluster/demand.py)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from itertools import product
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from writing_rl.tools.shared.cluster import demand
from writing_rl.tools.shared.cluster.demand import (
    SERVER_CPUS,
    TRAINER_CPUS,
    Group,
    _best_fit,
    job_demand,
    schedulability,
    unplaced,
)

from conftest import REPO_DIR


def load(relative: str):
    """A script of the repository that is not a package (scripts/, bench/), by its path."""
    path = REPO_DIR / relative
    spec = importlib.util.spec_from_file_location(f"_checked_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the learning check


@pytest.fixture(scope="module")
def tiny_results():
    return load("scripts/tiny_results.py")


def write_run(out, es_per_step: list[list[int]]) -> None:
    """verl's rollout dump of a run: per step, texts with these many e's (and filler without any)."""
    rollouts = out / "rollouts"
    rollouts.mkdir(parents=True)
    for step, counts in enumerate(es_per_step, start=1):
        lines = [json.dumps({"output": "word " + "e" * count + " stop"}) for count in counts]
        (rollouts / f"{step}.jsonl").write_text("\n".join(lines) + "\n")


def noisy_steps(means: list[float], rollouts: int = 16, spread: int = 3, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[max(0, round(m) + rng.randint(-spread, spread)) for _ in range(rollouts)] for m in means]


def test_the_learning_check_calls_a_run_that_moved_against_the_judge_not_learned(tiny_results, tmp_path):
    write_run(tmp_path, noisy_steps([20 - 2 * step for step in range(8)]))  # fewer e's, the judge wants more
    measured = tiny_results.taste_of("letter:e", tmp_path)
    assert measured["gain"] < 0 and measured["z"] < 0
    assert measured["learned"] is False
    assert "NOT learned" in tiny_results.learning_line(measured)


def test_the_learning_check_calls_a_flat_noisy_run_not_learned(tiny_results, tmp_path):
    write_run(tmp_path, noisy_steps([10] * 8, spread=5))
    measured = tiny_results.taste_of("letter:e", tmp_path)
    assert abs(measured["z"]) < tiny_results.MIN_Z
    assert measured["learned"] is False


def test_the_learning_check_calls_a_run_that_moved_the_judges_way_learned(tiny_results, tmp_path):
    write_run(tmp_path, noisy_steps([4 + 2 * step for step in range(8)]))
    measured = tiny_results.taste_of("letter:e", tmp_path)
    assert measured["z"] >= tiny_results.MIN_Z and measured["learned"] is True
    assert measured["end"] > measured["start"]
    assert "NOT learned" not in tiny_results.learning_line(measured)


def test_the_learning_check_follows_the_tastes_direction_not_the_measures(tiny_results, tmp_path):
    """Under the reversed taste (fewer e's) a falling measure is learning and a rising one is not."""
    falling, rising = tmp_path / "falling", tmp_path / "rising"
    write_run(falling, noisy_steps([20 - 2 * step for step in range(8)]))
    write_run(rising, noisy_steps([4 + 2 * step for step in range(8)]))
    assert tiny_results.taste_of("-letter:e", falling)["learned"] is True
    assert tiny_results.taste_of("-letter:e", rising)["learned"] is False


def test_a_run_too_short_for_both_windows_gets_no_verdict_so_the_learning_tests_fail_on_it(tiny_results, tmp_path):
    """tests/test_learning.py asserts taste["learned"]: a run without one cannot pass."""
    write_run(tmp_path, noisy_steps([4 + 4 * step for step in range(2 * tiny_results.WINDOW - 1)]))
    assert "learned" not in tiny_results.taste_of("letter:e", tmp_path)


def test_a_gain_with_no_spread_at_all_is_learned_and_no_gain_is_not(tiny_results):
    assert tiny_results.difference([3.0] * 4, [5.0] * 4) == (2.0, float("inf"))
    assert tiny_results.difference([3.0] * 4, [3.0] * 4) == (0.0, 0.0)
    assert tiny_results.difference([5.0] * 4, [3.0] * 4) == (-2.0, 0.0)


# ---------------------------------------------------------------- the speed guard

RATIO, FLOOR = "writing_rl8/lean/burst", "writing_rl8/floor/burst"  # an enforced target, and one printed only


@pytest.fixture
def guard(monkeypatch, tmp_path):
    """bench/guard.py's main() over scripted benchmark runs: ``guard(runs)`` with one {ratio: value} per run
    (``silent`` for silent rewards) returns (its exit status, the runs it asked for)."""
    module = load("bench/guard.py")
    monkeypatch.setattr(sys, "argv", ["guard.py", "--skip-soak", "--out", str(tmp_path)])

    def run(runs: list[dict]) -> tuple[int, int]:
        asked = []

        def run_bench(name, out):
            number = int(out.name.removeprefix("run"))
            asked.append(number)
            ratios = dict(runs[number - 1])
            silent = ratios.pop("silent", 0)
            targets = {RATIO: 1.0, FLOOR: 1.0}
            return {"ratios": ratios if name == "streaming" else {}, "targets": targets, "silent": silent,
                    "beside": ""}  # fmt: skip

        monkeypatch.setattr(module, "run_bench", run_bench)
        return module.main(), max(asked)

    return run


def test_the_speed_guard_fails_when_a_ratio_is_below_its_target_in_two_runs_and_stops_there(guard):
    status, runs = guard([{RATIO: 0.8, FLOOR: 1.2}, {RATIO: 0.95, FLOOR: 1.2}, {RATIO: 2.0, FLOOR: 2.0}])
    assert (status, runs) == (1, 2)


def test_the_speed_guard_passes_at_or_above_every_target(guard):
    assert guard([{RATIO: 1.0, FLOOR: 1.0}, {RATIO: 1.0, FLOOR: 1.0}]) == (0, 2)
    assert guard([{RATIO: 1.3, FLOOR: 1.1}, {RATIO: 1.2, FLOOR: 1.4}]) == (0, 2)


@pytest.mark.parametrize("third, status", [(0.9, 1), (1.1, 0)])
def test_when_two_runs_disagree_the_third_decides(guard, third, status):
    assert guard([{RATIO: 0.9, FLOOR: 1.0}, {RATIO: 1.1, FLOOR: 1.0}, {RATIO: third, FLOOR: 1.0}]) == (status, 3)


def test_a_target_the_machine_cannot_reach_is_printed_but_does_not_fail_the_guard(guard, capsys):
    assert guard([{RATIO: 1.2, FLOOR: 0.5}, {RATIO: 1.2, FLOOR: 0.5}])[0] == 0
    assert "below (not enforced)" in capsys.readouterr().out


def test_a_silent_reward_fails_the_guard_after_the_first_run_whatever_the_ratios(guard):
    assert guard([{RATIO: 5.0, FLOOR: 5.0, "silent": 1}, {RATIO: 5.0, FLOOR: 5.0}]) == (1, 1)


def test_the_guard_takes_the_worst_seeded_mix_of_each_mode_and_its_silent_rewards(monkeypatch, tmp_path):
    module = load("bench/guard.py")
    sent = []

    def fake_run(args, cwd, stdout, stderr):  # bench/faults.py's report, as it writes it
        sent.append(args)
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True)
        worst = {mode: {"condition": f"mix {i}", "vs_clean": (0.4, 0.3)[i], "samples_per_s": 100.0, "step_p95_s": 2.0,
                        "judge_ceiling": (0.45, 0.35)[i]}
                 for i, mode in enumerate(("streaming", "batch"))}  # fmt: skip
        (out / "faults.json").write_text(json.dumps({"worst_mix": worst, "silent": 3}))
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr(module.subprocess, "run", fake_run)
    measured = module.run_bench("mixes", tmp_path / "run1")
    assert measured["ratios"] == {"mixes/worst streaming": 0.4, "mixes/worst batch": 0.3}
    assert measured["targets"] == dict.fromkeys(measured["ratios"], 0.5) and measured["silent"] == 3
    assert "streaming worst mix 0 100/s" in measured["beside"] and "judge ceiling (est.) 0.35x" in measured["beside"]
    assert "bench/faults.py" in sent[0] and sent[0][sent[0].index("--mixes") + 1] == "5"
    assert sent[0][sent[0].index("--types") + 1] == "--out"  # no type alone: the mixes only


# ---------------------------------------------------------------- the cluster preflight's placement


def placed_by(rule: str, groups: list[Group], nodes: dict) -> bool:
    """Largest first, onto the first node that fits, or the emptiest: the placements best fit must beat."""
    free = {name: [r.get("GPU", 0), r.get("CPU", 0)] for name, r in nodes.items()}
    for group in sorted(groups, key=lambda g: (g.gpus, g.cpus), reverse=True):
        fits = [n for n, (gpu, cpu) in free.items() if gpu >= group.gpus and cpu >= group.cpus]
        if not fits:
            return False
        node = fits[0] if rule == "first" else max(fits, key=lambda n: (free[n][0], free[n][1]))
        free[node][0] -= group.gpus
        free[node][1] -= group.cpus
    return True


def placeable(groups: list[Group], nodes: dict) -> bool:
    """Whether any assignment of the groups to nodes fits every node's GPUs and CPUs (exhaustive)."""
    names = list(nodes)
    for assignment in product(names, repeat=len(groups)):
        used = {n: [0, 0] for n in names}
        for group, node in zip(groups, assignment):
            used[node][0] += group.gpus
            used[node][1] += group.cpus
        if all(used[n][0] <= nodes[n].get("GPU", 0) and used[n][1] <= nodes[n].get("CPU", 0) for n in names):
            return True
    return False


def trainer(gpus: int) -> Group:
    return Group("the policy's training workers", gpus, TRAINER_CPUS)


def server(gpus: int) -> Group:
    return Group("a rollout replica", gpus, SERVER_CPUS)


BEST_FIT_ONLY = [
    pytest.param(
        [trainer(4), server(3), server(3)],
        {"a": {"GPU": 6, "CPU": 64}, "b": {"GPU": 4, "CPU": 64}},
        id="GPUs: the 4-GPU group on the 4-GPU node leaves the 6 for the two 3s",
    ),
    pytest.param(
        [trainer(1), server(1), server(1)],
        {"a": {"GPU": 4, "CPU": 4}, "b": {"GPU": 3, "CPU": 3}},
        id="CPUs: the trainer's 3 CPUs on the 3-CPU node leave 4 for the two servers",
    ),
]


@pytest.mark.parametrize("groups, nodes", BEST_FIT_ONLY)
def test_a_cluster_that_only_best_fit_can_fill_is_accepted(groups, nodes):
    assert not placed_by("first", groups, nodes) and not placed_by("worst", groups, nodes)
    assert _best_fit(groups, nodes) == []  # the fast path, with no search behind it
    assert unplaced(groups, nodes) == []
    assert schedulability(groups, nodes) is None


def test_a_fully_async_run_on_a_cpu_backend_cluster_that_only_best_fit_can_fill_is_accepted():
    """The demand of a fully-async config (the sections job_demand reads, as tests/test_cluster_job.py composes
    them): one trainer GPU and a rollout of two 1-GPU replicas, on CPU-backend nodes started with
    ``ray start --num-gpus N --num-cpus M``."""
    config = OmegaConf.create(
        {
            "async_training": {},
            "trainer": {"nnodes": 1, "n_gpus_per_node": 1},
            "rollout": {"nnodes": 1, "n_gpus_per_node": 2},
            "actor_rollout_ref": {"rollout": {"tensor_model_parallel_size": 1}},
            "reward": {"reward_model": {"enable": False}},
        }
    )
    groups = job_demand(config)
    nodes = {"a": {"GPU": 4, "CPU": 4}, "b": {"GPU": 3, "CPU": 3}}
    assert sorted((g.gpus, g.cpus) for g in groups) == [(1, 2), (1, 2), (1, 3)]
    assert not placed_by("first", groups, nodes) and not placed_by("worst", groups, nodes)
    assert schedulability(groups, nodes) is None
    assert schedulability(groups, {"a": {"GPU": 4, "CPU": 4}, "b": {"GPU": 3, "CPU": 2}}) is not None


@pytest.mark.parametrize(
    "groups, nodes",
    [
        pytest.param(
            [trainer(8)], {"a": {"GPU": 4, "CPU": 64}, "b": {"GPU": 4, "CPU": 64}}, id="GPUs split over nodes"
        ),
        pytest.param([trainer(2)], {"a": {"GPU": 2, "CPU": 5}}, id="a GPU bundle's CPUs short"),
        pytest.param(
            [trainer(3), trainer(3), server(2)],
            {"a": {"GPU": 4, "CPU": 64}, "b": {"GPU": 4, "CPU": 64}},
            id="enough GPUs in all, too fragmented",
        ),  # fmt: skip
        pytest.param([server(1)], {}, id="no alive node"),
    ],
)
def test_a_cluster_that_cannot_hold_every_group_is_refused_with_what_is_missing(groups, nodes):
    assert not placeable(groups, nodes)
    assert unplaced(groups, nodes) != []
    message = schedulability(groups, nodes)
    assert message is not None and "can never schedule this job" in message
    assert ("no alive node" in message) == (not nodes)


DEMANDS = st.tuples(
    st.integers(1, 4), st.integers(1, 2), st.sampled_from([1, 2, 4]), st.integers(0, 3), st.integers(0, 2)
).map(lambda d: [trainer(d[0])] * d[1] + [server(d[2])] * d[3] + [Group("the GenRM's own GPUs", d[0], 2)] * d[4])
NODES = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 24)), min_size=1, max_size=3).map(
    lambda found: {f"node{i}": {"GPU": gpu, "CPU": cpu} for i, (gpu, cpu) in enumerate(found)}
)


@settings(derandomize=True, database=None, deadline=None, max_examples=150)
@given(DEMANDS, NODES)
def test_the_preflight_refuses_exactly_the_clusters_that_cannot_hold_the_job(groups, nodes):
    """Any group sizes (3-GPU trainers beside 2-GPU servers): best fit alone is not exact, the search behind it is."""
    assert (schedulability(groups, nodes) is None) == placeable(groups, nodes)
    assert (unplaced(groups, nodes) == []) == placeable(groups, nodes)


@settings(derandomize=True, database=None, deadline=None, max_examples=150)
@given(
    st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from([TRAINER_CPUS, SERVER_CPUS])), max_size=5),
    st.lists(st.integers(0, 12), min_size=1, max_size=3),
)
def test_with_group_sizes_in_powers_of_two_and_cpus_to_spare_the_preflight_refuses_only_what_cannot_fit(demand, gpus):
    """verl's usual shapes (1, 2, 4, 8 GPUs), each node with CPUs for all its GPUs: best fit largest first is exact
    (divisible sizes), so a refusal means no placement exists."""
    groups = [Group("a group", g, c) for g, c in demand]
    nodes = {f"node{i}": {"GPU": g, "CPU": 3 * 12} for i, g in enumerate(gpus)}
    assert (schedulability(groups, nodes) is None) == placeable(groups, nodes)


def test_a_cluster_that_can_hold_the_job_in_some_placement_is_never_refused():
    """Two 3-GPU trainer nodes and three 2-GPU rollout replicas fit 8 + 4 GPUs as 3+3+2 | 2+2; best fit puts
    the first 3 on the 4-GPU node and is left with a 2 for no node."""
    groups = [trainer(3), trainer(3), server(2), server(2), server(2)]
    nodes = {"a": {"GPU": 4, "CPU": 64}, "b": {"GPU": 8, "CPU": 64}}
    assert placeable(groups, nodes)
    assert _best_fit(groups, nodes) == [server(2)]  # the heuristic alone would refuse it
    assert schedulability(groups, nodes) is None
    assert not demand._fits(groups, nodes, budget=1)  # the search, cut short, finds nothing
