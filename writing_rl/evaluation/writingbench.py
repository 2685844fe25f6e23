"""``writing-rl eval writingbench``: criteria-based scoring in WritingBench's own formats.

The critic sees a response as the reward shows it (``strip_think``, then ``plain_text``). A response with no answer
gets no critic call and is counted as ``no_answer``, left out of every mean, where WritingBench's own script would
score it (low): compare ``no_answer`` when comparing with its numbers. The scores, ``--template``, ``--compare`` and
the outputs: docs/evaluation.md, WritingBench.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.inputs import (
    InputError,
    check_index,
    dump_matcher,
    lines,
    require_fields,
    responses_by_index,
)
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs
from writing_rl.protocols import Unreadable, read_json_score, strip_think
from writing_rl.protocols.prompts import Messages, format_criteria
from writing_rl.protocols.quoting import fence, plain_text
from writing_rl.settings import ConfigError

SYSTEM = "You are a strict, fair evaluator of writing. You score one criterion at a time."

DEFAULT_TEMPLATE = """\
Evaluate the response to the writing request below on one criterion only.

[Request]
{query}

[Response]
{response}

[Criterion]
{criterion}

Score the response from 1 to 10 on this criterion, using the score bands above. Explain briefly, then
end your reply with one JSON object and nothing after it:
{"score": <integer from 1 to 10>, "reason": "<one or two sentences>"}
"""
# The placeholders a --template may use (docs/evaluation.md), filled in one pass: text in a response that looks
# like a placeholder is left alone.
FIELDS = r"query|response|response_text|criterion|criteria|criteria_python"
PLACEHOLDER = re.compile(r"\{(" + FIELDS + r")\}")
# A str.format template: doubled braces are one brace each, read left to right as str.format reads them.
FORMAT_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(" + FIELDS + r")\}")
RESPONSE_FIELDS = ("{response}", "{response_text}")


@dataclass(frozen=True)
class Query:
    index: Any
    domain1: str
    domain2: str
    query: str
    checklist: tuple[dict, ...]


@dataclass(frozen=True)
class CriterionCall:
    """One critic call: a query's response scored on one checklist criterion."""

    query: Query
    criterion: dict
    response: str  # the answer shown to the critic (reasoning dropped)


def read_benchmark(path: str | Path) -> dict[Any, Query]:
    """The queries by index, in file order. Each checklist item is rendered as the critic will see it, so a
    malformed item fails here, naming the line and the item; criterion names are unique per query."""
    queries: dict[Any, Query] = {}
    for where, record in lines(path):
        require_fields(record, ("index", "query"), where)
        index = check_index(record["index"], where)
        checklist = record.get("checklist", record.get("criteria"))
        if not isinstance(checklist, list) or not checklist:
            raise InputError(f"{where}: checklist must be a non-empty list of criteria")
        names: set[str] = set()
        for number, item in enumerate(checklist):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
                raise InputError(f"{where}: checklist item {number} has no name")
            if item["name"] in names:
                raise InputError(f"{where}: checklist item {number}: criterion name {item['name']!r} appears twice")
            names.add(item["name"])
        try:
            format_criteria(checklist)  # as the critic will see each item
        except ValueError as err:
            raise InputError(f"{where}: checklist {err}") from None
        if index in queries:
            raise InputError(f"{where}: index {index!r} appears twice")
        queries[index] = Query(
            index=index,
            domain1=str(record.get("domain1") or "unknown"),
            domain2=str(record.get("domain2") or "unknown"),
            query=str(record["query"]),
            checklist=tuple(checklist),
        )
    if not queries:
        raise InputError(f"{path}: no queries")
    return queries


def read_template(path: str | Path) -> str:
    """A ``--template`` file's text; one without ``{response}`` or ``{response_text}`` is a ``ConfigError``."""
    text = Path(path).read_text(encoding="utf-8")
    if not any(field in text for field in RESPONSE_FIELDS):
        raise ConfigError(
            f"{path}: the critic template has no response placeholder: put {{response}} (fenced) or "
            "{response_text} (as is) where the response goes"
        )
    return text


def fill_template(template: str, values: dict[str, str]) -> str:
    """The placeholders filled in one pass; a template with a ``{{`` is a ``str.format`` template: its
    ``{{`` and ``}}`` become single braces."""
    if "{{" not in template:
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    return FORMAT_PLACEHOLDER.sub(lambda m: values[m.group(1)] if m.group(1) else m.group(0)[0], template)


def critic_messages(call: CriterionCall, template: str | None = None, system_prompt: str | None = None) -> Messages:
    response = plain_text(call.response)
    values = {
        "query": call.query.query,
        "response": fence(response),
        "response_text": response,
        "criterion": format_criteria(call.criterion) or call.criterion["name"],
        "criteria": json.dumps(call.criterion, ensure_ascii=False),
        "criteria_python": str(call.criterion),
    }
    user = fill_template(template or DEFAULT_TEMPLATE, values)
    return [
        {"role": "system", "content": SYSTEM if system_prompt is None else system_prompt},
        {"role": "user", "content": user},
    ]


def critic_judgment(reply: str) -> Judgment:
    """The critic's integer score 1-10 and its reason, or nothing read (a parse failure)."""
    score = read_json_score(reply)
    if isinstance(score, Unreadable) or score != int(score):
        return Judgment()
    return Judgment(value={"score": int(score), "reason": _reason(reply)})


def _reason(reply: str) -> str:
    decoder = json.JSONDecoder()
    position = reply.rfind("{")
    while position >= 0:
        try:
            value, _ = decoder.raw_decode(reply, position)
            if isinstance(value, dict) and "score" in value:
                return str(value.get("reason", ""))
        except ValueError:
            pass
        position = reply.rfind("{", 0, position)
    return ""


def run_writingbench(
    benchmark: str,
    responses: str,
    out_dir: str,
    settings: JudgeSettings,
    template: str | None = None,
    compare: str | None = None,
    step: int | None = None,
    cache: str | None = None,
    progress: bool = True,
    system_prompt: str | None = None,
) -> list[str]:
    """Judge, write every output, and return the lines to print."""
    template_text = read_template(template) if template else None
    queries = read_benchmark(benchmark)
    other = read_scores(compare) if compare else None  # bad input fails before any call
    answers = responses_by_index(responses, queries, dump_matcher(queries), step)
    shown = {index: strip_think(answers[index]) for index in queries if index in answers}  # benchmark order
    if other is not None and not {index for index, text in shown.items() if text is not None} & set(other):
        raise InputError(f"{compare}: no index in common with the answered responses")
    calls = [
        CriterionCall(queries[index], item, text) for index, text in shown.items() if text is not None
        for item in queries[index].checklist
    ]  # fmt: skip
    out_path = Path(out_dir)
    judgments, judge_section = judge_jobs(
        settings, calls, lambda c: critic_messages(c, template_text, system_prompt), critic_judgment, out_dir, cache,
        progress,
    )  # fmt: skip
    scores = scores_by_query(calls, judgments)
    out.write_jsonl(out_path / "scores.jsonl", scores)
    report = summarise(queries, scores, calls, judgments)
    report["queries_with_response"] = len(shown)
    report["extra_samples_ignored"] = getattr(answers, "extra_samples", 0)
    report["failures"]["no_answer"] = sum(text is None for text in shown.values())
    report["judge"] = judge_section
    if other is not None:
        report["compare"] = compare_with(queries, scores, other, str(compare))
    out.write_reports(out_dir, report, markdown(report))
    domains = report["domain1"]
    plot_line = out.plot(
        out_path / "domains.png",
        lambda axes: out.bar_plot_with_intervals(
            axes, list(domains), list(domains.values()), "WritingBench score by domain (95% CI)", "mean score (1-10)"
        ),
    )
    failures = report["failures"]
    printed = [
        f"overall {out.interval(report['overall'])} over {report['queries_scored']} queries",
        f"critic calls {len(calls)}: {out.failures_line(failures)}; queries with no answer (no call, not "
        f"scored) {failures['no_answer']}",
    ]
    if "compare" in report:
        difference = report["compare"]["overall"]
        printed.append(
            f"difference vs {compare} (ours minus theirs, overall): {out.interval(difference)} over "
            f"{report['compare']['pairs']} shared criterion scores in {difference['n']} queries"
        )
    if failures["judge_error"]:
        printed.append("rerun the same command to retry only the failed calls (answered calls come from the cache)")
    return [*printed, f"wrote {out_dir}/scores.jsonl, report.json, report.md", plot_line]


def scores_by_query(calls: Sequence[CriterionCall], judgments: Sequence[Judgment]) -> list[dict]:
    """WritingBench's score lines in the order of the calls (``run_writingbench`` makes them in benchmark
    order); failed calls are left out (counted in the report), and so is a query with no score."""
    lines_by_index: dict[Any, dict] = {}
    for call, judgment in zip(calls, judgments):
        line = lines_by_index.setdefault(call.query.index, {"index": call.query.index, "scores": {}})
        if judgment.value is not None:
            line["scores"].setdefault(call.criterion["name"], []).append(judgment.value)
    return [line for line in lines_by_index.values() if line["scores"]]


def read_scores(path: str | Path) -> dict[Any, dict[str, list[int]]]:
    """Integer scores per index and criterion name from a WritingBench score file (ours or the benchmark's
    own). A line that repeats an index, or an entry without an integer ``score``, is an error by line."""
    result: dict[Any, dict[str, list[int]]] = {}
    for where, record in lines(path):
        require_fields(record, ("index", "scores"), where)
        index = check_index(record["index"], where)
        if index in result:
            raise InputError(f"{where}: index {index!r} appears twice")
        if not isinstance(record["scores"], dict):
            raise InputError(f"{where}: scores must be an object of criterion name -> list of {{score, reason}}")
        by_name: dict[str, list[int]] = {}
        for name, entries in record["scores"].items():
            if not isinstance(entries, list):
                entries = [entries]
            for entry in entries:
                score = entry.get("score") if isinstance(entry, dict) else None
                if isinstance(score, bool) or not isinstance(score, int):
                    raise InputError(f"{where}: criterion {name!r}: each entry needs an integer score, got {entry!r}")
                by_name.setdefault(name, []).append(score)
        result[index] = by_name
    return result


def summarise(queries: dict[Any, Query], scores: list[dict], calls: Sequence[CriterionCall], judgments) -> dict:
    per_query = {s["index"]: [e["score"] for entries in s["scores"].values() for e in entries] for s in scores}
    indices = list(per_query)
    means = [sum(per_query[i]) / len(per_query[i]) for i in indices]
    return {
        "kind": "writingbench",
        "overall": stats.ratio_with_ci([sum(per_query[i]) for i in indices], [len(per_query[i]) for i in indices]),
        "queries_scored": len(indices),
        "queries_in_benchmark": len(queries),
        "domain1": stats.by_group(means, [queries[i].domain1 for i in indices]),
        "domain2": stats.by_group(means, [queries[i].domain2 for i in indices]),
        "failures": {
            **out.failures(
                sum(j.error is not None for j in judgments), sum(j.parse_failure for j in judgments), len(judgments)
            ),
            "queries_with_failed_criteria": len({c.query.index for c, j in zip(calls, judgments) if j.value is None}),
        },
    }


def compare_with(
    queries: dict[Any, Query], scores: list[dict], other: dict[Any, dict[str, list[int]]], name: str
) -> dict:
    """Ours minus the other run on the (index, criterion name) pairs both scored (a criterion with several
    entries counts as their mean). Overall: WritingBench's overall score (all criterion scores pooled) of
    each side on those pairs, the difference with a paired bootstrap over queries (both sides of a query
    resampled together); per domain1: the paired difference of per-query means on the shared criteria."""
    ours = {s["index"]: {c: [e["score"] for e in entries] for c, entries in s["scores"].items()} for s in scores}
    if not set(ours) & set(other):
        raise InputError(f"{name}: no index in common with the scores of this run")
    shared, differences, counts, mine, theirs = [], [], [], [], []
    for index, criteria in ours.items():
        pairs = [
            (sum(criteria[c]) / len(criteria[c]), sum(other[index][c]) / len(other[index][c]))
            for c in criteria
            if other.get(index, {}).get(c)
        ]
        if not pairs:
            continue
        shared.append(index)
        differences.append(sum(a - b for a, b in pairs))
        counts.append(len(pairs))
        mine.append(sum(a for a, _ in pairs) / len(pairs))
        theirs.append(sum(b for _, b in pairs) / len(pairs))
    if not shared:
        raise InputError(f"{name}: no (index, criterion name) pair in common with the scores of this run")
    per_domain = {}
    for domain in sorted({queries[i].domain1 for i in shared}):
        pick = [k for k, i in enumerate(shared) if queries[i].domain1 == domain]
        per_domain[domain] = stats.paired_difference([mine[k] for k in pick], [theirs[k] for k in pick])
    return {
        "against": name,
        "overall": stats.ratio_with_ci(differences, counts),  # the same denominators: a difference of ratios
        "pairs": sum(counts),
        "domain1": per_domain,
    }


def markdown(report: dict) -> str:
    failures = report["failures"]
    parts = [
        "# WritingBench",
        "",
        f"Overall (mean of all criterion scores): **{out.interval(report['overall'])}** "
        f"over {report['queries_scored']} of {report['queries_in_benchmark']} queries (95% bootstrap CI).",
        "",
        out.markdown_table(
            ["domain1", "queries", "mean [95% CI]"],
            [(d, s["n"], out.interval(s)) for d, s in report["domain1"].items()],
        ),
        "",
        out.markdown_table(
            ["domain2", "queries", "mean [95% CI]"],
            [(d, s["n"], out.interval(s)) for d, s in report["domain2"].items()],
        ),
        "",
        f"Critic calls (left out of every mean): {out.failures_line(failures)}; queries with failed "
        f"criteria {failures['queries_with_failed_criteria']}.",
        "",
        f"Queries with a response: {report['queries_with_response']}; with no answer (empty, or a `<think>` "
        f"never closed: no critic call, left out of every mean; WritingBench's script would score them): "
        f"{failures['no_answer']}; extra samples ignored (dump lines beyond an index's first): "
        f"{report['extra_samples_ignored']}.",
    ]
    if "compare" in report:
        compare = report["compare"]
        rows = [("overall (pooled criterion scores)", compare["overall"]["n"], out.interval(compare["overall"]))]
        rows += [(d, s["n"], out.interval(s)) for d, s in compare["domain1"].items()]
        parts += [
            "",
            f"## Difference vs {compare['against']} (ours minus theirs, paired)",
            "",
            f"On the {compare['pairs']} (query, criterion) pairs both scored; 95% paired bootstrap over queries.",
            "",
        ]
        parts.append(out.markdown_table(["domain1", "queries", "difference [95% CI]"], rows))
    return "\n".join(parts)
