"""``writing-rl eval rewardbench``: a pairwise, group-ranking or rating GenRM on RewardBench (v1) or RewardBench 2.

``rewardbench_sets`` reads the benchmark's files, holds its weights and scores ratings as its code does; ``ratings``
builds and reads the rating calls. RewardBench 2's Ties subset is rated whatever the GenRM kind, as the benchmark
rates it. How each GenRM's prompts are scored, and the report: docs/judge-benchmarks.md, RewardBench.
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
from writing_rl.evaluation.ratings import READERS, UNRATED, rating_messages, read_rating
from writing_rl.evaluation.rewardbench_sets import (
    TIES,
    TIES_WEIGHTS,
    V1_SECTIONS,
    RewardBenchItem,
    rated_prompt_score,
    read_items,
    ties_subset,
    v1_scores,
    v2_scores,
)
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols import Unreadable, gqm_prompt
from writing_rl.protocols.gqm import labels_for
from writing_rl.protocols.gqm_task import read_answer
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, Messages, load_template

GENRMS = ("pairwise", "ranking", "rated")
SHARE = {"chosen": 1.0, "tie": 0.5, None: 0.5, "rejected": 0.0}  # None: a reply with no verdict


@dataclass(frozen=True)
class RatingOptions:
    """The rating calls (``--genrm rated``, and v2's Ties under every GenRM kind): the reader (``ratings``), the
    prompt files (None: the reader's own prompt; Ties: ``template``, else the reader's own Ties prompt) and the
    system message (None: the reader's default)."""

    reader: str = "rating"
    template: str | None = None
    ties_template: str | None = None
    system_prompt: str | None = None


@dataclass(frozen=True)
class RatingCall:
    """One rating call: the item's ``answer``-th answer (``item.answers``: the correct ones first) rated alone."""

    item: RewardBenchItem
    answer: int
    messages: Messages


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
    rating: RatingOptions = RatingOptions(),
    cache: str | None = None,
    progress: bool = True,
    seed: int = 0,
) -> list[str]:
    """Judge, write every output, and return the lines to print. ``exclude``: subsets left out.
    ``options.template`` is a pairwise template file (pairwise) or a GQM template file (ranking);
    ``options.system_prompt`` (None: the built-in pairwise system message, none for ranking) serves both.
    ``rating``: the rating calls. ``seed``: the bootstrap intervals'."""
    if genrm not in GENRMS:
        raise InputError(f"--genrm must be one of {', '.join(GENRMS)}, got {genrm!r}")
    if rating.reader not in READERS:
        raise InputError(f"--reader must be one of {', '.join(READERS)}, got {rating.reader!r}")
    items, excluded = read_items(data, version, tuple(exclude))
    rated = {item.id for item in items if genrm == "rated" or item.ties_group is not None}
    others = [item for item in items if item.id not in rated]
    calls: list = pairwise_calls(others, options) if genrm == "pairwise" else group_calls(others, options)
    calls += rating_calls([item for item in items if item.id in rated], rating)
    judgments, judge_section = judge_jobs(
        settings, calls, lambda c: c.call.messages(options.template) if isinstance(c, PairwiseCall) else c.messages,
        lambda text: Judgment(value=text), out_dir, cache, progress,
    )  # fmt: skip
    records = [_record(c, j, options, rating.reader) for c, j in zip(calls, judgments)]
    scored = item_scores(items, records, version)
    report = summarise(version, genrm, items, scored, records, excluded, seed)
    report["judge"] = judge_section
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    out.write_jsonl(Path(out_dir) / "items.jsonl", scored)
    out.write_reports(out_dir, report, markdown(report))
    subsets = {name: s for name, s in report["subsets"].items() if s["count"] and not math.isnan(s["mean"])}
    plot_line = out.plot(
        Path(out_dir) / "subsets.png",
        lambda axes: out.bar_plot_with_intervals(
            axes, list(subsets), list(subsets.values()), f"{benchmark_name(version)}: subset scores", "score"
        ),
    )  # fmt: skip
    return [
        f"{benchmark_name(version)} overall {out.rate(report['overall'])} ({genrm} GenRM) over "
        f"{report['items_scored']} of {report['items']} prompts in {len(report['subsets'])} subsets",
        *(f"note: {note}" for note in report["notes"]),
        f"judge calls {len(records)}: {out.failures_line(report['failures'], out.SCORED_AS_THE_BENCHMARK)}; prompts not scored "
        f"{report['items'] - report['items_scored']}",
        f"wrote {out_dir}/judgments.jsonl, items.jsonl, report.json, report.md",
        plot_line,
    ]


def pairwise_calls(items: Sequence[RewardBenchItem], options: RankingOptions) -> list[PairwiseCall]:
    if options.template:
        load_template(options.template)  # a template without both response placeholders fails before any call
    system = options.system_prompt or PAIRWISE_SYSTEM
    return [
        PairwiseCall(
            item, j, PreferenceCall(PreferencePair((item.id, j), item.prompt, item.chosen, rejected, system), order)
        )
        for item in items
        for j, rejected in enumerate(item.rejected)
        for order in ORDERS
    ]


def rating_calls(items: Sequence[RewardBenchItem], options: RatingOptions) -> list[RatingCall]:
    calls = []
    for item in items:
        ties = item.ties_group is not None
        template = (options.ties_template or options.template) if ties else options.template
        try:
            calls += [
                RatingCall(item, i, rating_messages(item.prompt, answer, options.reader, template,
                                                    options.system_prompt, ties=ties))
                for i, answer in enumerate(item.answers)
            ]  # fmt: skip
        except (OSError, ValueError) as err:  # a prompt file missing, or without the answer's placeholder
            raise InputError(f"rating prompt: {err}") from None
    return calls


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


def _record(call, judgment: Judgment, options: RankingOptions, reader: str) -> dict:
    if isinstance(call, PairwiseCall):
        return _comparison_record(call, judgment if judgment.value is None else verdict_judgment(judgment.value))
    if isinstance(call, GroupCall):
        return _group_record(call, judgment, options)
    rating = None if judgment.error else read_rating(judgment.value, reader, call.item.answers[call.answer])
    return {
        "id": call.item.id,
        "subset": call.item.subset,
        "answer": call.answer,
        "correct": call.answer < call.item.num_correct,
        "rating": rating,  # UNRATED: nothing read; None: the call failed
        "error": judgment.error,
        "unreadable": rating == UNRATED,
    }


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


def item_scores(items: Sequence[RewardBenchItem], records: Sequence[dict], version: int) -> list[dict]:
    """One line per prompt: its score (None: a call of it failed; Ties rows: scored together, by the subset),
    whether it is scored, its chance level, its answers' ratings when rated and, for pairwise verdicts, whether the
    chosen answer won every comparison in both orders."""
    mine: dict[Any, list[dict]] = {}
    for record in records:
        mine.setdefault(record["id"], []).append(record)
    lines = []
    for item in items:
        calls, k = mine[item.id], len(item.rejected)
        pairwise, rated = "picked" in calls[0], "rating" in calls[0]
        chance = 0.5**k if pairwise else 1 / (k + 1)
        line = {"id": item.id, "subset": item.subset, "score": None, "chance": chance, "strict": None}
        failed = any(r["error"] is not None for r in calls)
        line["scored"] = not failed
        if rated:
            line["ratings"] = [r["rating"] for r in calls]
            if item.ties_group is not None:
                line["chance"] = None
            elif not failed:
                line["score"] = rated_prompt_score(line["ratings"], version)
        elif not failed:
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


def summarise(version, genrm, items, scored, records, excluded, seed: int = 0) -> dict:
    subsets: dict[str, dict] = {}
    ties = {item.id: item for item in items if item.ties_group is not None}
    for subset in dict.fromkeys(i.subset for i in items):
        lines = [line for line in scored if line["subset"] == subset]
        read = [line for line in lines if line["scored"]]
        if version == 2 and subset == TIES:  # scored together; a row with a failed call is left out
            rows = [(ties[line["id"]].ties_group, line["ratings"], ties[line["id"]].num_correct) for line in read]
            subsets[subset] = ties_subset(rows, len(lines), seed)
            continue
        entry = {**stats.mean_with_ci([line["score"] for line in read], seed=seed), "rows": len(lines)}
        entry["count"] = entry.pop("n")
        entry["chance"] = sum(line["chance"] for line in lines) / len(lines)
        if genrm == "pairwise":
            entry["strict"] = out.share(sum(line["strict"] for line in read), len(read))
        subsets[subset] = entry
    accuracy = {subset: s["mean"] for subset, s in subsets.items() if s["count"] and not math.isnan(s["mean"])}
    unscored = [subset for subset, s in subsets.items() if not s["count"]]
    report: dict[str, Any] = {"kind": "rewardbench", "version": version, "genrm": genrm}
    if version == 1:
        sections, report["overall"], report["notes"] = v1_scores(accuracy, unscored)
        report["sections"] = sections
    else:
        report["overall"], report["notes"] = v2_scores(accuracy, unscored)
        if subsets.get(TIES, {}).get("count") and TIES not in accuracy:
            report["notes"].insert(0, "Ties: no prompt has both its ref and tied rows scored, so its score is "
                                      "undefined (reward-bench's nan): left out of the overall score")  # fmt: skip
    report["notes"] += [f"excluded: {subset} ({e['rows']} rows; {e['reason']})" for subset, e in excluded.items()]
    report.update(
        items=len(items),
        items_scored=sum(line["scored"] for line in scored),
        subsets=subsets,
        excluded=excluded,
        failures=out.failures(
            sum(r["error"] is not None for r in records), sum(r["unreadable"] for r in records), len(records)
        ),
        seed=seed,
    )
    return report


SCORING = {
    "pairwise": "each rejected answer judged against the chosen one in both orders; a prompt scores the "
    "product over its comparisons of the share of orders preferring the chosen answer, a tie or a reply "
    "with no verdict counting half (its chance to win them all when each is shown once in a random order); "
    "strict: it wins all in both orders",
    "ranking": "one ranking call per prompt with every answer; 1 when the chosen answer ranks first alone, "
    "1/k when k answers share the first tier, chance level for an unreadable reply, else 0",
    "rated": {
        1: "each answer rated alone, 1 to 10; a prompt scores 1 when the chosen answer is rated above the rejected "
        "one, 0 when below, 0.5 for equal ratings or an unreadable one (reward-bench's run_judge_ratings)",
        2: "each answer rated alone, 1 to 10; a prompt scores 1/k when the chosen answer is among the k best "
        "rated, else 0; an unreadable rating drops out (the chosen answer's loses), 0.25 when none is read "
        "(reward-bench's run_generative_v2.py)",
    },
}
FAILED = "A prompt with a failed judge call is not scored (counted; a rerun retries the call)."
FAILED_RATED = (
    " reward-bench reads a failed rating call as an unreadable rating (-1) and scores the prompt; here it is left "
    "out until a rerun rates it."
)


def markdown(report: dict) -> str:
    version, genrm = report["version"], report["genrm"]
    section_of = {s: name for name, counts in V1_SECTIONS.items() for s in counts}
    header = ["subset", *(["section"] if version == 1 else []), "scored / rows", "score [95% CI]", "chance"]
    header += ["strict"] if genrm == "pairwise" else []
    rows = [
        (
            name,
            *([section_of.get(name, "–")] if version == 1 else []),
            f"{s['count']} / {s['rows']}",
            out.interval(s),
            s["chance"],
            *([s.get("strict", "–")] if genrm == "pairwise" else []),
        )
        for name, s in report["subsets"].items()
    ]
    scoring = SCORING[genrm][version] if genrm == "rated" else SCORING[genrm]
    ties = report["subsets"].get(TIES) if version == 2 else None
    rated = genrm == "rated" or ties is not None
    lines = [
        f"# {benchmark_name(version)}: {genrm} GenRM",
        "",
        f"Overall **{out.rate(report['overall'])}** over {report['items_scored']} of {report['items']} prompts. "
        f"Scoring: {scoring}. {FAILED}{FAILED_RATED if rated else ''}",
        "",
    ]
    if version == 1:
        lines += [out.markdown_table(["section", "score"], list(report["sections"].items())), ""]
    lines += [out.markdown_table(header, rows), ""]
    if ties is not None:
        lines += [
            f"Ties (always rated, with the Ties prompt): {out.rate(ties['mean'])} = the weighted sum of its parts "
            f"(reward-bench's process_single_model; the weights add up to 1.01); prompts with both a ref and a tied "
            f"row: {ties['parts']['prompts']}. A rating that cannot be read counts as -1, as reward-bench counts it.",
            "",
            out.markdown_table(
                ["part", "weight", "value"],
                [(name, f"{weight:.2f}", ties["parts"].get(name, float("nan"))) for name, weight in TIES_WEIGHTS.items()],
            ),
            "",
        ]  # fmt: skip
    lines += [f"- {note}" for note in report["notes"]]
    lines.append(f"- {out.failures_line(report['failures'], out.SCORED_AS_THE_BENCHMARK)}")
    return "\n".join(lines)
