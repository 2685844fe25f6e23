"""bench/reward_fidelity.py at its smallest: one group size, a few groups, one seed, three rows through verl's own
reward loop against bench/fidelity_judge.py's judge. A noiseless judge must give the round robin the true order
and BRPO exactly its sign-against-the-reference rewards; a judge answering at random must give tau ~0; the calls
the judge server counted must be the ones each row declares."""

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import reward_fidelity as rf  # noqa: E402
from fidelity_judge import JudgeNoise, listwise_scores, pairwise_verdict, request_rng  # noqa: E402

NOISELESS = JudgeNoise(temperature=0.0, position_bias=0.0, tie_band=0.0)


def test_kendall_tau_b_handles_ties_and_constant_rewards():
    assert rf.kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert rf.kendall_tau_b([4, 3, 2, 1], [10, 20, 30, 40]) == -1.0
    # one pair tied in x: (C - D) / sqrt((n0 - n1)(n0 - n2)) = 5 / sqrt(5 * 6), as scipy.stats.kendalltau gives
    assert rf.kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(30))
    assert rf.kendall_tau_b([0, 0, 0], [1, 2, 3]) == 0.0


def test_the_pairwise_judge_is_bradley_terry_with_position_bias_and_seeded_per_request():
    noise = JudgeNoise(temperature=0.5, position_bias=0.3, tie_band=0.0)
    rng = random.Random(7)
    wins = sum(pairwise_verdict(0.25, 0.0, noise, rng) == "A" for _ in range(20000)) / 20000
    assert wins == pytest.approx(1 / (1 + math.exp(-(0.25 / 0.5 + 0.3))), abs=0.015)
    assert pairwise_verdict(0.1, 0.0, NOISELESS, rng) == "A" and pairwise_verdict(0.0, 0.1, NOISELESS, rng) == "B"
    banded = JudgeNoise(temperature=0.5, position_bias=0.0, tie_band=0.5)
    ties = sum(pairwise_verdict(0.0, 0.0, banded, rng) == "C" for _ in range(20000)) / 20000
    assert ties == pytest.approx(1 / (1 + math.exp(-0.5)) - 1 / (1 + math.exp(0.5)), abs=0.015)
    request = {"messages": [{"role": "user", "content": "A: Q=0.1 B: Q=0.2"}]}
    swapped = {"messages": [{"role": "user", "content": "A: Q=0.2 B: Q=0.1"}]}
    assert request_rng(request, 0).random() == request_rng(request, 0).random()
    assert request_rng(request, 0).random() != request_rng(swapped, 0).random()
    assert request_rng(request, 0).random() != request_rng(request, 1).random()


def test_listwise_scores_are_integers_0_to_10_that_follow_quality_without_noise():
    scores = listwise_scores({"A": -3.0, "B": 0.0, "C": 0.6, "D": 9.0}, JudgeNoise(temperature=0.0), random.Random(0))
    assert scores == {"A": 0, "B": 5, "C": 6, "D": 10}


def test_smallest_run_orders_groups_and_counts_the_declared_calls(ray_cluster):
    rows = [r for r in rf.ROWS if r.name in ("control", "brpo-k1", "round-robin")]
    run = rf.run_benchmark(rows, [8], groups=6, seeds=[0], noise=NOISELESS, workers=1, keep_rewards=True)
    assert run["skipped"] == {} and run["failed"] == {}
    results = {r["row"]: r for r in run["results"]}
    assert set(results) == {"control", "brpo-k1", "round-robin"}
    for result in results.values():
        assert result["calls_per_rollout"] == pytest.approx(result["declared"])
    assert results["round-robin"]["declared"] == 7.0 and results["brpo-k1"]["declared"] == 2 * 7 / 8

    # Noiseless: the round robin's mean outcome is the true order, every group.
    assert results["round-robin"]["tau"] == pytest.approx(1.0)
    # BRPO: the reference gets 0, every other rollout +1 above it and -1 below it.
    for rewards, qualities in zip(results["brpo-k1"]["rewards"], results["brpo-k1"]["qualities"]):
        reference = rewards.index(0.0)
        expected = [
            0.0 if i == reference else math.copysign(1.0, q - qualities[reference]) for i, q in enumerate(qualities)
        ]
        assert rewards == pytest.approx(expected)
    assert results["brpo-k1"]["tau"] > 0.5
    # A judge that answers at random orders nothing.
    assert abs(results["control"]["tau"]) < 0.35
    summary = {s["row"]: s for s in rf.summarize(run["results"])}
    assert summary["round-robin"]["tau_mean"] == pytest.approx(1.0) and summary["round-robin"]["tau_std"] is None
