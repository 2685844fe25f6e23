"""Judge health over one training step's samples: the numbers a run's tracker shows under ``judge/``
(docs/judges/health.md), for the tracker route (reward_loop/health/sampler.py) and ``writing-rl monitor``.

Pure functions over what verl keeps of each sample: its ``reward_extra_info``, its reward and its response
length. A sample without a key (a row verl filled with ``None``) is left out of that key's metric. The names'
endings are how verl's ``MetricsAggregator`` (v1 trainer) folds a step's mini-batches: ``..._total`` adds up,
``..._min`` / ``..._max`` keep the extreme, the rest are sample-weighted means.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from writing_rl.reward_loop.health.shadow import PREFIX as SHADOW_PREFIX
from writing_rl.reward_loop.health.shadow import shadow_health
from writing_rl.reward_loop.health.values import HealthInputError, column, number
from writing_rl.reward_loop.results import UNREADABLE_KEYS
from writing_rl.settings import ConfigError, get

__all__ = ["HealthInputError", "column", "judge_health", "number", "pearson", "rows_from_columns"]

PREFIX = "judge/"
TERMS_PREFIX = "reward_terms/"
WATCH_PREFIX = "watch/"
# 0/1 per sample -> the share of samples with it: judge/<name>_rate.
RATE_KEYS = {
    "judge_error": "error",
    **{key: key.removeprefix("judge_") for key in UNREADABLE_KEYS},
    "format_error": "format_error",
}
# Counts per sample -> their sum over the step: judge/<name>_total.
TOTAL_KEYS = {
    "judge_calls": "calls",
    "judge_retries": "retries",
    "judge_rate_limited": "rate_limited",
    "judge_tokens": "tokens",
    "judge_hedges": "hedges",
    **{f"judge_{name}": name for name in ("prompt_tokens", "completion_tokens", "tokens_estimated", "cost")},
}
# What the judge spent, counted apart for the samples verl dropped untrained: judge/dropped_<name>_total.
SPEND_KEYS = {
    key: TOTAL_KEYS[key]
    for key in ("judge_calls", "judge_tokens", "judge_prompt_tokens", "judge_completion_tokens", "judge_cost")
}
# Areas of extra-info keys with metrics of their own (judge/: a judge client's; term/, reward/: reward terms';
# watch/: watches'); any other <area>/<name> key is a method's (_method_keys).
RESERVED_AREAS = (PREFIX, "term/", "reward/", WATCH_PREFIX)
COST_TOTAL = f"{PREFIX}cost_total"
DROPPED_COST_TOTAL = f"{PREFIX}dropped_cost_total"
# The run's judge cost so far, trained and dropped samples (each step's cost_total + dropped_cost_total).
COST_CUMULATIVE = f"{PREFIX}cost_cumulative"


def pearson(xs: Iterable[float], ys: Iterable[float]) -> float | None:
    """Pearson's r; ``None`` for fewer than two pairs or a constant side (r is undefined)."""
    x, y = np.asarray(list(xs), dtype=float), np.asarray(list(ys), dtype=float)
    if len(x) < 2 or len(x) != len(y):
        return None
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    if denom == 0.0:
        return None
    return float((dx * dy).sum() / denom)


def judge_health(
    rows: Sequence[Mapping[str, Any]],
    scores: Sequence[float] | None = None,
    response_lengths: Sequence[float] | None = None,
) -> dict[str, float]:
    """The ``judge/...`` metrics of one step: ``rows`` are the samples' extra info, ``scores`` their rewards
    and ``response_lengths`` their lengths (the same order; either may be left out)."""
    if not rows:
        return {}
    metrics: dict[str, float] = {f"{PREFIX}samples_total": float(len(rows))}
    for key, name in RATE_KEYS.items():
        values = column(rows, key)
        if len(values):
            metrics[f"{PREFIX}{name}_rate"] = float((values > 0).mean())
    unreadable = [any((number(k, row.get(k)) or 0) > 0 for k in UNREADABLE_KEYS) for row in rows]
    if any(key in row for row in rows for key in UNREADABLE_KEYS):
        metrics[f"{PREFIX}unreadable_rate"] = float(np.mean(unreadable))
    for key, name in TOTAL_KEYS.items():
        values = column(rows, key)
        if len(values):
            metrics[f"{PREFIX}{name}_total"] = float(values.sum())
            metrics[f"{PREFIX}{name}_per_sample"] = float(values.mean())
    metrics.update(_client_keys(rows))
    metrics.update(_latency(rows))
    limits = column(rows, "judge_concurrency_limit")
    if len(limits):
        metrics[f"{PREFIX}concurrency_limit_min"] = float(limits.min())
        metrics[f"{PREFIX}concurrency_limit_max"] = float(limits.max())
    checked = column(rows, "position_consistent")
    checked = checked[checked >= 0]  # -1: only one order was judged
    if len(checked):
        metrics[f"{PREFIX}position_consistency"] = float(checked.mean())
        metrics[f"{PREFIX}position_checked_total"] = float(len(checked))
    metrics.update(_terms(rows))
    metrics.update(_watches(rows))
    metrics.update(shadow_health(rows))
    metrics.update(_method_keys(rows))
    if scores is not None and response_lengths is not None:
        r = pearson(response_lengths, scores)
        if r is not None:
            metrics[f"{PREFIX}reward_length_corr"] = r
    return metrics


def cumulative_cost(so_far: dict[str, float], metrics: Mapping[str, float]) -> dict[str, float]:
    """``judge/cost_cumulative``: this step's cost (``cost_total`` of its trained samples plus ``dropped_cost_total``)
    added to the earlier steps' in ``so_far`` (updated in place, by prefix); ``shadow/cost_cumulative`` the same for a
    shadow judge's."""
    cumulative = {}
    for prefix in (PREFIX, SHADOW_PREFIX):
        step, dropped = metrics.get(f"{prefix}cost_total"), metrics.get(f"{prefix}dropped_cost_total")
        if step is None and dropped is None:
            continue
        so_far[prefix] = so_far.get(prefix, 0.0) + (step or 0.0) + (dropped or 0.0)
        cumulative[f"{prefix}cost_cumulative"] = so_far[prefix]
    return cumulative


def dropped_spend(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``judge/dropped_samples_total`` and ``judge/dropped_<calls, tokens, prompt_tokens, completion_tokens,
    cost>_total``: what the judge spent on samples verl dropped without training on them (``rows``: their
    extra info). A value that is no number (a sample that never got its reward) is left out."""
    metrics = {f"{PREFIX}dropped_samples_total": float(len(rows))}
    for key, name in SPEND_KEYS.items():
        metrics[f"{PREFIX}dropped_{name}_total"] = _sum(rows, key)
    if any("shadow_calls" in row for row in rows):  # the shadow's spend these samples carried
        for name in ("calls", "tokens", "cost"):
            metrics[f"{SHADOW_PREFIX}dropped_{name}_total"] = _sum(rows, f"shadow_{name}")
    return metrics


def _sum(rows: Sequence[Mapping[str, Any]], key: str) -> float:
    values = [row.get(key) for row in rows]
    return float(sum(v for v in values if isinstance(v, numbers.Real) and not isinstance(v, bool)))


def _client_keys(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Extra-info keys under ``judge/`` (a judge client's own counts: an ensemble's, docs/judges/ensembles.md) are
    metrics of that name: one ending in ``_total`` is summed over the step, any other is the mean over the samples
    that have it (a negative value: not applicable, left out)."""
    metrics = {}
    for key in sorted({k for row in rows for k in row if k.startswith(PREFIX)}):
        values = column(rows, key)
        if key.endswith("_total"):
            metrics[key] = float(values.sum())
        elif len(values[values >= 0]):
            metrics[key] = float(values[values >= 0].mean())
    return metrics


def _method_keys(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """A method's own extra-info keys named ``<area>/<name>`` (``rubric/<criterion>``, ``curriculum/level``) are
    tracker metrics: ``<area>/<name>_mean`` and ``_max`` over the samples where they apply (a negative value:
    not applicable, left out). No method is named here: a new method's keys reach the tracker by their name."""
    metrics = {}
    for key in sorted({k for row in rows for k in row if "/" in k and not k.startswith(RESERVED_AREAS)}):
        values = column(rows, key)
        values = values[values >= 0]
        if len(values):
            metrics[f"{key}_mean"] = float(values.mean())
            metrics[f"{key}_max"] = float(values.max())
    return metrics


def _terms(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``reward_terms/<name>_mean`` per term (its raw value), the method's reward and the term failure rate:
    present when the run has reward terms (reward.reward_kwargs.terms)."""
    metrics = {}
    for key in sorted({k for row in rows for k in row if k.startswith("term/") or k == "reward/method"}):
        values = column(rows, key)
        if len(values):
            name = "method" if key == "reward/method" else key.removeprefix("term/")
            metrics[f"{TERMS_PREFIX}{name}_mean"] = float(values.mean())
    errors = column(rows, "term_error")
    if len(errors):
        metrics[f"{TERMS_PREFIX}error_rate"] = float((errors > 0).mean())
    return metrics


def _watches(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``watch/<name>_mean`` per watch over the samples it measured (a failed measure is NaN) and
    ``watch/error_rate``: present when the run has watches (reward.reward_kwargs.watch)."""
    metrics = {}
    for key in sorted({k for row in rows for k in row if k.startswith(WATCH_PREFIX)}):
        values = column(rows, key)
        values = values[np.isfinite(values)]
        if len(values):
            metrics[f"{key}_mean"] = float(values.mean())
    errors = column(rows, "watch_error")
    if len(errors):
        metrics[f"{WATCH_PREFIX}error_rate"] = float((errors > 0).mean())
    return metrics


def _latency(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """p50 / p95 of the samples' mean judge latency, over samples that made a call."""
    latencies = []
    for row in rows:
        latency = number("judge_latency_s", row.get("judge_latency_s"))
        calls = number("judge_calls", row.get("judge_calls"))
        if latency is not None and (calls is None or calls > 0):
            latencies.append(latency)
    if not latencies:
        return {}
    p50, p95 = np.percentile(latencies, [50, 95])
    return {f"{PREFIX}latency_p50_s": float(p50), f"{PREFIX}latency_p95_s": float(p95)}


def rows_from_columns(columns: Mapping[str, Sequence[Any]], size: int) -> list[dict[str, Any]]:
    """verl's column form of extra info (one array per key, ``non_tensor_batch``) as one dict per sample."""
    rows: list[dict[str, Any]] = [{} for _ in range(size)]
    for key, values in columns.items():
        values = list(values)
        if len(values) != size:
            raise HealthInputError(f"{key}: {len(values)} values for {size} samples")
        for row, value in zip(rows, values):
            row[key] = value.item() if isinstance(value, np.generic) else value
    return rows


SAMPLER_PATH = "pkg://writing_rl.reward_loop.health.sampler"
# What a sampler path holding ours contains: the module, dotted or as a file.
SAMPLER_NAMES = ("health.sampler", "health/sampler")


def reports_health(config: Any) -> bool:
    """Whether the run sends ``judge/...`` to its tracker (verl's v1 trainer with ``JudgeHealthSampler``).

    verl hands a custom replay buffer none of DAPO's settings (v1 ``trainer_base._build_replay_buffer``), so a
    run that also asks for DAPO's group filter is refused here rather than trained without the filter."""
    trainer = get(config, "trainer", {}) or {}
    sampler = get(get(get(trainer, "v1", {}) or {}, "sampler", {}) or {}, "custom_sampler", {}) or {}
    path = str(get(sampler, "path", "") or "")
    if not get(trainer, "use_v1", True) or not any(name in path for name in SAMPLER_NAMES):
        return False
    filter_groups = get(get(config, "algorithm", {}) or {}, "filter_groups", {}) or {}
    refill = get(get(get(trainer, "v1", {}) or {}, "sampler", {}) or {}, "sync_refill_failed_groups", False)
    if get(filter_groups, "enable", False) or refill:
        raise ConfigError(
            "trainer.v1.sampler.custom_sampler is writing-rl's JudgeHealthSampler, and verl gives a custom sampler "
            "none of algorithm.filter_groups (DAPO) or trainer.v1.sampler.sync_refill_failed_groups: they would be "
            "ignored. To use them, set trainer.v1.sampler.custom_sampler.path=null (judge health is then only in "
            "`writing-rl monitor` and the batch log lines)"
        )
    return True
