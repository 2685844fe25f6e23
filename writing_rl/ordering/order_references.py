"""Reference ordering (``writing-rl order-references``): order several candidate references per prompt by judged
quality and write Writing-RL rows whose ``target`` lists them easiest first. One input row per prompt, as
``build_parquet.py writing-rl`` reads it, keeps the prompt and its criteria in one place. The input, the judging,
the aggregation and the report: docs/offline-tools.md.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from writing_rl.data import fields
from writing_rl.data.builder import BadRow, parse_test_size, test_mask
from writing_rl.data.builders.writing import WritingRLBuilder
from writing_rl.data.readers import iter_chunks
from writing_rl.offline.files import csv_text, run_lines, run_section, written_together
from writing_rl.offline.judge import JudgeSettings, judge_through_cache, stop_on_failures
from writing_rl.ordering.job import OrderJob
from writing_rl.ordering.rank_aggregation import METHODS, Ordering, PromptResult, order_candidates
from writing_rl.protocols.comparison import SLOTS, comparison_messages

_ORDERED = "__ordered_references__"  # the builder's references column, filled with the judged order
CSV_COLUMNS = (
    "row", "id", "status", "candidates", "judge_calls", "verdicts", "parse_failures", "judge_errors",
    "pairs_both_orders", "inconsistent_pairs", "intransitive_triples", "order", "order_names", "scores",
)  # fmt: skip


@dataclass(frozen=True)
class Prompt:
    position: int  # input row (0-based)
    row: dict
    candidates: list[str]
    names: list[str] | None
    prompt: str  # as the output ground truth holds them: what the judge sees in training
    criteria: str | None


@dataclass(frozen=True)
class OrderingCall:
    """One judge call: two candidates of a prompt, in one order."""

    prompt: int
    candidate: int
    other: int
    slot: str  # the candidate's: A is shown first


def read_ordering_prompts(
    path: str | Path, builder: WritingRLBuilder, candidates_key: str, names_key: str | None, skip_bad: bool
) -> tuple[list[Prompt], list[dict]]:
    """Validated prompts and, with ``skip_bad``, the rejected rows (row, field, reason)."""
    prompts, rejected = [], []
    position = 0
    for chunk in iter_chunks(path):
        for row in chunk:
            try:
                candidates = fields.text_list(row, candidates_key)
                names = None
                if names_key:
                    names = fields.text_list(row, names_key)
                    if len(names) != len(candidates):
                        raise BadRow(names_key, f"has {len(names)} names for {len(candidates)} candidates")
                truth = builder.build({**row, _ORDERED: candidates}, 0, "train")[0]["reward_model"]["ground_truth"]
            except BadRow as bad:
                if not skip_bad:
                    raise ValueError(
                        f"{path}: row {position} (0-based) rejected: {bad} (pass --skip-bad to skip)"
                    ) from None
                rejected.append({"row": position, "field": bad.field, "reason": bad.reason})
            else:
                prompts.append(Prompt(position, row, candidates, names, truth["prompt"], truth["criteria"]))
            position += 1
    return prompts, rejected


def pair_calls(prompts: Sequence[Prompt]) -> list[OrderingCall]:
    return [
        OrderingCall(p, i, j, slot)
        for p, prompt in enumerate(prompts)
        for i, j in itertools.combinations(range(len(prompt.candidates)), 2)
        for slot in SLOTS
    ]


def call_messages(prompts: Sequence[Prompt], template: str | None):
    def build(call: OrderingCall):
        prompt = prompts[call.prompt]
        candidates = prompt.candidates
        return comparison_messages(
            prompt.prompt,
            candidates[call.candidate],
            candidates[call.other],
            call.slot,
            criteria=prompt.criteria,
            template=template,
        )

    return build


@dataclass
class OrderReport:
    summary: dict[str, Any]
    outputs: dict[str, str]

    def lines(self) -> list[str]:
        s = self.summary
        lines = [
            f"{s['prompts']} prompts, {s['candidates']} candidates: {s['judge_calls']} judge calls, {s['verdicts']} verdicts, "
            f"{s['parse_failures']} parse failures, {sum(s['judge_errors'].values())} judge errors",
            f"method {s['method']}; wrote {s['written']} rows ({', '.join(f'{k} {v}' for k, v in s['splits'].items())}), "
            f"left out {len(s['unordered_rows'])} prompts with no verdict, rejected {s['rejected']} bad rows",
            f"judge inconsistency: {s['inconsistent_pairs']} of {s['pairs_both_orders']} pairs judged in both orders "
            f"({_percent(s['inconsistency_rate'])}); verdict share A {_percent(s['verdict_share']['A'])}, "
            f"B {_percent(s['verdict_share']['B'])}, tie {_percent(s['verdict_share']['C'])}",
            f"intransitive triples: {s['intransitive_triples']} in {s['prompts_with_cycles']} prompts",
        ]
        if s.get("mean_position_by_name"):
            ranked = sorted(s["mean_position_by_name"].items(), key=lambda kv: -kv[1])
            lines.append("mean position (0 = easiest), best first: " + ", ".join(f"{k} {v:.2f}" for k, v in ranked))
        lines.extend(run_lines(s, self.outputs))
        return lines


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def run_order_references(job: OrderJob, settings: JudgeSettings) -> OrderReport:
    """Judge all pairs, order, write ``train.parquet`` (+ ``test.parquet``), ``order_report.csv``,
    ``summary.json`` to ``job.out``."""
    if job.method not in METHODS:
        raise ValueError(f"--method must be one of {METHODS}, got {job.method!r}")
    if job.prior <= 0:
        raise ValueError(f"--prior must be > 0, got {job.prior}")
    test_size = parse_test_size(job.test_size)
    builder = WritingRLBuilder(
        prompt_key=job.prompt_key, references_key=_ORDERED, criteria_key=job.criteria_key,
        data_source=job.data_source, system_prompt=job.system_prompt,
    )  # fmt: skip
    prompts, rejected = read_ordering_prompts(job.input_path, builder, job.candidates_key, job.names_key, job.skip_bad)
    if not prompts:
        raise ValueError(f"{job.input_path}: no usable rows")
    calls = pair_calls(prompts)

    build = call_messages(prompts, settings.template)
    judgments, judge, wall_s = judge_through_cache(settings, calls, build, job.cache_path, job.progress)

    results = [PromptResult(len(p.candidates)) for p in prompts]
    errors: Counter = Counter()
    verdict_share: Counter = Counter()
    for call, judgment in zip(calls, judgments):
        result = results[call.prompt]
        result.judge_calls += 1
        if judgment.error:
            result.judge_errors += 1
            errors[judgment.error] += 1
        elif judgment.verdict is None:
            result.parse_failures += 1
        else:
            result.add(call.candidate, call.other, call.slot, judgment.verdict)
            verdict_share[judgment.verdict] += 1
    stop_on_failures(errors, len(calls), judge, job.allow_judge_errors)

    orderings: list[Ordering | None] = []
    for prompt, result in zip(prompts, results):
        unjudged = len(prompt.candidates) > 1 and result.verdicts == 0
        orderings.append(None if unjudged else order_candidates(result, job.method, job.prior))
    kept = [i for i, ordering in enumerate(orderings) if ordering is not None]
    if not kept:
        raise ValueError("no prompt could be ordered: every judgment failed or gave no verdict")
    in_test = test_mask(len(kept), test_size, job.seed)
    tables: dict[str, list[dict]] = {"train": []}
    if in_test.any():
        tables["test"] = []
    ids: dict[int, int] = {}
    for new_id, (index, test) in enumerate(zip(kept, in_test)):
        prompt, ordering = prompts[index], orderings[index]
        split = "test" if test else "train"
        ordered = [prompt.candidates[c] for c in ordering.order]
        tables[split].extend(builder.build({**prompt.row, _ORDERED: ordered}, new_id, split))
        ids[index] = new_id

    summary = _summary(
        prompts, results, orderings, tables, rejected, errors, verdict_share, judge, job.method, job.prior, wall_s
    )
    report_csv = _report_csv(prompts, results, orderings, ids)
    outputs = _write(Path(job.out), builder, tables, report_csv, summary)
    return OrderReport(summary=summary, outputs=outputs)


def _summary(
    prompts, results, orderings, tables, rejected, errors, verdict_share, judge, method, prior, wall_s
) -> dict:
    both = sum(r.pairs_both_orders for r in results)
    inconsistent = sum(len(r.inconsistent_pairs) for r in results)
    verdicts = sum(verdict_share.values())
    triples = [o.triples if o else 0 for o in orderings]
    calls = sum(r.judge_calls for r in results)
    summary: dict[str, Any] = {
        "prompts": len(prompts),
        "candidates": sum(len(p.candidates) for p in prompts),
        "method": method,
        "prior": prior if method == "bt" else None,
        "judge_calls": calls,
        "verdicts": verdicts,
        "parse_failures": sum(r.parse_failures for r in results),
        "judge_errors": dict(errors),
        "verdict_share": {v: (verdict_share[v] / verdicts if verdicts else None) for v in "ABC"},
        "pairs_both_orders": both,
        "inconsistent_pairs": inconsistent,
        "inconsistency_rate": inconsistent / both if both else None,
        "intransitive_triples": sum(triples),
        "prompts_with_cycles": sum(t > 0 for t in triples),
        "written": sum(len(rows) for rows in tables.values()),
        "splits": {name: len(rows) for name, rows in tables.items()},
        "unordered_rows": [p.position for p, o in zip(prompts, orderings) if o is None],
        "rejected": len(rejected),
        "rejected_rows": rejected,
        **run_section(calls, judge.stats, wall_s),
    }
    positions: dict[str, list[float]] = {}
    for prompt, ordering in zip(prompts, orderings):
        if prompt.names and ordering and len(prompt.candidates) > 1:
            for place, candidate in enumerate(ordering.order):
                positions.setdefault(prompt.names[candidate], []).append(place / (len(ordering.order) - 1))
    if positions:
        summary["mean_position_by_name"] = {name: round(float(np.mean(v)), 4) for name, v in sorted(positions.items())}
    return summary


def _report_csv(prompts, results, orderings, ids) -> str:
    rows = []
    for index, (prompt, result, ordering) in enumerate(zip(prompts, results, orderings)):
        order = ordering.order if ordering else []
        names = [prompt.names[c] for c in order] if prompt.names else []
        rows.append(
            [
                prompt.position, ids.get(index, ""), "ordered" if ordering else "no_verdict", len(prompt.candidates),
                result.judge_calls, result.verdicts, result.parse_failures, result.judge_errors,
                result.pairs_both_orders, len(result.inconsistent_pairs), ordering.triples if ordering else 0,
                json.dumps(order), json.dumps(names) if names else "",
                json.dumps([round(float(s), 4) for s in ordering.scores]) if ordering else "",
            ]
        )  # fmt: skip
    return csv_text(CSV_COLUMNS, rows)


def _write(output_dir: Path, builder: WritingRLBuilder, tables: dict[str, list[dict]], report_csv: str, summary: dict):
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = {name: output_dir / f"{name}.parquet" for name in tables}
    paths["report"] = output_dir / "order_report.csv"
    paths["summary"] = output_dir / "summary.json"
    with written_together(paths) as tmp:  # summary.json, named last, is renamed last
        for name, rows in tables.items():
            pq.write_table(pa.Table.from_pylist(rows, schema=builder.schema), tmp[name])
        tmp["report"].write_text(report_csv, encoding="utf-8")
        tmp["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return {name: str(path) for name, path in paths.items()}
