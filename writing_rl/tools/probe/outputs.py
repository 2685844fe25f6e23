"""What ``writing-rl probe-judge`` writes to its output directory, all renamed into place together:
``report.md`` (the readable share, the table and what to do), ``comparisons.jsonl`` (every comparison and its
outcome), ``probe_shares.png`` (each share with its interval against its limit; only with matplotlib) and
``report.json`` (every number; written last: its presence marks a complete set)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from writing_rl.offline.files import written_together
from writing_rl.plot import BLUE, GREY, NO_MATPLOTLIB, RED, render_png
from writing_rl.tools.probe.battery import COUNTS_WHEN
from writing_rl.tools.probe.placing import Comparison
from writing_rl.tools.probe.summary import NOT_APPLICABLE, UNREADABLE_ADVICE, ProbeReport, readable_counts
from writing_rl.tools.probe.verdict import FAILED, FLAGGED, INCONCLUSIVE

STATUS_COLOURS = {FLAGGED: RED, FAILED: RED, INCONCLUSIVE: "#e68c28"}
ADVICE = (
    "A flagged probe is a reply a policy can learn to send for reward. What helps, roughly cheapest first: "
    "judge both orders (`strategy=both`) against position bias; a format or length reward term "
    "(`reward.reward_kwargs.terms`) against master keys and padding; a rubric the judge scores against; a "
    "stronger judge. Probe again after each change (docs/trust-your-judge.md)."
)


def write_outputs(out: str | Path, report: ProbeReport, comparisons: Sequence[Comparison], outcomes,
                  unread: Sequence[bool]) -> dict[str, str]:  # fmt: skip
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    png = render_png(lambda axes: draw_shares(axes, report.summary), figsize=(8, 6))
    names = {"markdown": "report.md", "comparisons": "comparisons.jsonl"}
    if png is not None:
        names["chart"] = "probe_shares.png"
    names["report"] = "report.json"
    paths = {name: out / file for name, file in names.items()}
    with written_together(paths) as tmp:
        tmp["markdown"].write_text(markdown(report.summary), encoding="utf-8")
        tmp["comparisons"].write_text(
            "".join(
                json.dumps(comparison_record(c, o, u), ensure_ascii=False) + "\n"
                for c, o, u in zip(comparisons, outcomes, unread)
            ),
            encoding="utf-8",
        )
        if png is not None:
            tmp["chart"].write_bytes(png)
        tmp["report"].write_text(json.dumps(report.summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written = {name: str(path) for name, path in paths.items()}
    if png is None:
        written["chart"] = NO_MATPLOTLIB
    return written


def comparison_record(c: Comparison, outcome: str, unread: bool) -> dict:
    """A line of comparisons.jsonl; ``unreadable`` marks a judge reply the reward could not read, whatever the
    outcome paid for it (a tie under on_parse_error=tie)."""
    record = {"row": c.row.key, "probe": c.probe, "slot": c.slot, "repeat": c.repeat, "outcome": outcome}
    return {**record, "unreadable": True} if unread else record


def checks(summary: dict) -> list[tuple[str, dict]]:
    """(name, share) of every probe, then the position bias and the self-consistency when they apply."""
    found = [(p["name"], p) for p in summary["probes"]]
    for name in ("position_bias", "self_consistency"):
        if summary[name]["status"] != NOT_APPLICABLE:
            found.append((name.replace("_", "-"), summary[name]))
    return found


def draw_shares(axes, summary: dict) -> None:
    """One horizontal bar per check: the share, its 95% interval, its limit as a tick; the share of judge
    replies read at the top."""
    found = [(name, share) for name, share in checks(summary) if share["rate"] is not None]
    readable = summary["readable"]
    if readable["share"] is not None:
        found.insert(0, ("readable replies", {**readable, "rate": readable["share"]}))
    found = found[::-1]
    positions = range(len(found))
    rates = [share["rate"] for _, share in found]
    errors = [
        [r - s["ci95"][0] for r, (_, s) in zip(rates, found)],
        [s["ci95"][1] - r for r, (_, s) in zip(rates, found)],
    ]
    colours = [STATUS_COLOURS.get(share["status"], BLUE) for _, share in found]
    axes.barh(positions, rates, xerr=errors, color=colours, ecolor=GREY, capsize=3)
    axes.scatter([s["threshold"] for _, s in found], positions, marker="|", s=300, color="black", label="limit")
    axes.set_yticks(list(positions), [name for name, _ in found])
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of comparisons the judge fell for; readable: of replies read (95% CI)")
    axes.set_title(f"probe-judge {summary['method']}: {summary['judge_model']} (red: flagged or failed)")
    axes.legend(loc="lower right", fontsize="small")


def markdown(summary: dict) -> str:
    unreadable = summary["readable"]["status"] == FAILED
    lines = [f"# Judge probe: {summary['method']}", ""]
    if unreadable:
        lines += [f"**Unreadable judge: {readable_counts(summary['readable'])}.** The probes below measure the reply "
                  f"reader, not the judge; {UNREADABLE_ADVICE}.", ""]  # fmt: skip
    read = "" if unreadable else f"; {readable_counts(summary['readable'])}"
    lines += [
        f"Judge `{summary['judge_model']}`, {summary['rows']} rows ({summary['data']}), "
        f"{summary['comparisons']} comparisons, {summary['judge_calls']} judge calls "
        f"({summary['cache']['hits']} from the cache){read}.",
        "",
        "| check | fooled / compared | share | 95% CI | limit | unreadable | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, share in checks(summary):
        rate = "-" if share["rate"] is None else f"{share['rate']:.2f}"
        low, high = share["ci95"]
        lines.append(f"| {name} | {share['hits']} / {share['n']} | {rate} | [{low:.2f}, {high:.2f}] | "
                     f"{share['threshold']:.2f} | {share.get('unreadable', '')} | {share['status']} |")  # fmt: skip
    position = summary["position_bias"]
    if position.get("a_share") is not None:
        lines += ["", f"Share of decisions for the answer shown first (A): {position['a_share']:.2f}."]
    lines += ["", "What each probe is:", ""]
    lines += [f"- `{p['name']}`: {p['meaning']}; counts {COUNTS_WHEN[p['counts']]}." for p in summary["probes"]]
    verdict = (f"**Flagged: {', '.join(summary['flagged'])}.** {ADVICE}" if summary["flagged"]
               else "No probe flagged.")  # fmt: skip
    if unreadable:
        verdict += " With so few replies read, that says little about the judge (see the top)."
    if summary["inconclusive"]:
        verdict += f" Inconclusive ({', '.join(summary['inconclusive'])}): judge more rows."
    return "\n".join([*lines, "", verdict, ""])
