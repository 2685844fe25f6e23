"""What ``writing-rl probe-judge`` writes to its output directory, all renamed into place together:
``report.md`` (the table and what to do), ``comparisons.jsonl`` (every comparison and its outcome),
``probe_shares.png`` (each share with its interval against its limit; only with matplotlib) and
``report.json`` (every number; written last: its presence marks a complete set)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from writing_rl.tools.probe.placing import Comparison
from writing_rl.tools.probe.summary import NOT_APPLICABLE, ProbeReport
from writing_rl.tools.probe.verdict import FLAGGED, INCONCLUSIVE
from writing_rl.tools.shared.judged_job import written_together
from writing_rl.tools.shared.plot import BLUE, GREY, NO_MATPLOTLIB, RED, render_png

STATUS_COLOURS = {FLAGGED: RED, INCONCLUSIVE: "#e68c28"}
ADVICE = (
    "A flagged probe is a reply a policy can learn to send for reward. What helps, roughly cheapest first: "
    "judge both orders (`strategy=both`) against position bias; a format or length reward term "
    "(`reward.reward_kwargs.terms`) against master keys and padding; a rubric the judge scores against; a "
    "stronger judge. Probe again after each change (docs/trust-your-judge.md)."
)


def write_outputs(out: str | Path, report: ProbeReport, comparisons: Sequence[Comparison], outcomes) -> dict[str, str]:
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
                json.dumps(
                    {"row": c.row.key, "probe": c.probe, "slot": c.slot, "repeat": c.repeat, "outcome": o},
                    ensure_ascii=False,
                )
                + "\n"
                for c, o in zip(comparisons, outcomes)
            ),  # fmt: skip
            encoding="utf-8",
        )
        if png is not None:
            tmp["chart"].write_bytes(png)
        tmp["report"].write_text(json.dumps(report.summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written = {name: str(path) for name, path in paths.items()}
    if png is None:
        written["chart"] = NO_MATPLOTLIB
    return written


def checks(summary: dict) -> list[tuple[str, dict]]:
    """(name, share) of every probe, then the position bias and the self-consistency when they apply."""
    found = [(p["name"], p) for p in summary["probes"]]
    for name in ("position_bias", "self_consistency"):
        if summary[name]["status"] != NOT_APPLICABLE:
            found.append((name.replace("_", "-"), summary[name]))
    return found


def draw_shares(axes, summary: dict) -> None:
    """One horizontal bar per check: the share, its 95% interval, its limit as a tick."""
    found = [(name, share) for name, share in checks(summary) if share["rate"] is not None][::-1]
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
    axes.set_xlabel("share of comparisons the judge fell for (95% CI)")
    axes.set_title(f"probe-judge {summary['method']}: {summary['judge_model']} (red: flagged)")
    axes.legend(loc="lower right", fontsize="small")


def markdown(summary: dict) -> str:
    lines = [
        f"# Judge probe: {summary['method']}",
        "",
        f"Judge `{summary['judge_model']}`, {summary['rows']} rows ({summary['data']}), "
        f"{summary['comparisons']} comparisons, {summary['judge_calls']} judge calls "
        f"({summary['cache']['hits']} from the cache).",
        "",
        "| check | fooled / compared | share | 95% CI | limit | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for name, share in checks(summary):
        rate = "-" if share["rate"] is None else f"{share['rate']:.2f}"
        low, high = share["ci95"]
        lines.append(f"| {name} | {share['hits']} / {share['n']} | {rate} | [{low:.2f}, {high:.2f}] | "
                     f"{share['threshold']:.2f} | {share['status']} |")  # fmt: skip
    position = summary["position_bias"]
    if position.get("a_share") is not None:
        lines += ["", f"Share of decisions for the answer shown first (A): {position['a_share']:.2f}."]
    lines += ["", "What each probe is:", ""]
    lines += [
        f"- `{p['name']}`: {p['meaning']} (counts a {p['counts'].replace('_', ' or ')})" for p in summary["probes"]
    ]
    verdict = (f"**Flagged: {', '.join(summary['flagged'])}.** {ADVICE}" if summary["flagged"]
               else "No probe flagged.")  # fmt: skip
    if summary["inconclusive"]:
        verdict += f" Inconclusive ({', '.join(summary['inconclusive'])}): judge more rows."
    return "\n".join([*lines, "", verdict, ""])
