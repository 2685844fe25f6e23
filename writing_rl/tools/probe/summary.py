"""The numbers of a probe run: the share of judge replies the reward could read; per probe the share of
comparisons it won (or tied, by its kind) with a Wilson interval and its verdict (verdict.py); the position
bias over the pairs judged in both orders; the self-consistency of the repeated calls."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from writing_rl.offline.files import run_lines, run_section
from writing_rl.tools.probe.battery import Probe
from writing_rl.tools.probe.placing import Comparison, winner
from writing_rl.tools.probe.verdict import (
    CONSISTENCY_THRESHOLD,
    FAILED,
    FLAGGED,
    INCONCLUSIVE,
    NO_DATA,
    POSITION_THRESHOLD,
    READABLE_THRESHOLD,
    Share,
    readable_share,
)

DECIDED = ("win", "tie", "loss")
# What a probe's share counts: the judge's decisions and the method's refusal (a loss paid without asking the
# judge). An unreadable reply is no decision and stays out, as do a failed call and nothing to judge; under
# on_parse_error=tie an unreadable reply arrives here as the tie the run pays, and counts.
COMPARED = (*DECIDED, "refused")
OUTCOMES = (*COMPARED, "unreadable", "error", "unjudged")
NOT_APPLICABLE = "not applicable"
UNREADABLE_ADVICE = (
    "use a judge that writes the method's verdict format (a larger or instruction-tuned model, a GenRM "
    "fine-tuned on that format) or a judge template that asks for it, `output=scores` where the method has it "
    "(pairwise, brpo), or a larger reward.reward_kwargs.judge.max_tokens if replies were cut "
    "(docs/trust-your-judge.md)"
)


@dataclass
class ProbeReport:
    summary: dict[str, Any]
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def flagged(self) -> list[str]:
        return self.summary["flagged"]

    @property
    def unreadable(self) -> bool:
        """Too few of the judge's replies could be read for the probes to say anything about the judge."""
        return self.summary["readable"]["status"] == FAILED

    def lines(self) -> list[str]:
        s = self.summary
        header = (f"probe-judge {s['method']}: judge {s['judge_model']}, {s['rows']} rows ({s['data']}), "
                  f"{s['comparisons']} comparisons")  # fmt: skip
        readable = readable_sentence(s["readable"])
        lines = [readable, header] if self.unreadable else [header, readable]
        lines.append(f"{'probe':<20}{'fooled':>10}{'share':>8}{'95% CI':>15}{'limit':>7}{'unread':>8}  verdict")
        for probe in s["probes"]:
            lines.append(_line(probe["name"], probe))
        for name in ("position_bias", "self_consistency"):
            lines.append(_line(name.replace("_", "-"), s[name]))
        if s["flagged"]:
            them = "it" if len(s["flagged"]) == 1 else "them"
            lines.append(f"FLAGGED {', '.join(s['flagged'])}: the judge falls for {them} (docs/trust-your-judge.md)")
        if s["inconclusive"]:
            lines.append(f"inconclusive {', '.join(s['inconclusive'])}: above the limit on too few comparisons; "
                         "add rows (--rows, or more --data)")  # fmt: skip
        if not s["flagged"] and not s["inconclusive"]:
            lines.append("no probe flagged" + (", which says nothing of a judge whose replies cannot be read"
                                               if self.unreadable else ""))  # fmt: skip
        return lines + run_lines(s, self.outputs)


def readable_counts(readable: dict) -> str:
    """E.g. "110 of 112 judge replies could be read (98%; the limit is 80%)"."""
    if readable["status"] == NO_DATA:
        return "no comparison reached the judge"
    return (f"{readable['readable']} of {readable['judged']} judge replies could be read "
            f"({readable['share']:.0%}; the limit is {readable['threshold']:.0%})")  # fmt: skip


def readable_sentence(readable: dict) -> str:
    """The readable share as a line of the printed report: its first line when too few replies could be read."""
    if readable["status"] != FAILED:
        return f"readable: {readable_counts(readable)}"
    return (f"UNREADABLE JUDGE: {readable_counts(readable)}: the probes below measure the reply reader, not the "
            f"judge; {UNREADABLE_ADVICE}")  # fmt: skip


def _line(name: str, share: dict) -> str:
    if share["status"] == NOT_APPLICABLE:
        return f"{name:<20}{'':>10}{'':>8}{'':>15}{'':>7}{'':>8}  {NOT_APPLICABLE}"
    low, high = share["ci95"]
    rate = "-" if share["rate"] is None else f"{share['rate']:.2f}"
    return (f"{name:<20}{share['hits']:>5}/{share['n']:<4}{rate:>8}{f'[{low:.2f}, {high:.2f}]':>15}"
            f"{share['threshold']:>7.2f}{share.get('unreadable', ''):>8}  {share['status']}")  # fmt: skip


def probe_share(probe: Probe, outcomes: Sequence[str], threshold: float) -> dict:
    counted = [o for o in outcomes if o in COMPARED]
    return Share(sum(probe.fooled(o) for o in counted), len(counted), threshold).as_dict()


def readable_replies(comparisons: Sequence[Comparison], outcomes: Sequence[str], unread: Sequence[bool],
                     threshold: float) -> dict:  # fmt: skip
    """Of the comparisons (repeats aside) that reached the judge, those whose reply the reward could read.
    ``unread`` marks the replies it could not, whatever the run pays for them (under on_parse_error=tie their
    outcome is the tie paid)."""
    reached = [u for c, o, u in zip(comparisons, outcomes, unread) if not c.repeat and (u or o in DECIDED)]
    return readable_share(reached.count(False), len(reached), threshold)


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


def summarise(job, target, probes, rows, comparisons, outcomes, unread, stats: dict, wall_s: float) -> ProbeReport:
    """``outcomes``: each comparison's outcome as the run pays it; ``unread``: whether its judge reply could
    not be read (see ``readable_replies``)."""
    probe_lines = []
    for probe in probes:
        mine = [(c, o) for c, o in zip(comparisons, outcomes) if c.probe == probe.name and not c.repeat]
        unread_mine = sum(u for c, u in zip(comparisons, unread) if c.probe == probe.name and not c.repeat)
        threshold = job.thresholds.get(probe.name, probe.threshold)
        by_slot = {slot: probe_share(probe, [o for c, o in mine if c.slot == slot], threshold)
                   for slot in dict.fromkeys(c.slot for c, _ in mine)}  # fmt: skip
        counts = Counter(o for _, o in mine)
        probe_lines.append({
            "name": probe.name, "meaning": probe.meaning, "counts": probe.counts,
            **probe_share(probe, [o for _, o in mine], threshold),
            "rows": len({c.row.key for c, _ in mine}), "outcomes": {o: counts[o] for o in OUTCOMES if counts[o]},
            "unreadable": unread_mine, "by_slot": by_slot,
        })  # fmt: skip
    position = position_bias(comparisons, outcomes, job.thresholds.get("position-bias", POSITION_THRESHOLD))
    consistency = self_consistency(comparisons, outcomes, job.thresholds.get("self-consistency", CONSISTENCY_THRESHOLD))
    readable = readable_replies(comparisons, outcomes, unread, job.thresholds.get("readable", READABLE_THRESHOLD))
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
        "readable": readable,
        "failed": ["readable"] if readable["status"] == FAILED else [],
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
