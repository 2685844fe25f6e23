"""The shadow judge over one training step's samples: the tracker's ``shadow/...`` metrics.

Each sample of a run with a shadow (reward.reward_kwargs.shadow) carries the sums of the shadow results its
worker finished since its previous sample (reward_loop/shadow/scoring.py ``SHADOW_KEYS``); the step's figures
are sums over sums. Present once a step carries a shadow result (or a failed or skipped one).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from writing_rl.reward_loop.health.values import column

PREFIX = "shadow/"


def shadow_health(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``shadow/...`` of one step: ``samples_total`` (shadowed samples both judges scored), ``failed_total``
    and ``skipped_total``; over the scored ones ``agreement`` (the share whose rewards agree),
    ``train_reward_mean`` and ``reward_mean`` (the training judge's and the shadow's mean reward on them) and
    ``reward_gap`` (their difference); the shadow's ``calls_total``, ``tokens_total`` and ``cost_total``;
    ``drift_max`` (1: a worker's drift watch saw drift; 0: none; -1: no watch has two windows yet) and
    the watches' ``train_gain_mean`` / ``gain_mean``."""
    sums = {key: column(rows, key).sum() for key in _SUMMED if len(column(rows, key))}
    if not sums.get("shadow_samples") and not sums.get("shadow_failed") and not sums.get("shadow_skipped"):
        return {}
    metrics = {
        f"{PREFIX}samples_total": float(sums.get("shadow_samples", 0.0)),
        f"{PREFIX}failed_total": float(sums.get("shadow_failed", 0.0)),
        f"{PREFIX}skipped_total": float(sums.get("shadow_skipped", 0.0)),
        f"{PREFIX}calls_total": float(sums.get("shadow_calls", 0.0)),
        f"{PREFIX}tokens_total": float(sums.get("shadow_tokens", 0.0)),
        f"{PREFIX}cost_total": float(sums.get("shadow_cost", 0.0)),
    }
    scored = sums.get("shadow_samples", 0.0)
    if scored:
        train = sums["shadow_train_reward_sum"] / scored
        shadow = sums["shadow_reward_sum"] / scored
        metrics[f"{PREFIX}agreement"] = float(sums["shadow_agree_sum"] / scored)
        metrics[f"{PREFIX}train_reward_mean"] = float(train)
        metrics[f"{PREFIX}reward_mean"] = float(shadow)
        metrics[f"{PREFIX}reward_gap"] = float(train - shadow)
    drift = column(rows, "shadow_drift")
    if len(drift):
        metrics[f"{PREFIX}drift_max"] = float(drift.max())
        ready = [row for row in rows if row.get("shadow_drift") is not None and row["shadow_drift"] >= 0]
        if ready:
            metrics[f"{PREFIX}train_gain_mean"] = float(column(ready, "shadow_train_gain").mean())
            metrics[f"{PREFIX}gain_mean"] = float(column(ready, "shadow_gain").mean())
    return metrics


_SUMMED = (
    "shadow_samples",
    "shadow_failed",
    "shadow_skipped",
    "shadow_train_reward_sum",
    "shadow_reward_sum",
    "shadow_agree_sum",
    "shadow_calls",
    "shadow_tokens",
    "shadow_cost",
)
