"""The numbers of a probe run: per probe the share of comparisons it won (or tied, by its kind) with a
Wilson interval and its verdict (verdict.py); the position bias over the pairs judged in both orders; the
self-consistency of the repeated calls."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from writing_rl.tools.probe.battery import Probe
from writing_rl.tools.probe.placing import Comparison, winner
from writing_rl.tools.probe.verdict import (
    CONSISTENCY_THRESHOLD,
    FLAGGED,
    INCONCLUSIVE,
    POSITION_THRESHOLD,
    Share,
)
from writing_rl.tools.shared.judged_job import run_lines, run_section

DECIDED = ("win", "tie", "loss")
# Outcomes that say nothing about the judge and stay out of every share.
LEFT_OUT = ("error", "unjudged")
OUTCOMES = (*DECIDED, "refused", "unreadable", *LEFT_OUT)
NOT_APPLICABLE = "not applicable"


@dataclass
class ProbeReport:
    summary: dict[str, Any]
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def flagged(self) -> list[str]:
        return self.summary["flagged"]

    def lines(self) -> list[str]:
        s = self.summary
        lines = [
            f"probe-judge {s['method']}: judge {s['judge_model']}, {s['rows']} rows ({s['data']}), "
            f"{s['comparisons']} comparisons",
            f"{'probe':<20}{'fooled':>10}{'share':>8}{'95% CI':>15}{'limit':>7}  verdict",
        ]
        for probe in s["probes"]:
            lines.append(_line(probe["name"], probe))
        for name in ("position_bias", "self_consistency"):
            lines.append(_line(name.replace("_", "-"), s[name]))
        if s["flagged"]:
            lines.append(f"FLAGGED {', '.join(s['flagged'])}: the judge falls for them (docs/trust-your-judge.md)")
        if s["inconclusive"]:
            lines.append(f"inconclusive {', '.join(s['inconclusive'])}: above the limit on too few comparisons; "
                         "add rows (--rows, or more --data)")  # fmt: skip
        if not s["flagged"] and not s["inconclusive"]:
            lines.append("no probe flagged")
        return lines + run_lines(s, self.outputs)


def _line(name: str, share: dict) -> str:
    if share["status"] == NOT_APPLICABLE:
        return f"{name:<20}{'':>10}{'':>8}{'':>15}{'':>7}  {NOT_APPLICABLE}"
    low, high = share["ci95"]
    rate = "-" if share["rate"] is None else f"{share['rate']:.2f}"
    return (f"{name:<20}{share['hits']:>5}/{share['n']:<4}{rate:>8}{f'[{low:.2f}, {high:.2f}]':>15}"
            f"{share['threshold']:>7.2f}  {share['status']}")  # fmt: skip


def probe_share(probe: Probe, outcomes: Sequence[str], threshold: float) -> dict:
    counted = [o for o in outcomes if o not in LEFT_OUT]
    return Share(sum(probe.fooled(o) for o in counted), len(counted), threshold).as_dict()


def position_bias(comparisons: Sequence[Comparison], outcomes: Sequence[str], threshold: float) -> dict:
    """Pairs (row, probe) judged in both orders with a decision in each: the share whose preferred slot is
    the same in both (the verdict followed the position, not the answers), and the share of decisions for A."""
    preferred: dict[tuple[str, str], dict[str, str]] = {}
    for c, outcome in zip(comparisons, outcomes):
        if not c.repeat and outcome in DECIDED and c.slot in ("A", "B"):
            preferred.setdefault((c.row.key, c.probe), {})[c.slot] = winner(outcome, c.slot)
    if not any(c.slot in ("A", "B") for c in comparisons):
        return {"status": NOT_APPLICABLE}
    pairs = [found for found in preferred.values() if len(found) == 2]
    follows = sum(found["A"] == found["B"] != "tie" for found in pairs)
    picks = [slot for found in preferred.values() for slot in found.values() if slot != "tie"]
    a_share = round(picks.count("A") / len(picks), 4) if picks else None
    return {**Share(follows, len(pairs), threshold).as_dict(), "a_share": a_share}


def self_consistency(comparisons: Sequence[Comparison], outcomes: Sequence[str], threshold: float) -> dict:
    """Comparisons judged twice (the repeat bypassing the cache): the share whose outcomes differ."""
    first = {(c.row.key, c.probe, c.slot): o for c, o in zip(comparisons, outcomes) if not c.repeat}
    judged = (*DECIDED, "unreadable")
    pairs = [(first.get((c.row.key, c.probe, c.slot)), o) for c, o in zip(comparisons, outcomes) if c.repeat]
    pairs = [(a, b) for a, b in pairs if a in judged and b in judged]
    if not any(c.repeat for c in comparisons):
        return {"status": NOT_APPLICABLE}
    return Share(sum(a != b for a, b in pairs), len(pairs), threshold).as_dict()


def summarise(job, target, probes, rows, comparisons, outcomes, stats: dict, wall_s: float) -> ProbeReport:
    probe_lines = []
    for probe in probes:
        mine = [(c, o) for c, o in zip(comparisons, outcomes) if c.probe == probe.name and not c.repeat]
        threshold = job.thresholds.get(probe.name, probe.threshold)
        by_slot = {slot: probe_share(probe, [o for c, o in mine if c.slot == slot], threshold)
                   for slot in dict.fromkeys(c.slot for c, _ in mine)}  # fmt: skip
        counts = Counter(o for _, o in mine)
        probe_lines.append({
            "name": probe.name, "meaning": probe.meaning, "counts": probe.counts,
            **probe_share(probe, [o for _, o in mine], threshold),
            "rows": len({c.row.key for c, _ in mine}), "outcomes": {o: counts[o] for o in OUTCOMES if counts[o]},
            "by_slot": by_slot,
        })  # fmt: skip
    position = position_bias(comparisons, outcomes, job.thresholds.get("position-bias", POSITION_THRESHOLD))
    consistency = self_consistency(comparisons, outcomes, job.thresholds.get("self-consistency", CONSISTENCY_THRESHOLD))
    checks = [*((p["name"], p) for p in probe_lines), ("position-bias", position), ("self-consistency", consistency)]
    cache, repeat = stats["cache"], stats["repeat_cache"]
    calls = sum(s.hits + s.misses + s.shared for s in (cache, repeat))
    summary = {
        "method": target.method,
        "judge_model": target.judge.model,
        "reward_options": dict(target.options),
        "data": "shipped rows" if job.data is None else str(job.data),
        "rows": len(rows),
        "row_keys": [row.key for row in rows],
        "comparisons": len(comparisons),
        "probes": probe_lines,
        "position_bias": position,
        "self_consistency": consistency,
        "flagged": [name for name, share in checks if share["status"] == FLAGGED],
        "inconclusive": [name for name, share in checks if share["status"] == INCONCLUSIVE],
        "judge_calls": calls,
        **run_section(calls, cache, wall_s),
        "repeat_cache": asdict(repeat),
    }
    return ProbeReport(summary)
