"""One log line per batch of scored samples: outcomes, error counts, judge latency percentiles, and what
the worker's judge client spent meanwhile (tokens, cost, per endpoint when it has several).

A batch ends when its worker goes idle; under continuous streaming (verl's async trainers), at the
latest every ``MAX_BATCH_S`` seconds."""

from __future__ import annotations

import time

import numpy as np

from writing_rl.reward_loop.results import FAILURE_KEYS

OUTCOME_KEYS = ("win", "tie", "loss")
MAX_BATCH_S = 60.0


class BatchSummary:
    def __init__(self, judge):
        self.judge = judge  # read for its retry and 429 counters and its concurrency limit
        self._retries_seen = 0
        self._rate_limited_seen = 0
        self._spent_seen: dict[str, tuple[int, int, float]] = {}  # per endpoint: calls, tokens, cost
        self._reset()

    def _reset(self) -> None:
        self.started = time.monotonic()
        self.count = 0
        self.score_sum = 0.0
        self.sums: dict[str, float] = {}
        self.latencies: list[float] = []

    def add(self, score: float, info: dict, latencies: list[float]) -> None:
        self.count += 1
        self.score_sum += score
        for key in OUTCOME_KEYS + FAILURE_KEYS:
            if key in info:
                self.sums[key] = self.sums.get(key, 0.0) + info[key]
        self.latencies.extend(latencies)

    def overdue(self) -> bool:
        return self.count > 0 and time.monotonic() - self.started >= MAX_BATCH_S

    def flush(self) -> str:
        """The summary line of everything added since the last flush; starts a new batch."""
        n = self.count
        parts = [f"{n} samples", f"reward {self.score_sum / n:.3f}"]
        outcomes = [f"{k} {self.sums[k] / n:.2f}" for k in OUTCOME_KEYS if k in self.sums]
        if outcomes:
            parts.append(" ".join(outcomes))
        parts.append(" ".join(f"{k} {int(self.sums.get(k, 0))}" for k in FAILURE_KEYS))
        stats = self.judge.stats
        retries, self._retries_seen = stats.retries - self._retries_seen, stats.retries
        rate_limited = getattr(stats, "rate_limited", 0)
        refused, self._rate_limited_seen = rate_limited - self._rate_limited_seen, rate_limited
        calls = f"judge {len(self.latencies)} calls"
        if self.latencies:
            p50, p95 = np.percentile(self.latencies, [50, 95])
            calls += f" p50 {p50:.2f}s p95 {p95:.2f}s"
        calls += f" retries {retries} 429s {refused}"
        if getattr(stats, "concurrency_limit", 0):
            calls += f" limit {stats.concurrency_limit}"
        parts.append(calls)
        spent = self._spent_since(getattr(stats, "spent_by_endpoint", {}))
        if spent:
            parts.append(spent)
        self._reset()
        return " | ".join(parts)

    def _spent_since(self, by_endpoint: dict) -> str:
        """``tokens 5200 cost 0.0130`` since the last flush, and each endpoint's share when there are several."""
        now = {url: (s.calls, s.tokens, s.cost) for url, s in by_endpoint.items()}
        delta = {
            url: tuple(a - b for a, b in zip(counts, self._spent_seen.get(url, (0, 0, 0.0))))
            for url, counts in now.items()
        }
        self._spent_seen = now
        if not delta:
            return ""
        tokens, cost = sum(d[1] for d in delta.values()), sum(d[2] for d in delta.values())
        line = f"tokens {tokens} cost {cost:.4f}"
        if len(delta) > 1:
            line += " (" + ", ".join(f"{url}: {c} calls {t} tokens {m:.4f}" for url, (c, t, m) in delta.items()) + ")"
        return line
