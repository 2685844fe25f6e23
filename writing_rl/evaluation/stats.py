"""The statistics of the evaluation reports: bootstrap intervals, Kendall tau and a logistic fit. Every interval
is a percentile bootstrap with a fixed seed, so a rerun on the same judgments gives the same report byte for byte.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95


def bootstrap_ci(values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of the mean of ``values`` (both ends the mean for one value)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(low), float(high)


def mean_with_ci(values: Sequence[float], seed: int = 0) -> dict[str, float]:
    """``{"mean", "low", "high", "n"}`` of ``values``."""
    low, high = bootstrap_ci(values, seed=seed)
    return {"mean": float(np.mean(values)) if len(values) else float("nan"), "low": low, "high": high, "n": len(values)}


def ratio_with_ci(numerators: Sequence[float], denominators: Sequence[float], seed: int = 0) -> dict[str, float]:
    """``sum(numerators) / sum(denominators)`` (e.g. all criterion scores over their count, items of
    different sizes) with the 95% interval from resampling the items."""
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if num.size == 0 or den.sum() == 0:
        return {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "n": int(num.size)}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, num.size, size=(RESAMPLES, num.size))
    ratios = num[picks].sum(axis=1) / np.maximum(den[picks].sum(axis=1), 1e-12)
    low, high = np.quantile(ratios, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"mean": float(num.sum() / den.sum()), "low": float(low), "high": float(high), "n": int(num.size)}


def paired_difference(a: Sequence[float], b: Sequence[float], seed: int = 0) -> dict[str, float]:
    """Mean of ``a - b`` over paired items with its paired-bootstrap interval (items resampled together)."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    return mean_with_ci(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), seed=seed)


def by_group(values: Sequence[float], groups: Sequence[Hashable], seed: int = 0) -> dict[Hashable, dict[str, float]]:
    """``mean_with_ci`` of the values of each group, groups in sorted order."""
    members: dict[Hashable, list[float]] = {}
    for value, group in zip(values, groups):
        members.setdefault(group, []).append(value)
    return {group: mean_with_ci(members[group], seed=seed) for group in sorted(members, key=str)}


def kendall_tau(gold: Sequence[float], predicted: Sequence[float]) -> float:
    """Kendall's tau-b between two scorings of the same items (ties in either count as in tau-b);
    nan when either scoring is constant."""
    x, y = np.asarray(gold, dtype=float), np.asarray(predicted, dtype=float)
    i, j = np.triu_indices(len(x), k=1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    concordance = float(np.sum(dx * dy))
    denominator = np.sqrt(float(np.sum(dx != 0)) * float(np.sum(dy != 0)))
    return concordance / denominator if denominator else float("nan")


def logistic_fit(features: np.ndarray, targets: np.ndarray, weights: np.ndarray | None = None, ridge: float = 1e-6):
    """Coefficients of a logistic regression with an intercept (Newton's method, a tiny ridge so that
    separable data still converges); ``targets`` may be fractional (a tie is 0.5)."""
    X = np.column_stack([np.ones(len(targets)), np.asarray(features, dtype=float)])
    y = np.asarray(targets, dtype=float)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    beta = np.zeros(X.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(X @ beta)))
        gradient = X.T @ (w * (y - p)) - ridge * beta
        hessian = (X * (w * p * (1 - p))[:, None]).T @ X + ridge * np.eye(X.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta


def length_controlled_winrate(outcomes: Sequence[float], length_difference: Sequence[float]) -> float:
    """AlpacaEval's length-controlled win rate: fit P(win) = sigmoid(a + b * tanh(d / std(d))), ``d`` policy minus
    baseline length, and return sigmoid(a), the win rate at equal lengths. The tanh keeps a few very long or very
    short answers from dominating the slope. No spread in ``d``: the raw win rate."""
    d = np.asarray(length_difference, dtype=float)
    spread = d.std()
    features = np.tanh(d / spread) if spread > 0 else np.zeros_like(d)
    a = logistic_fit(features, np.asarray(outcomes, dtype=float))[0]
    return float(1 / (1 + np.exp(-a)))
