"""``writing-rl eval rewardbench``: a pairwise or group-ranking GenRM on RewardBench (v1) or RewardBench 2.

``rewardbench_sets`` reads the benchmark's files and holds its weights. How each GenRM's prompts are scored, and the
report: docs/evaluation.md, RewardBench.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.genrm_pairwise import ORDERS, PreferenceCall, PreferencePair
from writing_rl.evaluation.genrm_ranking import RankingOptions
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.rewardbench_sets import (
    V1_SECTIONS,
    RewardBenchItem,
    read_items,
    v1_scores,
    v2_scores,
)
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols import Unreadable, gqm_prompt
from writing_rl.protocols.gqm import labels_for
from writing_rl.protocols.gqm_task import read_answer
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, Messages, load_template

GENRMS = ("pairwise", "ranking")
SHARE = {"chosen": 1.0, "tie": 0.5, None: 0.5, "rejected": 0.0}  # None: a reply with no verdict


@dataclass(frozen=True)
class PairwiseCall:
    """One pairwise call: the item's chosen answer against its ``rejected``-th rejected one, in ``call.order``."""

    item: RewardBenchItem
    rejected: int
    call: PreferenceCall


@dataclass(frozen=True)
class GroupCall:
    """One ranking call: every answer of the item, the chosen one at ``chosen_at``."""

    item: RewardBenchItem
    chosen_at: int
    messages: Messages

    @property
    def chosen_label(self) -> str:
        return labels_for(len(self.item.rejected) + 1)[self.chosen_at]


def benchmark_name(version: int) -> str:
    return "RewardBench 2" if version == 2 else "RewardBench v1"


def run_rewardbench(
    data: str,
    out_dir: str,
    settings: JudgeSettings,
    version: int,
    genrm: str = "pairwise",
    exclude: Sequence[str] = (),
    options: RankingOptions = RankingOptions(prompt_type="ranking_score"),
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge, write every output, and return the lines to print. ``exclude``: subsets left out besides
    v2's Ties. ``options.template`` is a pairwise template file (pairwise) or a GQM template file (ranking);
    ``options.system_prompt`` (None: the built-in pairwise system message, none for ranking) serves both."""
    if genrm not in GENRMS:
        raise InputError(f"--genrm must be one of {', '.join(GENRMS)}, got {genrm!r}")
    items, excluded = read_items(data, version, tuple(exclude))
    if genrm == "pairwise":
        if options.template:
            load_template(options.template)  # a template without both response placeholders fails before any call
        system = options.system_prompt or PAIRWISE_SYSTEM
        calls = [
            PairwiseCall(
                item, j, PreferenceCall(PreferencePair((item.id, j), item.prompt, item.chosen, rejected, system), order)
            )
            for item in items
            for j, rejected in enumerate(item.rejected)
            for order in ORDERS
        ]
        judgments, judge_section = judge_jobs(
            settings, calls, lambda c: c.call.messages(options.template), verdict_judgment, out_dir, cache, progress
        )
        records = [_comparison_record(c, j) for c, j in zip(calls, judgments)]
    else:
        calls = group_calls(items, options)
        judgments, judge_section = judge_jobs(
            settings, calls, lambda c: c.messages, lambda text: Judgment(value=text), out_dir, cache, progress
        )
        records = [_group_record(c, j, options) for c, j in zip(calls, judgments)]
    scored = item_scores(items, records)
    report = summarise(version, genrm, items, scored, records, excluded)
    report["judge"] = judge_section
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    out.write_jsonl(Path(out_dir) / "items.jsonl", scored)
    out.write_reports(out_dir, report, markdown(report))
    subsets = {name: s for name, s in report["subsets"].items() if s["count"]}
    plot_line = out.plot(
        Path(out_dir) / "subsets.png",
        lambda axes: out.bar_plot_with_intervals(
            axes, list(subsets), list(subsets.values()), f"{benchmark_name(version)}: accuracy", "accuracy"
        ),
    )  # fmt: skip
    return [
        f"{benchmark_name(version)} overall {out.rate(report['overall'])} ({genrm} GenRM) over "
        f"{report['items_scored']} of {report['items']} prompts in {len(report['subsets'])} subsets",
        *(f"note: {note}" for note in report["notes"]),
        f"judge calls {len(records)}: {out.failures_line(report['failures'])}; prompts not scored "
        f"{report['items'] - report['items_scored']}",
        f"wrote {out_dir}/judgments.jsonl, items.jsonl, report.json, report.md",
        plot_line,
    ]


def group_calls(items: Sequence[RewardBenchItem], options: RankingOptions) -> list[GroupCall]:
    template = Path(options.template).read_text(encoding="utf-8") if options.template else None
    calls = []
    for item in items:
        rejected = list(item.rejected)
        at = int(hashlib.sha256(str(item.id).encode()).hexdigest(), 16) % (len(rejected) + 1)
        try:
            messages = gqm_prompt.build_messages(
                [*rejected[:at], item.chosen, *rejected[at:]], writing_prompt=item.prompt,
                system=options.system_prompt, prompt_type=options.prompt_type or "ranking_score",
                cot=options.variant != "no_cot", template=template,
            )  # fmt: skip
        except ValueError as err:
            raise InputError(f"id {item.id!r}: {err}") from None
        calls.append(GroupCall(item, at, messages))
    return calls


def _comparison_record(comparison: PairwiseCall, judgment: Judgment) -> dict:
    picked = comparison.call.picked(judgment)
    return {
        "id": comparison.item.id,
        "subset": comparison.item.subset,
        "rejected": comparison.rejected,
        "order": comparison.call.order,
        "verdict": judgment.verdict,
        "picked": picked,
        "error": judgment.error,
        "unreadable": judgment.parse_failure,
    }


def _group_record(call: GroupCall, judgment: Judgment, options: RankingOptions) -> dict:
    record = {
        "id": call.item.id,
        "subset": call.item.subset,
        "chosen_label": call.chosen_label,
        "first": None,  # the labels ranked first
        "error": judgment.error,
        "unreadable": False,
    }
    if judgment.error is not None:
        return record
    labels = labels_for(len(call.item.rejected) + 1)
    answer = (
        Unreadable("cut at the token limit or refused")
        if judgment.value is None
        else read_answer(judgment.value, labels, options.prompt_type or "ranking_score", variant=options.variant,
                         require_headers=options.require_headers)
    )  # fmt: skip
    if isinstance(answer, Unreadable):
        record["unreadable"] = True
    else:
        record["first"] = list(answer.ranking[0])
    return record


def item_scores(items: Sequence[RewardBenchItem], records: Sequence[dict]) -> list[dict]:
    """One line per prompt: its score (None: a call of it failed), its chance level and, for pairwise
    verdicts, whether the chosen answer won every comparison in both orders."""
    mine: dict[Any, list[dict]] = {}
    for record in records:
        mine.setdefault(record["id"], []).append(record)
    lines = []
    for item in items:
        calls, k = mine[item.id], len(item.rejected)
        pairwise = "picked" in calls[0]
        chance = 0.5**k if pairwise else 1 / (k + 1)
        line = {"id": item.id, "subset": item.subset, "score": None, "chance": chance, "strict": None}
        if all(r["error"] is None for r in calls):
            if pairwise:
                shares = [sum(SHARE[r["picked"]] for r in calls if r["rejected"] == j) / len(ORDERS) for j in range(k)]
                line["score"] = math.prod(shares)
                line["strict"] = all(r["picked"] == "chosen" for r in calls)
            elif calls[0]["unreadable"]:
                line["score"] = chance
            else:
                first = calls[0]["first"]
                line["score"] = 1 / len(first) if calls[0]["chosen_label"] in first else 0.0
        lines.append(line)
    return lines


def summarise(version, genrm, items, scored, records, excluded) -> dict:
    subsets: dict[str, dict] = {}
    for subset in dict.fromkeys(i.subset for i in items):
        lines = [line for line in scored if line["subset"] == subset]
        read = [line for line in lines if line["score"] is not None]
        entry = {**stats.mean_with_ci([line["score"] for line in read]), "rows": len(lines)}
        entry["count"] = entry.pop("n")
        entry["chance"] = sum(line["chance"] for line in lines) / len(lines)
        if genrm == "pairwise":
            entry["strict"] = out.share(sum(line["strict"] for line in read), len(read))
        subsets[subset] = entry
    accuracy = {subset: s["mean"] for subset, s in subsets.items() if s["count"]}
    unscored = [subset for subset, s in subsets.items() if not s["count"]]
    report: dict[str, Any] = {"kind": "rewardbench", "version": version, "genrm": genrm}
    if version == 1:
        sections, report["overall"], report["notes"] = v1_scores(accuracy, unscored)
        report["sections"] = sections
    else:
        report["overall"], report["notes"] = v2_scores(accuracy, unscored)
    report["notes"] += [f"excluded: {subset} ({e['rows']} rows; {e['reason']})" for subset, e in excluded.items()]
    report.update(
        items=len(items),
        items_scored=sum(line["score"] is not None for line in scored),
        subsets=subsets,
        excluded=excluded,
        failures=out.failures(
            sum(r["error"] is not None for r in records), sum(r["unreadable"] for r in records), len(records)
        ),
    )
    return report


SCORING = {
    "pairwise": "each rejected answer judged against the chosen one in both orders; a prompt scores the "
    "product over its comparisons of the share of orders preferring the chosen answer, a tie or a reply "
    "with no verdict counting half (its chance to win them all when each is shown once in a random order); "
    "strict: it wins all in both orders",
    "ranking": "one ranking call per prompt with every answer; 1 when the chosen answer ranks first alone, "
    "1/k when k answers share the first tier, chance level for an unreadable reply, else 0",
}


def markdown(report: dict) -> str:
    version, genrm = report["version"], report["genrm"]
    section_of = {s: name for name, counts in V1_SECTIONS.items() for s in counts}
    header = ["subset", *(["section"] if version == 1 else []), "scored / rows", "accuracy [95% CI]", "chance"]
    header += ["strict"] if genrm == "pairwise" else []
    rows = [
        (
            name,
            *([section_of.get(name, "–")] if version == 1 else []),
            f"{s['count']} / {s['rows']}",
            out.interval(s),
            f"{s['chance']:.3f}",
            *([s["strict"]] if genrm == "pairwise" else []),
        )
        for name, s in report["subsets"].items()
    ]
    lines = [
        f"# {benchmark_name(version)}: {genrm} GenRM",
        "",
        f"Overall **{out.rate(report['overall'])}** over {report['items_scored']} of {report['items']} prompts. "
        f"Scoring: {SCORING[genrm]}. A prompt with a failed judge call is not scored.",
        "",
    ]
    if version == 1:
        lines += [out.markdown_table(["section", "score"], list(report["sections"].items())), ""]
    lines += [out.markdown_table(header, rows), ""]
    lines += [f"- {note}" for note in report["notes"]]
    lines.append(f"- {out.failures_line(report['failures'])}")
    return "\n".join(lines)
