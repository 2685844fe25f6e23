"""Margin-aware data selection (``writing-rl select``): keep the prompts where the policy trails the best reference
by most, the ones with the most left to learn. This module reads the rows, runs the judge and sums up; the margins,
the choice and the outputs: docs/offline-tools.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from writing_rl.judge.cache import CachedJudge
from writing_rl.offline.files import field_value, match_responses, run_lines, run_section
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_through_cache, stop_on_failures, verdict_judgment
from writing_rl.plot import NO_MATPLOTLIB
from writing_rl.protocols import score_pair_or_none, strip_think
from writing_rl.protocols.comparison import SLOTS, comparison_messages, outcome
from writing_rl.protocols.pairwise_task import read_writing_rl_task
from writing_rl.selection.job import SelectJob
from writing_rl.selection.margins import (
    MARGIN_KINDS,
    IdMargin,
    MarginKind,
    Selection,
    check_options,
    choose,
    rank_ids,
    response_score,
)
from writing_rl.selection.outputs import write_outputs


def score_pair_judgment(text: str) -> Judgment:
    """A score pair, and the verdict it implies (the higher score wins, equal scores tie)."""
    scores = score_pair_or_none(text)
    if scores is None:
        return Judgment()
    a, b = scores
    return Judgment(verdict="A" if a > b else "B" if b > a else "C", scores=scores)


# What the built-in prompt asks the judge to end with (``MarginKind.judge_output``) -> its reader.
READERS = {"verdict": verdict_judgment, "scores": score_pair_judgment}


@dataclass(frozen=True)
class Task:
    prompt: str
    criteria: str | None
    best_reference: str


@dataclass(frozen=True)
class SelectionCall:
    """One judge call: a response against its row's best reference, in one order."""

    item: int  # index into the IdMargin list
    response: int  # index of the response within the item
    task: Task
    answer: str
    response_slot: str  # "A": the response is shown first


def read_tasks(rows: Sequence[dict], domain_key: str, need_domain: bool) -> tuple[list[IdMargin], list[Task]]:
    items, tasks, seen = [], [], {}
    for position, row in enumerate(rows):
        truth = (row.get("reward_model") or {}).get("ground_truth")
        task = read_writing_rl_task(truth, row.get("extra_info"))
        if task.id is None:
            raise ValueError(f"row {position}: reward_model.ground_truth.id is missing (Writing-RL rows carry an id)")
        if task.id in seen:
            raise ValueError(f"rows {seen[task.id]} and {position} share ground_truth.id={task.id}; ids must be unique")
        seen[task.id] = position
        domain = field_value(row, domain_key)
        if domain is None and need_domain:
            raise ValueError(f"row {position} (id={task.id}) has no value at '{domain_key}' (--domain-key) for quotas")
        items.append(IdMargin(id=task.id, row=position, domain="" if domain is None else str(domain)))
        tasks.append(Task(task.prompt, task.criteria, task.references[-1]))
    return items, tasks


def judge_calls(
    items: list[IdMargin], tasks: list[Task], samples, kind: MarginKind
) -> tuple[list[SelectionCall], dict[tuple[int, int], list[float]]]:
    """Two calls (both orders) per response with an answer; responses with none get a loss now."""
    calls: list[SelectionCall] = []
    points: dict[tuple[int, int], list[float]] = {}
    for sample in samples:
        item = items[sample.row]
        response = item.responses
        item.responses += 1
        points[(sample.row, response)] = []
        answer = strip_think(sample.response)
        if answer is None:
            item.format_errors += 1
            points[(sample.row, response)].append(kind.high)
            continue
        for slot in SLOTS:
            calls.append(SelectionCall(sample.row, response, tasks[sample.row], answer, slot))
    return calls, points


def call_messages(template: str | None, judge_output: str = "verdict"):
    def build(call: SelectionCall):
        task = call.task
        return comparison_messages(
            task.prompt,
            call.answer,
            task.best_reference,
            call.response_slot,
            criteria=task.criteria,
            template=template,
            output=judge_output,
        )

    return build


@dataclass
class SelectReport:
    summary: dict[str, Any]
    margins: list[IdMargin]
    outputs: dict[str, str]

    def lines(self) -> list[str]:
        s = self.summary
        lines = [
            f"{s['rows']} rows, {s['responses']} responses: {s['judge_calls']} judge calls, {s['verdicts']} verdicts, "
            f"{s['parse_failures']} parse failures, {sum(s['judge_errors'].values())} judge errors, "
            f"{s['format_errors']} responses without an answer",
            f"ids with a margin {s['ids_judged']}, without: {s['ids_no_verdict']} (no verdict), "
            f"{s['ids_no_responses']} (no responses) - never selected",
            f"selected {s['selected']} ids; cut margin {s['cut_margin']}; mean margin selected {s['margin_mean_selected']}"
            f" vs all {s['margin_mean_all']}",
        ]
        if s["judge_calls"] and s["parse_failures"] > s["judge_calls"] / 2:
            ending = "a score line 'A: 7, B: 4'" if s["margin"] == "score-gap" else "a verdict [[A]]/[[B]]/[[C]]"
            lines.append(
                f"WARNING most replies ({s['parse_failures']} of {s['judge_calls']}) did not end with {ending}: "
                "check that the judge template asks for it and that judge.max_tokens leaves room for it"
            )
        if s["selected_by_domain"]:
            lines.append("by domain: " + ", ".join(f"{d} {n}" for d, n in sorted(s["selected_by_domain"].items())))
        if s["quota_shortfall"]:
            lines.append(
                "quota not filled: " + ", ".join(f"{d} short by {n}" for d, n in sorted(s["quota_shortfall"].items()))
            )
        lines.extend(run_lines(s, self.outputs))
        if "histogram" not in self.outputs:
            lines.append(f"  margins.png: {NO_MATPLOTLIB}")
        return lines


def run_select(job: SelectJob, settings: JudgeSettings) -> SelectReport:
    """Judge, rank, choose and write the outputs to ``job.out``."""
    import pyarrow.parquet as pq

    check_options(job.top_k, job.top_percent, job.quotas)
    if job.margin not in MARGIN_KINDS:
        raise ValueError(f"--margin must be one of {sorted(MARGIN_KINDS)}, got {job.margin!r}")
    kind = MARGIN_KINDS[job.margin]
    if job.bins < 1:
        raise ValueError(f"--bins must be >= 1, got {job.bins}")
    table = pq.read_table(job.data)
    rows = table.to_pylist()
    items, tasks = read_tasks(rows, job.domain_key, need_domain=job.quotas is not None)
    if isinstance(job.quotas, Mapping):
        unknown = sorted(set(job.quotas) - {item.domain for item in items})
        if unknown:
            domains = sorted({item.domain for item in items})
            raise ValueError(
                f"--quota names domain(s) {unknown} that no row has under '{job.domain_key}' (domains: {domains})"
            )
    samples = match_responses(rows, job.responses)
    calls, points = judge_calls(items, tasks, samples, kind)

    build = call_messages(settings.template, kind.judge_output)
    judgments, judge, wall_s = judge_through_cache(
        settings, calls, build, job.cache_path, job.progress, read=READERS[kind.judge_output]
    )

    errors: Counter = Counter()
    for call, judgment in zip(calls, judgments):
        item = items[call.item]
        if judgment.error:
            item.judge_errors += 1
            errors[judgment.error] += 1
        elif judgment.verdict is None:
            item.parse_failures += 1
        else:
            item.comparisons += 1
            points[(call.item, call.response)].append(kind.reference_points(judgment, call.response_slot))
    stop_on_failures(errors, len(calls), judge, job.allow_judge_errors)
    for (row, _), found in points.items():
        score = response_score(found)
        if score is not None:
            items[row].response_scores.append(score)

    ranked = rank_ids(items, job.seed)
    if not ranked:
        raise ValueError("no id has a margin (every judgment failed or gave no verdict): nothing to select")
    choice = choose(ranked, job.top_k, job.top_percent, job.quotas)
    summary = {"margin": kind.name, **_summary(items, ranked, choice, calls, judgments, errors, judge, wall_s)}
    outputs = write_outputs(Path(job.out), table, items, ranked, choice, summary, kind, job.bins)
    return SelectReport(summary=summary, margins=items, outputs=outputs)


def _summary(
    items, ranked, choice: Selection, calls, judgments, errors: Counter, judge: CachedJudge, wall_s: float
) -> dict:
    chosen_margins = [m.margin for m in choice.chosen]
    both_orders: dict[tuple[int, int], list[str]] = {}
    for call, judgment in zip(calls, judgments):
        if judgment.verdict is not None:
            both_orders.setdefault((call.item, call.response), []).append(outcome(judgment.verdict, call.response_slot))
    pairs = [found for found in both_orders.values() if len(found) == 2]
    return {
        "rows": len(items),
        "responses": sum(m.responses for m in items),
        "judge_calls": len(calls),
        "verdicts": sum(m.comparisons for m in items),
        "parse_failures": sum(m.parse_failures for m in items),
        "judge_errors": dict(errors),
        "format_errors": sum(m.format_errors for m in items),
        "position_consistency": _round(sum(a == b for a, b in pairs) / len(pairs)) if pairs else None,
        "ids_judged": len(ranked),
        "ids_no_verdict": sum(m.status == "no_verdict" for m in items),
        "ids_no_responses": sum(m.status == "no_responses" for m in items),
        "selected": len(choice.chosen),
        "selected_by_domain": dict(Counter(m.domain for m in choice.chosen)) if choice.targets is not None else {},
        "quotas": choice.targets,
        "quota_shortfall": choice.shortfall,
        "cut_margin": _round(min(chosen_margins)) if chosen_margins else None,
        "margin_mean_all": _round(sum(m.margin for m in ranked) / len(ranked)),
        "margin_mean_selected": _round(sum(chosen_margins) / len(chosen_margins)) if chosen_margins else None,
        **run_section(len(calls), judge.stats, wall_s),
    }


def _round(value: float) -> float:
    return round(value, 6)
