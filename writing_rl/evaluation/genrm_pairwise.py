"""``writing-rl eval genrm-pairwise``: a pairwise GenRM's accuracy on labelled preference pairs.

A pref-rl row is sent as built, so the GenRM sees the request it was trained or is evaluated on, whatever template
built it. Its label (``reward_model.ground_truth``: the chosen response's slot) is its order; the builder writes a
pair's two orders as two rows sharing ``extra_info.index`` (``--no-swap``: one row, judged in that order only); tie
rows are skipped and counted. Only a request in the built-in layout gives back the texts, so the length difference
of a pair built with another template is unknown. The report: docs/evaluation.md, GenRM accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.inputs import InputError, indexed_lines, is_parquet, parquet_rows, require_fields
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols.comparison import SLOTS, comparison_messages, outcome, shown
from writing_rl.protocols.prompts import (
    PAIRWISE_SYSTEM,
    Messages,
    load_template,
    read_pairwise_request,
)

LENGTH_EDGES = (100, 500)
ORDERS = ("chosen_first", "chosen_second")  # the chosen response shown as A, then as B
CHOSEN_SLOT = dict(zip(ORDERS, SLOTS))
PICKED = {"win": "chosen", "loss": "rejected", "tie": "tie"}  # the chosen response's outcome -> what was picked


@dataclass(frozen=True)
class PreferencePair:
    """A prompt with a chosen and a rejected response, as the evaluation's input holds it."""

    index: Any
    prompt: str | None  # None: a pref-rl row in another layout than the built-in one (texts unknown)
    chosen: str | None
    rejected: str | None
    system: str | None = PAIRWISE_SYSTEM

    @property
    def length_difference(self) -> int | None:
        if self.chosen is None or self.rejected is None:
            return None
        return len(self.chosen) - len(self.rejected)


@dataclass(frozen=True, eq=False)
class PreferenceCall:
    """One judge call: a preference pair shown in one order (the chosen response as A or as B)."""

    pair: PreferencePair
    order: str  # one of ORDERS
    built: Messages | None = None  # a pref-rl row's own messages, sent as they are

    def messages(self, template: str | None) -> Messages:
        """The row's messages as built; a JSONL pair rendered with ``template`` (None: the built-in prompt)."""
        if self.built is not None:
            return self.built
        pair = self.pair
        slot = CHOSEN_SLOT[self.order]
        return comparison_messages(pair.prompt, pair.chosen, pair.rejected, slot, template=template, system=pair.system)

    def picked(self, judgment: Judgment) -> str | None:
        """Which response the verdict prefers: chosen, rejected or tie (None: nothing read)."""
        if judgment.verdict is None:
            return None
        return PICKED[outcome(judgment.verdict, CHOSEN_SLOT[self.order])]


@dataclass(frozen=True)
class PairInput:
    pairs: list[PreferencePair]
    calls: list[PreferenceCall]
    ties_skipped: int
    built: bool  # pref-rl rows, sent as built (else JSONL pairs, rendered)


def read_pairs(path: str | Path) -> PairInput:
    """The pairs and judge calls of a pref-rl parquet (a file or directory) or a JSONL, and how many tie
    pairs were skipped."""
    if is_parquet(path):
        return _parquet_pairs(path)
    pairs = []
    for where, record, index in indexed_lines(path):
        require_fields(record, ("prompt", "chosen", "rejected"), where)
        for name in ("prompt", "chosen", "rejected"):
            if not isinstance(record[name], str) or not record[name].strip():
                raise InputError(f"{where}: {name} must be a non-empty string, got {type(record[name]).__name__}")
        if record["chosen"].strip() == record["rejected"].strip():
            raise InputError(f"{where}: rejected is identical to chosen (no preference to judge)")
        pairs.append(PreferencePair(index, record["prompt"], record["chosen"], record["rejected"]))
    if not pairs:
        raise InputError(f"{path}: no pairs")
    return PairInput(pairs, [PreferenceCall(pair, order) for pair in pairs for order in ORDERS], 0, built=False)


def _parquet_pairs(path: str | Path) -> PairInput:
    pairs: dict[Any, PreferencePair] = {}
    asked: list[tuple[Any, str, Messages]] = []  # (pair, order, the row's messages), in row order
    rows_of: dict[tuple[Any, str], str] = {}  # (pair, order) -> the row holding it
    ties: set[Any] = set()
    for where, row in parquet_rows(path):
        extra = row.get("extra_info") or {}
        if extra.get("output_format", "verdict") != "verdict":
            raise InputError(
                f"{where}: extra_info.output_format is {extra['output_format']!r}; genrm-pairwise judges verdict "
                "rows (pref-rl --output-format verdict) or a JSONL of {prompt, chosen, rejected}"
            )
        label = str((row.get("reward_model") or {}).get("ground_truth") or "").strip().strip("[]")
        if label not in ("A", "B", "C"):
            raise InputError(f"{where}: reward_model.ground_truth must be the label A, B or C, got {label!r}")
        messages = [{"role": m.get("role"), "content": m.get("content")} for m in row.get("prompt") or []]
        users = [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]
        if not users:
            raise InputError(f"{where}: prompt: no user message (expected the pairwise judge request as a chat)")
        index = extra["index"] if extra.get("index") is not None else where
        if label == "C":
            ties.add(index)
            continue
        order = ORDERS[SLOTS.index(label)]
        if (index, order) in rows_of:
            raise InputError(
                f"{where}: extra_info.index {index!r} already has a row with the chosen response as {label} "
                f"({rows_of[index, order].rsplit(':', 1)[1].strip()})"
            )
        rows_of[index, order] = where
        request = read_pairwise_request(users[-1])  # None: another layout than the built-in one
        if request is None:
            pair = PreferencePair(index, None, None, None, None)
        else:
            chosen, rejected = shown(request[1], request[2], label)  # the chosen response is in slot `label`
            pair = PreferencePair(index, request[0], chosen, rejected, None)
        known = pairs.setdefault(index, pair)
        if known != pair and None not in (known.prompt, pair.prompt):  # the other order: the same texts
            raise InputError(f"{where}: extra_info.index {index!r} holds another pair than an earlier row")
        if known.prompt is None and pair.prompt is not None:
            pairs[index] = pair
        asked.append((index, order, messages))
    if not pairs:
        raise InputError(f"{path}: no pair with a chosen response ({len(ties)} tie pairs)")
    calls = [PreferenceCall(pairs[index], order, messages) for index, order, messages in asked]
    return PairInput(list(pairs.values()), calls, len(ties), built=True)


def run_genrm_pairwise(
    data: str,
    out_dir: str,
    settings: JudgeSettings,
    template: str | None = None,
    length_edges: Sequence[int] = LENGTH_EDGES,
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge, write every output, and return the lines to print. ``template`` renders JSONL pairs (None: the
    built-in pairwise prompt; ``settings.template``, the policy reward's, is not used); pref-rl rows are
    sent as built, so a template with them is an error."""
    given = read_pairs(data)
    if given.built and template:
        raise InputError(
            f"{data}: --template renders JSONL pairs; pref-rl rows are judged with the request they hold (rebuild "
            "them with build_parquet.py pref-rl --template to change it)"
        )
    if template:
        load_template(template)  # a template without both response placeholders fails before any call
    pairs, calls = given.pairs, given.calls
    judgments, judge_section = judge_jobs(
        settings, calls, lambda c: c.messages(template), verdict_judgment, out_dir, cache, progress
    )
    records = [judgment_record(call, judgment) for call, judgment in zip(calls, judgments)]
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    report = summarise(pairs, records, tuple(length_edges))
    report["requests"] = (
        "pref-rl rows, sent as built" if given.built else f"template {template}" if template else "built-in prompt"
    )
    report["tie_pairs_skipped"] = given.ties_skipped
    report["judge"] = judge_section
    out.write_reports(out_dir, report, markdown(report))
    buckets = {k: v for k, v in report["length_buckets"]["accuracy"].items() if v["n"]}
    plot_line = out.plot(
        Path(out_dir) / "length_buckets.png",
        lambda axes: out.bar_plot_with_intervals(
            axes, list(buckets), list(buckets.values()), "GenRM accuracy by len(chosen) - len(rejected)", "accuracy"
        ),
    )
    rate, orders = out.rate, report["orders"]
    return [
        f"accuracy {out.interval(report['accuracy'])} over {report['pairs']} pairs (chosen first "
        f"{rate(orders['chosen_first']['accuracy'])}, chosen second {rate(orders['chosen_second']['accuracy'])})",
        f"position consistency {rate(report['position_consistency']['rate'])}, tie rate {rate(report['tie_rate'])}",
        f"judge calls {len(calls)}: {out.failures_line(report['failures'])}",
        f"wrote {out_dir}/judgments.jsonl, report.json, report.md",
        plot_line,
    ]


def judgment_record(call: PreferenceCall, judgment: Judgment) -> dict:
    """One line of judgments.jsonl."""
    picked = call.picked(judgment)
    return {
        "index": call.pair.index,
        "order": call.order,
        "verdict": judgment.verdict,
        "picked": picked,
        "correct": None if picked is None else picked == "chosen",
        "error": judgment.error,
        "unreadable": judgment.parse_failure,
        "length_difference": call.pair.length_difference,
    }


def summarise(pairs: Sequence[PreferencePair], records: Sequence[dict], edges: tuple[int, ...]) -> dict:
    by_pair: dict[Any, dict[str, dict]] = {}
    for record in records:
        by_pair.setdefault(record["index"], {})[record["order"]] = record
    read = [r for r in records if r["picked"] is not None]
    difference = {p.index: p.length_difference for p in pairs}
    # per pair with at least one verdict read: (right verdicts, verdicts read, length bucket or None)
    tally = [
        (
            sum(bool(r["correct"]) for r in mine.values()),
            sum(r["picked"] is not None for r in mine.values()),
            None if difference[index] is None else bucket_of(difference[index], edges),
        )
        for index, mine in by_pair.items()
    ]
    tally = [t for t in tally if t[1]]
    both = [  # pairs judged in both orders, both verdicts read
        pair
        for pair in by_pair.values()
        if len(pair) == len(ORDERS) and all(r["picked"] is not None for r in pair.values())
    ]
    return {
        "kind": "genrm-pairwise",
        "pairs": len(pairs),
        "accuracy": stats.ratio_with_ci([t[0] for t in tally], [t[1] for t in tally]),
        "orders": {order: _order_stats([r for r in records if r["order"] == order]) for order in ORDERS},
        "both_orders_correct": _share([p[ORDERS[0]]["correct"] and p[ORDERS[1]]["correct"] for p in both]),
        "position_consistency": _share([p[ORDERS[0]]["picked"] == p[ORDERS[1]]["picked"] for p in both]),
        "tie_rate": out.share(sum(r["picked"] == "tie" for r in read), len(read)),
        "length_buckets": {
            "difference": "len(chosen) - len(rejected) in characters; a bucket holds |d| in (low, high]",
            "edges": list(edges),
            "accuracy": {
                name: stats.ratio_with_ci([t[0] for t in tally if t[2] == name], [t[1] for t in tally if t[2] == name])
                for name in bucket_names(edges)
            },
            "unknown": sum(t[2] is None for t in tally),  # pairs read, requests in another layout than the built-in
        },
        "failures": out.failures(
            sum(r["error"] is not None for r in records), sum(r["unreadable"] for r in records), len(records)
        ),
    }


def _order_stats(records: Sequence[dict]) -> dict:
    read = [r for r in records if r["picked"] is not None]
    return {
        "accuracy": out.share(sum(r["correct"] for r in read), len(read)),
        "read": len(read),
        "ties": sum(r["picked"] == "tie" for r in read),
    }


def _share(flags: Sequence[bool]) -> dict:
    return {"rate": out.share(sum(map(bool, flags)), len(flags)), "pairs": len(flags)}


def bucket_names(edges: Sequence[int]) -> list[str]:
    """Shortest difference first: ``chosen shorter by >500``, ..., ``within ±100``, ..., ``chosen longer by >500``."""
    spans = [f"{low}-{high}" for low, high in zip(edges, edges[1:])] + [f">{edges[-1]}"]
    return (
        [f"chosen shorter by {s}" for s in reversed(spans)]
        + [f"within ±{edges[0]}"]
        + [f"chosen longer by {s}" for s in spans]
    )


def bucket_of(difference: int, edges: Sequence[int]) -> str:
    names = bucket_names(edges)
    above = sum(abs(difference) > edge for edge in edges)  # 0: within the first edge
    middle = len(edges)
    return names[middle + above if difference > 0 else middle - above]


def markdown(report: dict) -> str:
    orders, buckets = report["orders"], report["length_buckets"]
    failures = report["failures"]
    rows = [
        ("both orders", sum(s["read"] for s in orders.values()), out.interval(report["accuracy"])),
        *((order.replace("_", " "), s["read"], out.rate(s["accuracy"])) for order, s in orders.items()),
    ]
    return "\n".join(
        [
            "# Pairwise GenRM accuracy",
            "",
            f"{report['pairs']} labelled pairs ({report['tie_pairs_skipped']} tie pairs skipped), judged with the "
            f"chosen response first and second (requests: {report['requests']}). Accuracy over both orders with "
            "its 95% bootstrap interval (pairs resampled); a tie verdict is wrong.",
            "",
            out.markdown_table(["order", "verdicts read", "accuracy"], rows),
            "",
            f"- both orders correct: {out.rate(report['both_orders_correct']['rate'])} "
            f"of {report['both_orders_correct']['pairs']} pairs read in both orders",
            f"- position consistency (both verdicts name the same response, or both are ties): "
            f"{out.rate(report['position_consistency']['rate'])}",
            f"- tie rate: {out.rate(report['tie_rate'])}",
            f"- {out.failures_line(failures)}",
            "",
            f"## By length difference (d = {buckets['difference']})",
            "",
            out.markdown_table(
                ["bucket", "pairs", "accuracy [95% CI]"],
                [(name, s["n"], out.interval(s)) for name, s in buckets["accuracy"].items()],
            ),
            *(
                [f"\n{buckets['unknown']} pairs left out: their requests are in another layout than the built-in one"]
                if buckets["unknown"]
                else []
            ),
        ]
    )
