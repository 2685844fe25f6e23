"""The statistics of `writing-rl eval` reports (writing_rl/evaluation/stats.py) on known cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from writing_rl.evaluation import stats

VALUES = [3.0, 7.0, 4.0, 9.0, 5.0, 6.0, 2.0, 8.0]


def test_bootstrap_interval_contains_the_mean_and_is_deterministic_by_seed():
    low, high = stats.bootstrap_ci(VALUES)
    assert low < np.mean(VALUES) < high
    assert 2 <= low and high <= 9
    assert stats.bootstrap_ci(VALUES, seed=0) == (low, high)  # a rerun gives the same report
    assert stats.bootstrap_ci(VALUES, seed=1) != (low, high)
    assert stats.bootstrap_ci([4.0]) == (4.0, 4.0)
    assert all(math.isnan(v) for v in stats.bootstrap_ci([]))


def test_mean_with_ci():
    result = stats.mean_with_ci(VALUES)
    assert result["mean"] == pytest.approx(5.5) and result["n"] == 8
    assert result["low"] < 5.5 < result["high"]
    assert math.isnan(stats.mean_with_ci([])["mean"]) and stats.mean_with_ci([])["n"] == 0


def test_ratio_with_ci_weights_items_by_their_size():
    result = stats.ratio_with_ci([10, 3, 12], [2, 1, 3])  # 25 points over 6 criteria, not the mean of means
    assert result["mean"] == pytest.approx(25 / 6) and result["n"] == 3
    assert 3 <= result["low"] <= result["mean"] <= result["high"] <= 5
    assert stats.ratio_with_ci([10, 3, 12], [2, 1, 3]) == result
    assert math.isnan(stats.ratio_with_ci([], [])["mean"]) and math.isnan(stats.ratio_with_ci([1], [0])["mean"])


def test_paired_difference():
    a, b = [5.0, 6.0, 7.0, 9.0], [4.0, 6.0, 5.0, 6.0]
    result = stats.paired_difference(a, b)
    assert result["mean"] == pytest.approx(1.5) and result["n"] == 4
    assert 0 <= result["low"] <= 1.5 <= result["high"] <= 3
    shifted = stats.paired_difference([x + 2 for x in b], b)  # the same difference on every item: no spread
    assert (shifted["mean"], shifted["low"], shifted["high"]) == pytest.approx((2, 2, 2))
    with pytest.raises(ValueError, match="equal lengths"):
        stats.paired_difference([1.0], [1.0, 2.0])


def test_by_group():
    groups = stats.by_group([1.0, 0.0, 0.5, 1.0], ["b", "a", "b", "a"])
    assert list(groups) == ["a", "b"]
    assert groups["a"]["mean"] == 0.5 and groups["b"]["mean"] == 0.75 and groups["b"]["n"] == 2


@pytest.mark.parametrize(
    "gold, predicted, tau",
    [
        ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 3, 4], [1, 1, 2, 3], 5 / math.sqrt(6 * 5)),  # a tie in the prediction: tau-b
        ([1, 1, 2, 2], [1, 2, 1, 2], 0.0),  # ties in both, no order agreed or disagreed
        ([1, 2, 3], [2, 1, 3], 1 / 3),
    ],
)
def test_kendall_tau_b(gold, predicted, tau):
    assert stats.kendall_tau(gold, predicted) == pytest.approx(tau)


def test_kendall_tau_is_nan_for_a_constant_scoring():
    assert math.isnan(stats.kendall_tau([1, 2, 3], [5, 5, 5]))


def test_logistic_fit_recovers_known_coefficients():
    x = np.linspace(-3, 3, 61)
    exact = 1 / (1 + np.exp(-(0.5 + 2.0 * x)))  # fractional targets: the fit is exact
    assert stats.logistic_fit(x, exact) == pytest.approx([0.5, 2.0], abs=1e-4)
    rng = np.random.default_rng(0)
    sampled = rng.normal(size=20000)
    wins = (rng.random(20000) < 1 / (1 + np.exp(-(-0.3 + 1.5 * sampled)))).astype(float)
    assert stats.logistic_fit(sampled, wins) == pytest.approx([-0.3, 1.5], abs=0.08)


def test_logistic_fit_converges_on_separable_data():
    beta = stats.logistic_fit(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0.0, 0.0, 1.0, 1.0]))
    assert np.all(np.isfinite(beta)) and beta[1] > 0


def test_length_controlled_winrate_is_the_raw_rate_when_length_explains_nothing():
    outcomes = [1, 0, 0.5, 1, 1]
    assert stats.length_controlled_winrate(outcomes, [0] * 5) == pytest.approx(0.7, abs=1e-6)
    assert stats.length_controlled_winrate(outcomes, [120] * 5) == pytest.approx(0.7, abs=1e-6)


def test_length_controlled_winrate_discounts_wins_that_come_with_length():
    differences = [40, 30, 20, 10, -5, -10, 15, -20]  # policy minus baseline
    outcomes = [1, 1, 1, 1, 0, 0, 0, 1]  # longer mostly wins
    controlled = stats.length_controlled_winrate(outcomes, differences)
    assert 0.5 < controlled < np.mean(outcomes)
    # the same judge with a policy that is mostly shorter: its losses come with length, and are discounted
    losses = [1 - o for o in outcomes]
    mirrored = stats.length_controlled_winrate(losses, [-d for d in differences])
    assert np.mean(losses) < mirrored < 0.5 and mirrored == pytest.approx(1 - controlled)


def test_length_controlled_winrate_fits_tanh_of_the_standardised_difference():
    """AlpacaEval-LC's bounded feature: the fit is on tanh(d / std(d)), so one huge difference weighs no
    more than a large one (a linear feature would let it set the slope)."""
    differences = np.array([40, 30, 20, 10, -5, -10, 15, -20], dtype=float)
    outcomes = np.array([1, 1, 1, 1, 0, 0, 0, 1], dtype=float)
    a = stats.logistic_fit(np.tanh(differences / differences.std()), outcomes)[0]
    assert stats.length_controlled_winrate(outcomes, differences) == pytest.approx(1 / (1 + np.exp(-a)), abs=1e-12)
    linear = stats.logistic_fit(differences / differences.std(), outcomes)[0]
    assert stats.length_controlled_winrate(outcomes, differences) != pytest.approx(1 / (1 + np.exp(-linear)))
    # an outlier far out: under tanh its feature is about 1, as for any clearly longer answer
    outlier = [*differences, 5000.0]
    assert 0 < stats.length_controlled_winrate([*outcomes, 1.0], outlier) < 1
