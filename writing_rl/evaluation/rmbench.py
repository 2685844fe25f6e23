"""``writing-rl eval rmbench``: a GenRM on RM-Bench (THU-KEG), whose prompts each carry three chosen and three
rejected answers in three styles, scored by RM-Bench's 3×3 style matrix (scripts/utils.py ``compute_accuracy``).

RM-Bench ships no generative path, so both ways of judging are ours: ``pairwise`` judges each of the nine
(chosen, rejected) pairs in both orders with our pairwise GenRM's prompt and reader; ``rated`` rates each of the
six answers alone (``ratings``) and compares the ratings as RM-Bench compares reward scores. The rules, the
choices and the report: docs/judge-benchmarks.md, RM-Bench.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.genrm_pairwise import ORDERS, PreferenceCall, PreferencePair
from writing_rl.evaluation.inputs import InputError, is_parquet, lines, parquet_rows
from writing_rl.evaluation.ratings import READERS, UNRATED, rating_messages, read_rating
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, Messages, load_template

STYLES = ("concise", "detailed_plain", "detailed_markdown")  # the order of every chosen and rejected list
DOMAINS = ("chat", "math", "code", "safety")  # split_dataset_by_domain's, matched by prefix: safety-* pooled
NO_DOMAIN = "all"  # rows without a domain (RM-Bench's per-domain files): one matrix
GENRMS = ("pairwise", "rated")
VOTE = {"chosen": 1, "rejected": -1, "tie": 0, None: 0}  # None: a reply with no verdict


@dataclass(frozen=True)
class RMBenchItem:
    row: int  # its place in the file, from 1 (RM-Bench's ids repeat across domains)
    id: Any
    domain: str | None  # as the file spells it (safety-refuse, safety-response, ...)
    prompt: str
    chosen: tuple[str, ...]  # one answer per style, in STYLES order
    rejected: tuple[str, ...]

    @property
    def group(self) -> str:
        return group_of(self.domain)


def group_of(domain: str | None) -> str:
    """The domain a row is scored in: the first of DOMAINS its own starts with (NO_DOMAIN: none given)."""
    return NO_DOMAIN if domain is None else next(d for d in DOMAINS if domain.startswith(d))


@dataclass(frozen=True)
class PairCall:
    item: RMBenchItem
    chosen: int  # style index of the chosen answer
    rejected: int
    call: PreferenceCall


@dataclass(frozen=True)
class RatingCall:
    item: RMBenchItem
    side: str  # chosen or rejected
    style: int
    messages: Messages

    @property
    def answer(self) -> str:
        return getattr(self.item, self.side)[self.style]


def read_items(path: str | Path) -> list[RMBenchItem]:
    """The rows of an RM-Bench file: a JSON list (as published), JSONL or parquet. A bad row fails naming it."""
    items: list[RMBenchItem] = []
    first_domain: tuple[str, bool] | None = None  # (row, has a domain): every row must agree with the first
    for number, (where, row) in enumerate(_rows(path), start=1):
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected an object, got {type(row).__name__}")
        given_id = row.get("id")
        if given_id is not None:
            if isinstance(given_id, bool) or not isinstance(given_id, (int, str)):
                raise InputError(f"{where}: id must be an integer or a string, got {_shown(given_id)}")
            where = f"{where} (id {given_id!r})"
        domain = row.get("domain")
        first_domain = first_domain or (where, domain is not None)
        if (domain is not None) != first_domain[1]:
            has, lacks = (where, first_domain[0]) if domain is not None else (first_domain[0], where)
            raise InputError(f"{where}: domain: {has} has one and {lacks} has none; give every row a domain or none")
        if domain is not None and not (isinstance(domain, str) and domain.startswith(DOMAINS)):
            raise InputError(
                f"{where}: domain must start with {', '.join(DOMAINS)} (RM-Bench's: chat, code, math, "
                f"safety-refuse, safety-response), got {domain!r:.60}"
            )
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError(f"{where}: prompt must be a non-empty string, got {_shown(prompt)}")
        answers = [_styled(row.get(name), name, where) for name in ("chosen", "rejected")]
        items.append(RMBenchItem(number, f"row {number}" if given_id is None else given_id, domain, prompt, *answers))
    if not items:
        raise InputError(f"{path}: no rows")
    return items


def _rows(path: str | Path) -> Iterable[tuple[str, Any]]:
    if is_parquet(path):
        return parquet_rows(path)
    text = Path(path).read_text(encoding="utf-8")
    if not text.lstrip().startswith("["):
        return lines(path)
    try:
        rows = json.loads(text)
    except ValueError as err:
        raise InputError(f"{path}: not valid JSON ({err})") from None
    return ((f"{path}: row {n}", row) for n, row in enumerate(rows, start=1))


def _styled(value: Any, name: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != 3 or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: {name} must be a list of 3 strings ({', '.join(STYLES)}), got {_shown(value)}")
    return tuple(value)


def _shown(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {value!r:.60}"


def run_rmbench(
    data: str,
    out_dir: str,
    settings: JudgeSettings,
    genrm: str = "pairwise",
    reader: str = "rating",
    template: str | None = None,
    system_prompt: str | None = None,
    seed: int = 0,
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge, write every output, and return the lines to print. ``template``/``system_prompt``: the pairwise
    prompt file and system message (pairwise), or the rating prompt's (rated); None: the built-in ones."""
    if genrm not in GENRMS:
        raise InputError(f"--genrm must be one of {', '.join(GENRMS)}, got {genrm!r}")
    items = read_items(data)
    if genrm == "pairwise":
        try:
            load_template(template) if template else None  # a template without both responses fails before any call
        except ValueError as err:
            raise InputError(str(err)) from None
        system = system_prompt or PAIRWISE_SYSTEM
        calls: list = [
            PairCall(item, i, j, PreferenceCall(PreferencePair((item.row, i, j), item.prompt, c, r, system), order))
            for item in items
            for i, c in enumerate(item.chosen)
            for j, r in enumerate(item.rejected)
            for order in ORDERS
        ]
        judgments, judge_section = judge_jobs(
            settings, calls, lambda c: c.call.messages(template), verdict_judgment, out_dir, cache, progress
        )
        records = [_pair_record(c, j) for c, j in zip(calls, judgments)]
    else:
        if reader not in READERS:
            raise InputError(f"--reader must be one of {', '.join(READERS)}, got {reader!r}")
        try:
            calls = [
                RatingCall(item, side, s, rating_messages(item.prompt, answers[s], reader, template, system_prompt))
                for item in items
                for side, answers in (("chosen", item.chosen), ("rejected", item.rejected))
                for s in range(3)
            ]
        except ValueError as err:  # a template without the answer's placeholder
            raise InputError(str(err)) from None
        judgments, judge_section = judge_jobs(
            settings, calls, lambda c: c.messages, lambda text: Judgment(value=text), out_dir, cache, progress
        )
        records = [_rating_record(c, j, reader) for c, j in zip(calls, judgments)]
    scored = item_scores(items, records, genrm)
    report = summarise(genrm, reader if genrm == "rated" else None, items, scored, records, seed)
    report["judge"] = judge_section
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    out.write_jsonl(Path(out_dir) / "items.jsonl", scored)
    out.write_reports(out_dir, report, markdown(report))
    plot_line = out.plot(Path(out_dir) / "styles.png", lambda axes: _draw(axes, report))
    return [
        f"RM-Bench total {out.rate(report['total']['mean'])} ({genrm} GenRM) over {report['items_scored']} of "
        f"{report['items']} prompts: hard {out.rate(report['hard'])}, normal {out.rate(report['normal'])}, "
        f"easy {out.rate(report['easy'])}",
        *(f"note: {note}" for note in report["notes"]),
        f"judge calls {len(records)}: {out.failures_line(report['failures'], out.SCORED_AS_THE_BENCHMARK)}; prompts not scored "
        f"{report['items'] - report['items_scored']}",
        f"wrote {out_dir}/judgments.jsonl, items.jsonl, report.json, report.md",
        plot_line,
    ]


def _pair_record(pair: PairCall, judgment: Judgment) -> dict:
    item = pair.item
    return {"row": item.row, "id": item.id, "domain": item.domain, "chosen": STYLES[pair.chosen],
            "rejected": STYLES[pair.rejected], "order": pair.call.order, "verdict": judgment.verdict,
            "picked": pair.call.picked(judgment), "error": judgment.error,
            "unreadable": judgment.error is None and judgment.verdict is None}  # fmt: skip


def _rating_record(call: RatingCall, judgment: Judgment, reader: str) -> dict:
    item = call.item
    rating = UNRATED if judgment.error else read_rating(judgment.value, reader, call.answer)  # None: cut or refused
    return {"row": item.row, "id": item.id, "domain": item.domain, "side": call.side, "style": STYLES[call.style],
            "rating": rating, "error": judgment.error,
            "unreadable": judgment.error is None and rating == UNRATED}  # fmt: skip


def rated_cells(score_chosen: Sequence[float], score_rejected: Sequence[float]) -> list[list[int]]:
    """compute_accuracy's rule: cell (i, j) is 1 when chosen answer i scores strictly above rejected answer j,
    so a tie is wrong; an unrated answer (UNRATED) wins no comparison and loses none, so its cells are wrong."""
    return [[int(c != UNRATED and r != UNRATED and c > r) for r in score_rejected] for c in score_chosen]


def vote_cells(votes: Sequence[Sequence[int]]) -> list[list[int]]:
    """Our pairwise rule: a pair's votes over its two orders (+1 chosen picked, -1 rejected, 0 tie or no
    verdict); the chosen answer beats the rejected one when the sum is positive, as compute_accuracy's strict >."""
    return [[int(v > 0) for v in row] for row in votes]


def item_scores(items: Sequence[RMBenchItem], records: Sequence[dict], genrm: str) -> list[dict]:
    """One line per prompt with its 3×3 cells (chosen style by rejected style; None: a call of it failed)."""
    mine: dict[int, list[dict]] = {}
    for record in records:
        mine.setdefault(record["row"], []).append(record)
    scored = []
    for item in items:
        calls = mine[item.row]
        line: dict[str, Any] = {"row": item.row, "id": item.id, "domain": item.domain, "group": item.group}
        failed = any(r["error"] is not None for r in calls)
        if genrm == "pairwise":
            votes = [[0] * 3 for _ in STYLES]
            for r in calls:
                votes[STYLES.index(r["chosen"])][STYLES.index(r["rejected"])] += VOTE[r["picked"]]
            line["votes"] = votes
            line["cells"] = None if failed else vote_cells(votes)
        else:
            ratings = {(r["side"], r["style"]): r["rating"] for r in calls}
            line["score_chosen"], line["score_rejected"] = ([ratings[side, s] for s in STYLES]
                                                            for side in ("chosen", "rejected"))  # fmt: skip
            line["cells"] = None if failed else rated_cells(line["score_chosen"], line["score_rejected"])
        scored.append(line)
    return scored


def rmbench_scores(rows: Sequence[tuple[str, Sequence[Sequence[int]]]]) -> dict[str, Any]:
    """RM-Bench's numbers from each scored prompt's (group, 3×3 cells), as compute_accuracy computes them: per
    group the mean matrix, hard (upper triangle, the chosen answer plainer) / 3, normal (the diagonal's mean),
    easy (lower triangle) / 3 and their mean; overall hard, normal, easy and total: means over the groups."""
    cells_of: dict[str, list] = {}
    for group, cells in rows:
        cells_of.setdefault(group, []).append(cells)
    groups: dict[str, dict] = {}
    for group in [g for g in (*DOMAINS, NO_DOMAIN) if g in cells_of]:
        acc = np.sum(np.asarray(cells_of[group], dtype=float), axis=0) / len(cells_of[group])
        hard, normal, easy = np.sum(np.triu(acc, 1)) / 3, np.mean(np.diag(acc)), np.sum(np.tril(acc, -1)) / 3
        groups[group] = {"count": len(cells_of[group]), "matrix": acc.tolist(), "hard": float(hard),
                         "normal": float(normal), "easy": float(easy), "avg": float(np.mean([hard, normal, easy]))}  # fmt: skip
    mean = {key: float(np.mean([g[key] for g in groups.values()])) if groups else float("nan")
            for key in ("hard", "normal", "easy", "avg")}  # fmt: skip
    return {"domains": groups, "hard": mean["hard"], "normal": mean["normal"], "easy": mean["easy"],
            "total": mean["avg"]}  # fmt: skip


def bootstrap(rows: Sequence[tuple[str, Sequence[Sequence[int]]]], seed: int = 0) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of total, hard, normal, easy and each group's avg, prompts resampled within
    their group (each group keeps its weight in the total, as it has in RM-Bench's)."""
    per_group: dict[str, list] = {}
    for group, cells in rows:
        c = np.asarray(cells, dtype=float)
        per_group.setdefault(group, []).append((np.triu(c, 1).sum() / 3, np.diag(c).mean(), np.tril(c, -1).sum() / 3))
    rng = np.random.default_rng(seed)
    draws = {}  # group -> (resamples, 3): hard, normal, easy of each resample
    for group in [g for g in (*DOMAINS, NO_DOMAIN) if g in per_group]:
        values = np.asarray(per_group[group])
        draws[group] = values[rng.integers(0, len(values), size=(stats.RESAMPLES, len(values)))].mean(axis=1)
    if not draws:
        return {}
    stacked = np.stack(list(draws.values()))  # groups, resamples, 3
    bounds = ((1 - stats.LEVEL) / 2, (1 + stats.LEVEL) / 2)
    found = {name: stacked[:, :, k].mean(axis=0) for k, name in enumerate(("hard", "normal", "easy"))}
    found["total"] = stacked.mean(axis=(0, 2))
    found.update({group: d.mean(axis=1) for group, d in draws.items()})
    return {name: tuple(float(q) for q in np.quantile(v, bounds)) for name, v in found.items()}


def summarise(genrm: str, reader: str | None, items, scored, records, seed: int = 0) -> dict:
    rows = [(line["group"], line["cells"]) for line in scored if line["cells"] is not None]
    scores = rmbench_scores(rows)
    intervals = bootstrap(rows, seed)
    in_file = [g for g in (*DOMAINS, NO_DOMAIN) if any(i.group == g for i in items)]
    domains = {}
    for group in in_file:
        entry = scores["domains"].get(group, {"count": 0})
        entry["rows"] = sum(i.group == group for i in items)
        entry["avg_ci"] = list(intervals.get(group, (float("nan"),) * 2))
        domains[group] = entry
    notes = []
    if unscored := [g for g in in_file if not domains[g]["count"]]:
        notes.append(f"in the file, but no prompt scored (each had a failed judge call): {', '.join(unscored)}")
    if NO_DOMAIN in in_file:
        notes.append("rows carry no domain (a per-domain file): one matrix; total is the mean of its hard, normal "
                     "and easy")  # fmt: skip
    elif missing := [d for d in DOMAINS if d not in scores["domains"]]:
        notes.append(f"not RM-Bench's total: it averages 4 domains, missing here: {', '.join(missing)}")
    if kinds := sorted({i.domain for i in items if i.group == "safety"}):
        notes.append(f"safety pools {', '.join(kinds)} by prompt, as RM-Bench's split_dataset_by_domain does")
    report: dict[str, Any] = {"kind": "rmbench", "genrm": genrm, "reader": reader, "seed": seed}
    low, high = intervals.get("total", (float("nan"),) * 2)
    report.update(
        total={"mean": scores["total"], "low": low, "high": high},
        hard=scores["hard"], normal=scores["normal"], easy=scores["easy"],
        intervals={k: list(intervals[k]) for k in ("hard", "normal", "easy") if k in intervals},
        styles=list(STYLES), domains=domains, items=len(items), items_scored=len(rows), notes=notes,
        failures=out.failures(sum(r["error"] is not None for r in records), sum(r["unreadable"] for r in records),
                              len(records)),
    )  # fmt: skip
    return report


SCORING = {
    "pairwise": "each of the 9 (chosen, rejected) style pairs judged in both orders; a pair counts as correct when "
    "the chosen answer wins more orders than it loses (a tie or a reply with no verdict votes neither way)",
    "rated": "each of the 6 answers rated alone; a pair counts as correct when the chosen answer's rating is "
    "strictly higher (RM-Bench's rule: a tie is wrong; so is a pair with an unreadable rating)",
}


def markdown(report: dict) -> str:
    genrm, total = report["genrm"], report["total"]
    reader = f", reader {report['reader']}" if report["reader"] else ""
    rows = [(name, f"{d['count']} / {d['rows']}", *(d.get(k, float("nan")) for k in ("hard", "normal", "easy")),
             out.interval({"mean": d.get("avg", float("nan")), "low": d["avg_ci"][0], "high": d["avg_ci"][1]}))
            for name, d in report["domains"].items()]  # fmt: skip
    rows.append(("overall", f"{report['items_scored']} / {report['items']}", report["hard"], report["normal"],
                 report["easy"], out.interval(total)))  # fmt: skip
    lines = [
        f"# RM-Bench: {genrm} GenRM{reader}",
        "",
        f"Total **{out.rate(total['mean'])}** over {report['items_scored']} of {report['items']} prompts (the "
        f"leaderboard shows it ×100). Scoring: {SCORING[genrm]}. Hard: the chosen answer plainer than the "
        "rejected one; easy: fancier. A prompt with a failed judge call is not scored; a rerun retries it. "
        f"Intervals: 95% bootstrap over prompts within each domain (seed {report['seed']}).",
        "",
        out.markdown_table(["domain", "scored / rows", "hard", "normal", "easy", "avg [95% CI]"], rows),
        "",
    ]
    header = ["chosen \\ rejected", *report["styles"]]
    for name, d in report["domains"].items():
        if d["count"]:
            lines += [f"**{name}**: accuracy by style", "", out.markdown_table(
                header, [(s, *row) for s, row in zip(report["styles"], d["matrix"])]), ""]  # fmt: skip
    lines += [f"- {note}" for note in report["notes"]]
    lines.append(f"- {out.failures_line(report['failures'], out.SCORED_AS_THE_BENCHMARK)}")
    return "\n".join(lines)


def _draw(axes, report: dict) -> None:
    from writing_rl.plot import PALETTE, legend_above

    names = [n for n, d in report["domains"].items() if d["count"]] + ["overall"]
    values = [report["domains"][n] if n != "overall" else report for n in names]
    for k, level in enumerate(("hard", "normal", "easy")):
        axes.bar([x + (k - 1) * 0.27 for x in range(len(names))], [v[level] for v in values], 0.27,
                 color=PALETTE[k], label=level)  # fmt: skip
    axes.set_xticks(range(len(names)), names)
    axes.set_ylim(0, 1)
    axes.set_ylabel("accuracy")
    axes.set_title(f"RM-Bench ({report['genrm']} GenRM): accuracy by domain and difficulty", pad=22)
    legend_above(axes, 3)
