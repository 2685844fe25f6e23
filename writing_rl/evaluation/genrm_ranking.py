"""``writing-rl eval genrm-ranking``: a GQM (group-ranking) GenRM's accuracy on groups with gold scores.

Each reply is read and scored by ``protocols.gqm_task``, exactly as the RLVR reward (``reward_fns/ranking_accuracy.py``)
does. Source groups are clusters: a gqm-rl input group and its augmented rows (shuffles, subgroups) share
``extra_info.index``, a JSONL group is its own source. Every metric is computed per row, averaged within each source,
then across sources (``clustered``), so each source weighs the same; the intervals resample sources. The report:
docs/evaluation.md, GenRM accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from writing_rl.data.builder import BadRow
from writing_rl.data.builders.gqm_rows import GroupReader
from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.inputs import InputError, indexed_lines, is_parquet, parquet_rows
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs
from writing_rl.protocols import Unreadable, gqm_prompt
from writing_rl.protocols.gqm import LABELS, Ranking, format_ranking
from writing_rl.protocols.gqm_task import (
    MARGIN_REWARDS,
    answer_terms,
    prompt_type_for,
    read_answer,
    read_gold_ranking,
    tiers,
)
from writing_rl.protocols.prompts import Messages


@dataclass(frozen=True)
class RankingOptions:
    """The reward's reading options (``reward_kwargs`` of ``ranking_accuracy``) and, for JSONL groups,
    how their requests are rendered."""

    prompt_type: str | None = None  # None: the row's extra_info.prompt_type, else from the ground truth
    variant: str = "default"
    require_headers: bool = True
    margin_rewards: tuple[float, ...] = MARGIN_REWARDS
    template: str | None = None  # a GQM template file (JSONL groups)
    system_prompt: str | None = None  # JSONL groups


@dataclass(frozen=True)
class GoldGroup:
    index: Any  # parquet: the row number; JSONL: index, id or the line number
    source: Any  # the input group it came from: its cluster (a parquet row's extra_info.index, else "row N")
    augmentation: str
    messages: Messages
    labels: tuple[str, ...]
    truth_scores: dict[str, int] | None
    truth_ranking: Ranking
    prompt_type: str


def read_groups(path: str | Path, options: RankingOptions) -> list[GoldGroup]:
    groups = _parquet_groups(path, options) if is_parquet(path) else _jsonl_groups(path, options)
    if not groups:
        raise InputError(f"{path}: no groups")
    return groups


def _parquet_groups(path: str | Path, options: RankingOptions) -> list[GoldGroup]:
    groups = []
    for number, (where, row) in enumerate(parquet_rows(path), start=1):
        extra = row.get("extra_info") or {}
        truth = (row.get("reward_model") or {}).get("ground_truth")
        try:
            scores, ranking, labels = read_gold_ranking(truth, extra)
            prompt_type = prompt_type_for(options.prompt_type, extra, scores)
        except ValueError as err:
            raise InputError(f"{where}: reward_model.ground_truth: {err}") from None
        size = extra.get("group_size")
        if size is not None and size != len(labels):
            raise InputError(f"{where}: reward_model.ground_truth ranks {len(labels)} candidates, group_size is {size}")
        messages = [{"role": m.get("role"), "content": m.get("content")} for m in row.get("prompt") or []]
        if not any(m["role"] == "user" and isinstance(m["content"], str) for m in messages):
            raise InputError(f"{where}: prompt: no user message (expected the GQM request as a chat)")
        augmentation = extra.get("augmentation") or "original"
        source = extra["index"] if extra.get("index") is not None else f"row {number}"
        groups.append(GoldGroup(number, source, augmentation, messages, labels, scores, ranking, prompt_type))
    return groups


def _jsonl_groups(path: str | Path, options: RankingOptions) -> list[GoldGroup]:
    template = Path(options.template).read_text(encoding="utf-8") if options.template else None
    if template is not None:
        gqm_prompt.build_prompt(["a", "b"], writing_prompt="check", template=template)  # a bad template fails now
    groups = []
    for where, record, index in indexed_lines(path):
        reader = GroupReader(
            source_key="src_text" if "src_text" in record else "source",
            mt_key="mt_texts" if "mt_texts" in record else "candidates",
        )
        try:
            group = reader.read(record)
        except BadRow as err:
            raise InputError(f"{where}: {err.field}: {err.reason}") from None
        scores, ranking, labels = read_gold_ranking(dict(zip(LABELS, group.scores)))
        prompt_type = prompt_type_for(options.prompt_type, None, scores)
        messages = gqm_prompt.build_messages(
            group.candidates, system=options.system_prompt, prompt_type=prompt_type,
            cot=options.variant != "no_cot", template=template, **group.task,
        )  # fmt: skip
        groups.append(GoldGroup(index, index, "original", messages, labels, scores, ranking, prompt_type))
    return groups


def run_genrm_ranking(
    data: str,
    out_dir: str,
    settings: JudgeSettings,
    options: RankingOptions = RankingOptions(),
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge, write every output, and return the lines to print."""
    groups = read_groups(data, options)
    judgments, judge_section = judge_jobs(
        settings, groups, lambda g: g.messages, lambda text: Judgment(value=text), out_dir, cache, progress
    )
    records = [score_group(group, judgment, options) for group, judgment in zip(groups, judgments)]
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    report = summarise(records, options)
    report["judge"] = judge_section
    out.write_reports(out_dir, report, markdown(report))
    taus = [r["kendall_tau"] for r in records if r["kendall_tau"] is not None]
    plot_line = out.plot(Path(out_dir) / "kendall_tau.png", lambda axes: _tau_histogram(axes, taus))
    return [
        f"pairwise-order accuracy {out.interval(report['pairwise_accuracy'])}, Kendall tau "
        f"{out.interval(report['kendall_tau'])} over {report['groups_read']} of {report['groups']} groups "
        f"({report['sources_read']} of {report['sources']} sources, each weighing the same)",
        f"judge calls {len(groups)}: {out.failures_line(report['failures'])}",
        f"wrote {out_dir}/judgments.jsonl, report.json, report.md",
        plot_line,
    ]


def score_group(group: GoldGroup, judgment: Judgment, options: RankingOptions) -> dict:
    """One line of judgments.jsonl: the reward's terms and tau, or why there are none."""
    record = {
        "index": group.index,
        "source": group.source,
        "augmentation": group.augmentation,
        "candidates": len(group.labels),
        "gold": format_ranking(group.truth_ranking),
        "predicted": None,
        "pairwise_accuracy": None,
        "score_term": None,
        "kendall_tau": None,
        "error": judgment.error,
        "unreadable": None,
    }
    if judgment.error is not None:
        return record
    answer = (
        Unreadable("the judge's reply was cut at its token limit or refused")
        if judgment.value is None
        else read_answer(
            judgment.value,
            group.labels,
            group.prompt_type,
            variant=options.variant,
            require_headers=options.require_headers,
        )  # fmt: skip
    )
    if isinstance(answer, Unreadable):
        record["unreadable"] = str(answer)
        return record
    ranking_term, score_term = answer_terms(answer, group.truth_scores, group.truth_ranking, options.margin_rewards)
    gold, predicted = tiers(group.truth_ranking), tiers(answer.ranking)
    tau = stats.kendall_tau([-gold[x] for x in group.labels], [-predicted[x] for x in group.labels])
    record.update(
        predicted=format_ranking(answer.ranking),
        pairwise_accuracy=ranking_term,
        score_term=score_term,
        kendall_tau=None if np.isnan(tau) else tau,
    )
    return record


def clustered(values: Sequence[float], sources: Sequence[Any]) -> dict[str, float]:
    """The mean over sources of each source's mean value, with the 95% interval from resampling sources
    (``stats.mean_with_ci`` over the per-source means: a cluster bootstrap); ``n`` counts the values (rows),
    ``sources`` their sources."""
    members: dict[Any, list[float]] = {}
    for value, source in zip(values, sources):
        members.setdefault(source, []).append(value)
    summary = stats.mean_with_ci([float(np.mean(v)) for v in members.values()])
    return {**summary, "n": len(values), "sources": len(members)}


def clustered_by(records: Sequence[dict], metric: str, key: str) -> dict[str, dict[str, float]]:
    """``clustered`` of ``metric`` within each value of ``key``, keys in sorted order."""
    cells: dict[Any, list[dict]] = {}
    for record in records:
        cells.setdefault(record[key], []).append(record)
    return {
        str(k): clustered([r[metric] for r in cells[k]], [r["source"] for r in cells[k]])
        for k in sorted(cells, key=lambda k: (not isinstance(k, int), k if isinstance(k, int) else str(k)))
    }


def summarise(records: Sequence[dict], options: RankingOptions) -> dict:
    """Each metric per row, averaged within its source, then across sources (``clustered``)."""
    read = [{**r, "exact": float(r["predicted"] == r["gold"])} for r in records if r["pairwise_accuracy"] is not None]

    def over_sources(metric: str, rows: Sequence[dict] = read) -> dict[str, float]:
        kept = [r for r in rows if r[metric] is not None]
        return clustered([r[metric] for r in kept], [r["source"] for r in kept])

    return {
        "kind": "genrm-ranking",
        "groups": len(records),
        "groups_read": len(read),
        "sources": len({r["source"] for r in records}),
        "sources_read": len({r["source"] for r in read}),
        "options": {
            "prompt_type": options.prompt_type or "per row",
            "variant": options.variant,
            "require_headers": options.require_headers,
            "margin_rewards": list(options.margin_rewards),
        },
        "aggregation": "per row, averaged within each source group, then across sources; intervals resample sources",
        "pairwise_accuracy": over_sources("pairwise_accuracy"),
        "score_term": over_sources("score_term"),
        "reward": over_sources(
            "reward", [{**r, "reward": r["pairwise_accuracy"] + (r["score_term"] or 0.0)} for r in read]
        ),
        "exact_ranking": over_sources("exact"),
        "kendall_tau": over_sources("kendall_tau"),
        "tau_undefined": sum(r["kendall_tau"] is None for r in read),
        "by_group_size": clustered_by(read, "pairwise_accuracy", "candidates"),
        "by_augmentation": clustered_by(read, "pairwise_accuracy", "augmentation"),
        "failures": out.failures(
            sum(r["error"] is not None for r in records),
            sum(r["unreadable"] is not None for r in records),
            len(records),
        ),
    }


def _tau_histogram(axes, taus: Sequence[float]) -> None:
    axes.hist(taus, bins=np.linspace(-1, 1, 21), color="#316eb4", edgecolor="white")
    axes.set_xlim(-1, 1)
    axes.set_title("Kendall tau between the gold and the predicted ranking, per group")
    axes.set_xlabel("Kendall tau-b")
    axes.set_ylabel("groups")


def markdown(report: dict) -> str:
    rows = [
        ("pairwise-order accuracy (the reward's ranking term)", report["pairwise_accuracy"]),
        ("score term (margin rewards)", report["score_term"]),
        ("reward (ranking + score term)", report["reward"]),
        ("exact ranking", report["exact_ranking"]),
        ("Kendall tau-b", report["kendall_tau"]),
    ]
    options = report["options"]
    return "\n".join(
        [
            "# GQM GenRM ranking accuracy",
            "",
            f"{report['groups_read']} of {report['groups']} groups read, from {report['sources_read']} of "
            f"{report['sources']} source groups (prompt type {options['prompt_type']}, variant {options['variant']}, "
            f"headers {'required' if options['require_headers'] else 'optional'}). Each metric is computed per "
            "group, averaged over the groups of one source (the original and its augmented shuffles and "
            "subgroups), then over sources, so every source weighs the same; the 95% bootstrap intervals "
            "resample sources.",
            "",
            out.markdown_table(
                ["metric", "groups", "sources", "mean [95% CI]"],
                [(m, s["n"], s["sources"], out.interval(s)) for m, s in rows],
            ),
            "",
            f"- Kendall tau undefined (every candidate tied in the gold or the predicted ranking): "
            f"{report['tau_undefined']} of {report['groups_read']} groups",
            f"- {out.failures_line(report['failures'])}",
            "",
            "## Pairwise-order accuracy by group size and by augmentation",
            "",
            out.markdown_table(
                ["group", "groups", "sources", "accuracy [95% CI]"],
                [
                    (f"{size} candidates", s["n"], s["sources"], out.interval(s))
                    for size, s in report["by_group_size"].items()
                ]
                + [(kind, s["n"], s["sources"], out.interval(s)) for kind, s in report["by_augmentation"].items()],
            ),
        ]
    )
