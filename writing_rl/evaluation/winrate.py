"""``writing-rl eval winrate``: the policy's pairwise win rate against a baseline system or the references.

A response with no answer loses without a judge call, as in training (``NO_ANSWER``); such prompts count in the raw
win rate, not in the length-controlled one (``summarise`` says why). **Inconsistent**: the two orders give the policy
different outcomes, as ``order-references`` counts it. The rates and the report: docs/evaluation.md, Win rate.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.inputs import (
    InputError,
    dump_matcher,
    is_parquet,
    lines,
    parquet_rows,
    require_fields,
    responses_by_index,
)
from writing_rl.evaluation.report import rate, write_jsonl
from writing_rl.offline.files import field_value
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols import strip_think
from writing_rl.protocols.comparison import POINTS, SLOTS, agreed, comparison_messages, consistency, outcome
from writing_rl.protocols.pairwise_task import read_writing_rl_task
from writing_rl.protocols.prompts import Messages, format_criteria, load_template
from writing_rl.settings import ConfigError

LENGTH_UNIT = "characters"
ORDERS = SLOTS  # the policy's slot: first, then second
# (policy has no answer, baseline has none) -> (who had none, the policy's outcome)
NO_ANSWER = {(True, False): ("policy", "loss"), (False, True): ("baseline", "win"), (True, True): ("both", "tie")}


@dataclass(frozen=True)
class WinRatePrompt:
    index: Any
    query: str  # the prompt text (``query``: what the verl-dump matcher looks for in a dump's input)
    criteria: str | None
    reference: str | None  # the best reference (the last of the row's target)
    domain: str


@dataclass(frozen=True)
class PolicyBaselinePair:
    """The policy's and the baseline's answers to one prompt."""

    item: WinRatePrompt
    policy: str | None  # the answer (reasoning dropped); None: the response has none
    baseline: str | None


@dataclass(frozen=True)
class Job:
    pair: PolicyBaselinePair
    slot: str  # the policy's slot, "A" or "B"


def read_winrate_prompts(path: str | Path, domain_key: str = "data_source") -> dict[Any, WinRatePrompt]:
    """The prompts by index, from a Writing-RL parquet (a file or directory) or a JSONL."""
    items: dict[Any, WinRatePrompt] = {}
    for where, record in _parquet_prompts(path) if is_parquet(path) else _jsonl_prompts(path):
        index, item = record
        if index in items:
            raise InputError(f"{where}: index {index!r} appears twice")
        domain = field_value(item, domain_key)
        items[index] = WinRatePrompt(
            index, item["prompt"], item["criteria"], item["reference"], str(domain or "unknown")
        )
    if not items:
        raise InputError(f"{path}: no prompts")
    return items


def _parquet_prompts(path: str | Path):
    for position, (where, row) in enumerate(parquet_rows(path)):
        extra = row.get("extra_info") or {}
        try:
            task = read_writing_rl_task((row.get("reward_model") or {}).get("ground_truth"), extra)
        except ValueError as err:
            raise InputError(f"{where}: {err}") from None
        index = task.id if task.id is not None else extra.get("index", position)
        fields = {"prompt": task.prompt, "criteria": task.criteria, "reference": task.references[-1]}
        yield where, (index, {**row, **fields})


def _jsonl_prompts(path: str | Path):
    for where, record in lines(path):
        require_fields(record, ("index", "prompt"), where)
        if not isinstance(record["prompt"], str) or not record["prompt"].strip():
            raise InputError(f"{where}: prompt must be a non-empty string")
        references = record.get("reference")
        references = [references] if isinstance(references, str) else references or []
        if not isinstance(references, list) or not all(isinstance(r, str) and r.strip() for r in references):
            raise InputError(f"{where}: reference must be a non-empty string or a list of them (easiest first)")
        try:
            criteria = format_criteria(record.get("criteria"))
        except ValueError as err:
            raise InputError(f"{where}: criteria {err}") from None
        fields = {"prompt": record["prompt"], "criteria": criteria, "reference": references[-1] if references else None}
        yield where, (record["index"], {**record, **fields})


def pair_up(
    items: dict[Any, WinRatePrompt], policy: dict[Any, str], baseline: dict[Any, str] | None
) -> tuple[list[PolicyBaselinePair], int]:
    """The prompts that have a policy response and a baseline (prompt order), and how many have no baseline."""
    pairs, missing = [], 0
    for index, item in items.items():
        if index not in policy:
            continue
        if baseline is None:
            pairs.append(PolicyBaselinePair(item, strip_think(policy[index]), item.reference))
        elif index in baseline:
            pairs.append(PolicyBaselinePair(item, strip_think(policy[index]), strip_think(baseline[index])))
        else:
            missing += 1
    return pairs, missing


def job_messages(job: Job, template: str | None = None) -> Messages:
    pair = job.pair
    return comparison_messages(
        pair.item.query, pair.policy, pair.baseline, job.slot, criteria=pair.item.criteria, template=template
    )


def run_winrate(
    prompts: str,
    responses: str,
    out_dir: str,
    settings: JudgeSettings,
    *,
    baseline: str | None = None,
    against_reference: bool = False,
    domain_key: str = "data_source",
    step: int | None = None,
    baseline_step: int | None = None,
    template: str | None = None,
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge, write every output, and return the lines to print."""
    if (baseline is None) == (not against_reference):
        raise ConfigError(
            "give exactly one baseline: --baseline FILE (another system's responses) or --against-reference "
            "(each prompt's best reference)"
        )
    settings = replace(settings, template=template) if template else settings
    if settings.template:
        load_template(settings.template)  # a template without the response slots fails before any call
    items = read_winrate_prompts(prompts, domain_key)
    if against_reference:
        no_reference = [index for index, item in items.items() if item.reference is None]
        if no_reference:
            raise InputError(f"{prompts}: no reference for index {no_reference[0]!r} (--against-reference needs one)")
    match = dump_matcher(items)
    policy = responses_by_index(responses, items, match, step)
    other = responses_by_index(baseline, items, match, baseline_step) if baseline else None
    pairs, without_baseline = pair_up(items, policy, other)
    if not pairs:
        raise InputError(f"{baseline}: no prompt has both a policy response and a response here")
    jobs = [
        Job(pair, slot) for pair in pairs if pair.policy is not None and pair.baseline is not None for slot in ORDERS
    ]
    build = partial(job_messages, template=settings.template)
    judgments, judge_section = judge_jobs(settings, jobs, build, verdict_judgment, out_dir, cache, progress)
    records = prompt_records(pairs, jobs, judgments)
    write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    report = summarise(records, len(items), len(policy), without_baseline, judgments)
    report["baseline"] = "references (the best, last of target)" if against_reference else str(baseline)
    report["judge"] = judge_section
    out.write_reports(out_dir, report, markdown(report))
    return [
        *summary_lines(report),
        f"wrote {out_dir}/judgments.jsonl, report.json, report.md",
        plot_win_rates(out_dir, report),
    ]


def prompt_records(
    pairs: Sequence[PolicyBaselinePair], jobs: Sequence[Job], judgments: Sequence[Judgment]
) -> list[dict]:
    """One record per prompt: the verdict and the policy's outcome in each order, and the prompt's outcome
    (None when an order failed or was unreadable: left out of every rate)."""
    by_pair: dict[int, dict[str, Judgment]] = {}
    for job, judgment in zip(jobs, judgments):
        by_pair.setdefault(id(job.pair), {})[job.slot] = judgment
    return [_record(pair, by_pair.get(id(pair), {})) for pair in pairs]


def _record(pair: PolicyBaselinePair, orders: dict[str, Judgment]) -> dict:
    lengths = {"policy_chars": len(pair.policy or ""), "baseline_chars": len(pair.baseline or "")}
    record = {"index": pair.item.index, "domain": pair.item.domain, **lengths}
    if pair.policy is None or pair.baseline is None:  # no answer: scored without a judge call, as in training
        side, result = NO_ANSWER[(pair.policy is None, pair.baseline is None)]
        return {**record, "status": "no_answer", "no_answer": side, "outcome": result}
    verdicts = {slot: _verdict(orders[slot]) for slot in ORDERS}
    outcomes = [outcome(orders[slot].verdict, slot) if orders[slot].verdict else None for slot in ORDERS]
    record.update(policy_first=verdicts["A"], policy_second=verdicts["B"], outcomes=outcomes)
    if None in outcomes:
        failed = [orders[slot] for slot in ORDERS if orders[slot].verdict is None]
        return {**record, "status": "judge_error" if any(j.error for j in failed) else "unreadable", "outcome": None}
    consistent = consistency(outcomes, len(ORDERS)) == 1
    return {**record, "status": "judged", "outcome": agreed(outcomes), "consistent": consistent}


def _verdict(judgment: Judgment) -> str:
    return judgment.verdict or (f"error: {judgment.error}" if judgment.error else "unreadable")


def summarise(records: list[dict], prompts: int, responses: int, without_baseline: int, judgments) -> dict:
    scored = [r for r in records if r["outcome"] is not None]
    values = [POINTS[r["outcome"]] for r in scored]
    decided = [r for r in scored if r["status"] == "judged"]
    counts = Counter(r["outcome"] for r in scored)
    inconsistent = [r for r in decided if not r["consistent"]]
    # decided: judged in both orders. Lengths and the length-controlled fit use only these: a missing
    # answer is not a short one, and its outcome is not the judge's
    lengths = {side: [r[f"{side}_chars"] for r in decided] for side in ("policy", "baseline")}
    domains = stats.by_group(values, [r["domain"] for r in scored])
    for domain, entry in domains.items():
        found = Counter(r["outcome"] for r in scored if r["domain"] == domain)
        entry.update(wins=found["win"], ties=found["tie"], losses=found["loss"])
    no_answer = Counter(r["no_answer"] for r in scored if r["status"] == "no_answer")
    left_out = len(records) - len(scored)
    return {
        "kind": "winrate",
        "points": POINTS,
        "win_rate": stats.mean_with_ci(values),
        "length_controlled_win_rate": (
            stats.length_controlled_winrate(
                [POINTS[r["outcome"]] for r in decided], [p - b for p, b in zip(*lengths.values())]
            )
            if decided
            else float("nan")
        ),
        "length_controlled_prompts": len(decided),
        "length_unit": LENGTH_UNIT,
        "mean_length": {side: sum(v) / len(v) if v else float("nan") for side, v in lengths.items()},
        "counts": {"wins": counts["win"], "ties": counts["tie"], "losses": counts["loss"]},
        "inconsistency": {
            "rate": len(inconsistent) / len(decided) if decided else float("nan"),
            "prompts": len(inconsistent),
            "flips": sum(set(r["outcomes"]) == {"win", "loss"} for r in inconsistent),
            "judged_in_both_orders": len(decided),
        },
        "by_order": {
            name: stats.mean_with_ci([POINTS[r["outcomes"][k]] for r in decided])
            for k, name in enumerate(("policy_first", "policy_second"))
        },
        "prompts": {
            "in_file": prompts,
            "with_policy_response": responses,
            "without_baseline": without_baseline,
            "scored": len(scored),
        },
        "failures": {
            **out.failures(
                sum(j.error is not None for j in judgments), sum(j.parse_failure for j in judgments), len(judgments)
            ),
            "prompts_left_out": left_out,
        },
        "no_answer": {
            "policy": no_answer["policy"],
            "baseline": no_answer["baseline"],
            "both": no_answer["both"],
            "share": out.share(sum(no_answer.values()), len(scored)),
        },
        "domains": domains,
    }


def summary_lines(report: dict) -> list[str]:
    counts, failures, inconsistency = report["counts"], report["failures"], report["inconsistency"]
    lines = [
        f"win rate {out.interval(report['win_rate'])} over {report['prompts']['scored']} prompts "
        f"(win 1, tie 0.5, loss 0); length-controlled {rate(report['length_controlled_win_rate'])} over the "
        f"{report['length_controlled_prompts']} judged prompts (no answer: {rate(report['no_answer']['share'])} "
        "of the scored prompts, left out of the length-controlled rate)",
        f"wins {counts['wins']}, ties {counts['ties']}, losses {counts['losses']}; inconsistent orders "
        f"{inconsistency['prompts']} of {inconsistency['judged_in_both_orders']} ({inconsistency['flips']} flips)",
        f"judge calls {report['judge']['calls']}: {out.failures_line(failures)}; prompts left out "
        f"{failures['prompts_left_out']}",
    ]
    if failures["judge_error"]:
        lines.append("rerun the same command to retry only the failed calls (answered calls come from the cache)")
    return lines


def markdown(report: dict) -> str:
    counts, inconsistency, lengths = report["counts"], report["inconsistency"], report["mean_length"]
    prompts, failures, no_answer = report["prompts"], report["failures"], report["no_answer"]
    domains = report["domains"]
    return "\n".join(
        [
            f"# Win rate against {report['baseline']}",
            "",
            f"Win rate: **{out.interval(report['win_rate'])}** over {prompts['scored']} prompts (95% bootstrap "
            "CI). Each prompt is judged in both orders: a win when the policy wins both, a loss when it loses "
            "both, otherwise a tie; rates count a win 1, a tie 0.5, a loss 0.",
            "",
            f"Length-controlled win rate: **{rate(report['length_controlled_win_rate'])}** over "
            f"{report['length_controlled_prompts']} judged prompts (logistic fit on tanh of the standardised "
            f"length difference, policy minus baseline, in {report['length_unit']}; the win rate at equal "
            f"lengths, as AlpacaEval-LC). Mean length over the judged prompts: policy "
            f"{rate(lengths['policy'])}, baseline {rate(lengths['baseline'])}.",
            "",
            f"No answer: {rate(no_answer['share'])} of the scored prompts (policy {no_answer['policy']}, "
            f"baseline {no_answer['baseline']}, both {no_answer['both']}). They are scored without a judge call, "
            "as in training, and count in the raw win rate (the policy's: a loss, the baseline's: a win, both: "
            "a tie) and in the per-domain rates, but not in the length-controlled win rate, the per-order "
            "rates or the inconsistency, which take only the prompts the judge decided in both orders.",
            "",
            out.markdown_table(
                ["wins", "ties", "losses", "inconsistent orders", "flips (win one order, loss the other)"],
                [
                    (
                        counts["wins"],
                        counts["ties"],
                        counts["losses"],
                        f"{inconsistency['prompts']} of {inconsistency['judged_in_both_orders']} "
                        f"({rate(inconsistency['rate'])})",
                        inconsistency["flips"],
                    )
                ],
            ),  # fmt: skip
            "",
            out.markdown_table(
                ["domain", "prompts", "wins", "ties", "losses", "win rate [95% CI]"],
                [(d, s["n"], s["wins"], s["ties"], s["losses"], out.interval(s)) for d, s in domains.items()],
            ),
            "",
            "Per order (policy shown first / second): "
            + " / ".join(out.interval(report["by_order"][k]) for k in ("policy_first", "policy_second")),
            "",
            f"Left out of every rate: {failures['prompts_left_out']} prompts with a failed or unreadable order "
            f"(judge calls: {out.failures_line(failures)}); {prompts['without_baseline']} prompts without a "
            "baseline response.",
        ]
    )


def plot_win_rates(out_dir: str | Path, report: dict) -> str:
    if not report["prompts"]["scored"]:
        return "plot skipped: no prompt was scored"
    labels = ["overall", *report["domains"]]
    values = [report["win_rate"], *report["domains"].values()]

    def draw(axes) -> None:
        out.bar_plot_with_intervals(axes, labels, values, "Win rate against the baseline (95% CI)", "win rate")
        axes.axhline(0.5, color="#888888", linestyle="--", linewidth=1)
        axes.set_ylim(0, 1)

    return out.plot(Path(out_dir) / "winrate.png", draw)
