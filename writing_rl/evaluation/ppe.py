"""``writing-rl eval ppe``: a pairwise GenRM on Preference Proxy Evaluations (lmarena's PPE, arXiv 2410.14872), its
human-preference set and its best-of-K correctness sets read in the published format (parquet, JSON or JSONL).

PPE's own scorer (``utils/scorers.py`` in lmarena/PPE) could not be read, so only what the data format fixes is
scored: accuracy on the human-preference pairs whose ``winner`` is ``model_a`` or ``model_b`` (ties left out), and on
each correctness row's ``sampled_conflict_pairs`` ``[i, j]`` (the better response: the one whose ``scores`` entry is
higher). Every pair is judged in both orders, each counting half: the expected accuracy of judging it once in a
random order. What is left out and why: docs/judge-benchmarks.md, PPE.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.genrm_pairwise import ORDERS, PreferenceCall, PreferencePair
from writing_rl.evaluation.inputs import InputError, is_parquet, lines, parquet_rows
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, load_template

SETS = {  # PPE's benchmark names and their Hugging Face datasets (lmarena-ai/<dataset>)
    "human_preference_v1": "PPE-Human-Preference-V1",
    "mmlu_pro_best_of_k": "PPE-MMLU-Pro-Best-of-K",
    "math_best_of_k": "PPE-MATH-Best-of-K",
    "gpqa_best_of_k": "PPE-GPQA-Best-of-K",
    "ifeval_best_of_k": "PPE-IFEval-Best-of-K",
    "mbpp_plus_best_of_k": "PPE-MBPP-Plus-Best-of-K",
}
HUMAN, CORRECTNESS = "human_preference", "correctness"
FIRST_WINS = {"model_a": True, "model_b": False}  # the human's winner -> response_1 is the preferred one
GROUPS = {HUMAN: ("language", "is_code"), CORRECTNESS: ("model",)}
HEADER = ("set", "kind", "rows", "pairs scored / pairs", "accuracy [95% CI]", "both orders right", "tie rate",
          "rows left out")  # fmt: skip
NOT_COMPUTED = (
    "best-of-K curves, AUC and the human-preference leaderboard metrics (Spearman, Kendall, row-wise Pearson, "
    "separability, confidence agreement, Brier): PPE's scorer defines them and could not be read; best-of-K and "
    "AUC also need a score per response, which pairwise verdicts on sampled pairs do not give"
)


@dataclass(frozen=True)
class PPEPair:
    """One judged pair: a row's preferred response against the other, numbered as in the file."""

    set: str
    row: int  # the row's place in its file, from 1
    question_id: Any
    preferred: int  # n of the preferred response_n
    other: int
    groups: dict[str, str]  # what the set is broken down by: language and is_code, or the answering model
    pair: PreferencePair  # chosen: the preferred response; index: (set, row, k-th pair of the row)


@dataclass
class PPESet:
    name: str
    kind: str  # HUMAN or CORRECTNESS
    rows: int
    pairs: list[PPEPair]
    skipped: Counter = field(default_factory=Counter)  # rows without a pair to judge, by reason


def set_name(spec: str) -> tuple[str, str]:
    """(set name, path) of a ``--data`` value ``PATH`` or ``NAME=PATH``. A bare path holding a PPE dataset's or
    benchmark's name (``PPE-MATH-Best-of-K/...``) is that benchmark; any other is named by its file stem."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        return name.strip(), path
    lowered = spec.lower()
    found = [name for name, dataset in SETS.items() if dataset.lower() in lowered or name in lowered]
    return (found[0] if len(found) == 1 else Path(spec).stem), spec


def file_rows(path: str | Path) -> Iterable[tuple[str, dict]]:
    """(where, row) of a parquet, a JSON array of records (pandas' ``read_json`` layout) or a JSONL."""
    if is_parquet(path):
        return parquet_rows(path)
    if not str(path).endswith(".json"):
        return lines(path)
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as err:
        raise InputError(f"{path}: not JSON ({err}); a .jsonl file holds one row per line") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise InputError(f"{path}: expected a JSON array of row objects")
    return ((f"{path}:record {n}", record) for n, record in enumerate(records, start=1))


def read_set(name: str, rows: Iterable[tuple[str, dict]], system: str | None = PAIRWISE_SYSTEM) -> PPESet:
    """The pairs of one PPE file: human-preference rows (``winner``) or best-of-K rows
    (``sampled_conflict_pairs``), told apart by their first row. Bad rows fail naming the row and field."""
    rows = list(rows)
    if not rows:
        raise InputError(f"{name}: no rows")
    first_where, first = rows[0]
    kind = HUMAN if "winner" in first else CORRECTNESS if "sampled_conflict_pairs" in first else None
    if kind is None:
        raise InputError(
            f"{first_where}: neither a human-preference row (winner, response_1, response_2) nor a best-of-K row "
            f"(scores, sampled_conflict_pairs, response_1..K); the row has {', '.join(sorted(first))}"
        )
    ppe_set = PPESet(name, kind, len(rows), [])
    for number, (where, row) in enumerate(rows, start=1):
        read = _human_pairs if kind == HUMAN else _conflict_pairs
        ppe_set.pairs += read(ppe_set, number, where, row, system)
    return ppe_set


def _human_pairs(ppe_set: PPESet, number: int, where: str, row: dict, system: str | None) -> list[PPEPair]:
    question_id, winner = _question_id(row, where), _text(row, "winner", where)
    if winner not in FIRST_WINS:
        ppe_set.skipped[f"winner {winner}"] += 1
        return []
    prompt = _text(row, "prompt", where)
    first, second = _string(row, "response_1", where), _string(row, "response_2", where)
    preferred, other = (1, 2) if FIRST_WINS[winner] else (2, 1)
    chosen, rejected = (first, second) if preferred == 1 else (second, first)
    groups = {"language": str(row.get("language") or "unknown")}
    if isinstance(row.get("is_code"), bool):
        groups["is_code"] = "code" if row["is_code"] else "not code"
    pair = PreferencePair((ppe_set.name, number, 0), prompt, chosen, rejected, system)
    return [PPEPair(ppe_set.name, number, question_id, preferred, other, groups, pair)]


def _conflict_pairs(ppe_set: PPESet, number: int, where: str, row: dict, system: str | None) -> list[PPEPair]:
    question_id, prompt, model = _question_id(row, where), _text(row, "prompt", where), _text(row, "model_name", where)
    scores, sampled = row.get("scores"), row.get("sampled_conflict_pairs")
    if not isinstance(scores, (list, tuple)) or not all(_is_number(s) for s in scores):
        raise InputError(f"{where}: scores must be a list of booleans (one per response), got {scores!r:.80}")
    if not isinstance(sampled, (list, tuple)):
        raise InputError(f"{where}: sampled_conflict_pairs must be a list of [i, j] pairs, got {sampled!r:.80}")
    if not sampled:
        ppe_set.skipped["no sampled_conflict_pairs"] += 1
    pairs = []
    for k, indices in enumerate(sampled):
        field_name = f"sampled_conflict_pairs[{k}]"
        if not isinstance(indices, (list, tuple)) or len(indices) != 2 or not all(_is_index(i) for i in indices):
            raise InputError(f"{where}: {field_name} must be two response indices [i, j], got {indices!r:.60}")
        i, j = indices
        if not (0 <= i < len(scores) and 0 <= j < len(scores)):
            raise InputError(f"{where}: {field_name} = [{i}, {j}] lies outside scores (indices 0 to {len(scores) - 1})")
        if scores[i] == scores[j]:
            raise InputError(
                f"{where}: {field_name} = [{i}, {j}] is no conflict: scores[{i}] = scores[{j}] = {scores[i]!r}"
            )
        won, lost = (i, j) if scores[i] > scores[j] else (j, i)
        chosen, rejected = (_string(row, f"response_{n + 1}", where) for n in (won, lost))
        pair = PreferencePair((ppe_set.name, number, k), prompt, chosen, rejected, system)
        pairs.append(PPEPair(ppe_set.name, number, question_id, won + 1, lost + 1, {"model": model}, pair))
    return pairs


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _question_id(row: dict, where: str) -> Any:
    value = row.get("question_id")
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        raise InputError(f"{where}: question_id must be a string or an integer, got {value!r:.60}")
    return value


def _string(row: dict, name: str, where: str) -> str:
    if not isinstance(row.get(name), str):
        got = "nothing" if row.get(name) is None else type(row[name]).__name__
        raise InputError(f"{where}: {name} must be a string, got {got}")
    return row[name]


def _text(row: dict, name: str, where: str) -> str:
    if not _string(row, name, where).strip():
        raise InputError(f"{where}: {name} must be a non-empty string")
    return row[name]


def run_ppe(
    data: Sequence[str],
    out_dir: str,
    settings: JudgeSettings,
    template: str | None = None,
    system_prompt: str | None = None,
    seed: int = 0,
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge every pair of every ``--data`` file in both orders, write every output, and return the lines to print."""
    if template:
        load_template(template)  # a template without both response placeholders fails before any call
    sets: dict[str, PPESet] = {}
    for spec in data:
        name, path = set_name(spec)
        if name in sets:
            raise InputError(f"--data {spec}: a second file for set {name!r} (name each file: NAME=PATH)")
        sets[name] = read_set(name, file_rows(path), system_prompt or PAIRWISE_SYSTEM)
    calls = [(p, PreferenceCall(p.pair, order)) for s in sets.values() for p in s.pairs for order in ORDERS]
    judgments, judge_section = judge_jobs(
        settings, calls, lambda c: c[1].messages(template), verdict_judgment, out_dir, cache, progress
    )
    records = [call_record(p, call, judgment) for (p, call), judgment in zip(calls, judgments)]
    report = summarise(list(sets.values()), records, seed)
    report["judge"] = judge_section
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    out.write_reports(out_dir, report, markdown(report))
    scored = {name: s["accuracy"] for name, s in report["sets"].items() if s["pairs_scored"]}
    plot_line = out.plot(
        Path(out_dir) / "sets.png",
        lambda axes: out.bar_plot_with_intervals(
            axes, list(scored), list(scored.values()), "PPE: pairwise GenRM accuracy", "accuracy"
        ),
    )
    printed = [
        f"PPE {name}: accuracy {out.interval(s['accuracy'])} over {s['pairs_scored']} of {s['pairs']} pairs "
        f"({s['rows']} rows, {sum(s['skipped'].values())} without a pair to judge)"
        for name, s in report["sets"].items()
    ]
    if "correctness_mean" in report:
        mean = out.rate(report["correctness_mean"])
        printed.append(f"PPE correctness: unweighted mean over {report['correctness_sets']} sets {mean}")
    return [
        *printed,
        f"judge calls {len(records)}: {failures_line(report['failures'])}",
        f"wrote {out_dir}/judgments.jsonl, report.json, report.md",
        plot_line,
    ]


def call_record(p: PPEPair, call: PreferenceCall, judgment: Judgment) -> dict:
    """One line of judgments.jsonl; ``correct``: the verdict names the preferred response (None: the call failed)."""
    picked = call.picked(judgment)
    return {
        "set": p.set,
        "row": p.row,
        "question_id": p.question_id,
        "pair": p.pair.index[2],
        "preferred": f"response_{p.preferred}",
        "other": f"response_{p.other}",
        "groups": p.groups,
        "order": call.order,
        "verdict": judgment.verdict,
        "picked": picked,
        "correct": None if judgment.error is not None else picked == "chosen",
        "error": judgment.error,
        "unreadable": judgment.parse_failure,
    }


def pair_scores(records: Sequence[dict]) -> dict[tuple, float | None]:
    """Each pair's share of its orders whose verdict names the preferred response (a tie or no verdict: wrong);
    None when a call of it failed."""
    calls: dict[tuple, list[dict]] = {}
    for record in records:
        calls.setdefault((record["set"], record["row"], record["pair"]), []).append(record)
    return {
        key: None if any(r["correct"] is None for r in mine) else sum(r["correct"] for r in mine) / len(mine)
        for key, mine in calls.items()
    }


def _accuracy(scored: Sequence[tuple[tuple, float]], seed: int) -> dict[str, float]:
    """Accuracy over the scored pairs, its 95% interval from resampling rows (a row's pairs go together)."""
    rows: dict[tuple, list[float]] = {}
    for key, score in scored:
        rows.setdefault(key[:2], []).append(score)
    result = stats.ratio_with_ci([sum(v) for v in rows.values()], [len(v) for v in rows.values()], seed=seed)
    result["rows_scored"] = result.pop("n")
    return {**result, "pairs": len(scored)}


def summarise(sets: Sequence[PPESet], records: Sequence[dict], seed: int = 0) -> dict:
    scores = pair_scores(records)
    groups_of = {(p.set, p.row, p.pair.index[2]): p.groups for s in sets for p in s.pairs}
    by_set: dict[str, dict] = {}
    for ppe_set in sets:
        mine = [r for r in records if r["set"] == ppe_set.name]
        scored = [(k, v) for k, v in scores.items() if k[0] == ppe_set.name and v is not None]
        read = [r for r in mine if r["picked"] is not None]
        entry: dict[str, Any] = {
            "kind": ppe_set.kind,
            "rows": ppe_set.rows,
            "pairs": len(ppe_set.pairs),
            "pairs_scored": len(scored),
            "skipped": dict(ppe_set.skipped),
            "accuracy": _accuracy(scored, seed),
            "both_orders_right": out.share(sum(v == 1.0 for _, v in scored), len(scored)),
            "tie_rate": out.share(sum(r["picked"] == "tie" for r in read), len(read)),
        }
        for key in GROUPS[ppe_set.kind]:
            names = Counter(groups_of[k][key] for k, _ in scored if key in groups_of[k])
            entry[f"by_{key}"] = {
                name: _accuracy([(k, v) for k, v in scored if groups_of[k].get(key) == name], seed)
                for name, _ in names.most_common()
            }
        by_set[ppe_set.name] = entry
    report: dict[str, Any] = {"kind": "ppe", "seed": seed, "sets": by_set}
    correct = [s["accuracy"]["mean"] for s in by_set.values() if s["kind"] == CORRECTNESS and s["pairs_scored"]]
    if correct:
        report["correctness_mean"] = sum(correct) / len(correct)
        report["correctness_sets"] = len(correct)
    report["not_computed"] = NOT_COMPUTED
    report["failures"] = out.failures(
        sum(r["error"] is not None for r in records), sum(r["unreadable"] for r in records), len(records)
    )
    return report


def failures_line(section: dict[str, float]) -> str:
    """Unlike the other kinds, an unreadable reply is scored here: wrong, as a reply naming neither response."""
    return (
        f"judge errors {section['judge_error']} ({out.rate(section['judge_error_rate'])}): counted, their pairs not "
        f"scored; unreadable {section['unreadable']} ({out.rate(section['unreadable_rate'])}): counted, scored wrong"
    )


def markdown(report: dict) -> str:
    sets = report["sets"]
    rows = [
        (name, s["kind"].replace("_", " "), s["rows"], f"{s['pairs_scored']} / {s['pairs']}", out.interval(s["accuracy"]),
         s["both_orders_right"], s["tie_rate"], ", ".join(f"{n} {why}" for why, n in s["skipped"].items()) or "–")
        for name, s in sets.items()
    ]  # fmt: skip
    lines_out = [
        "# PPE: pairwise GenRM",
        "",
        "Each pair judged with the preferred response first and second; a pair scores the share of its two verdicts "
        "naming the preferred response (a tie or a reply without a verdict is wrong), the expected accuracy of one "
        "verdict in a random order. Human-preference pairs: rows whose winner is model_a or model_b (ties left "
        "out); correctness pairs: each row's sampled_conflict_pairs, the response with the higher score preferred. "
        f"A pair with a failed judge call is not scored. Intervals: 95% bootstrap over rows, seed {report['seed']}.",
        "",
        out.markdown_table(HEADER, rows),
        "",
    ]
    if "correctness_mean" in report:
        lines_out += [f"Correctness, unweighted mean over {report['correctness_sets']} sets: "
                      f"**{out.rate(report['correctness_mean'])}**", ""]  # fmt: skip
    for name, s in sets.items():
        for key in GROUPS[s["kind"]]:
            groups = s.get(f"by_{key}") or {}
            if groups:
                table = [(g, v["pairs"], out.interval(v)) for g, v in list(groups.items())[:15]]
                more = f" ({len(groups) - 15} more in report.json)" if len(groups) > 15 else ""
                lines_out += [f"## {name} by {key}{more}", "", out.markdown_table([key, "pairs", "accuracy [95% CI]"], table), ""]  # fmt: skip
    lines_out += [f"- not computed: {report['not_computed']}", f"- {failures_line(report['failures'])}"]
    return "\n".join(lines_out)
