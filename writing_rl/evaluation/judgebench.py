"""``writing-rl eval judgebench``: a judge on JudgeBench's pairs (ScalerLab/JudgeBench), scored as the benchmark's
``utils/metrics.py`` scores them.

Each pair is judged in game 1 (A then B) and game 2 (B then A) unless single-game. A game's decision is read in
its own order (``A>B``: the answer shown first wins); game 2's is flipped before scoring, as ``flip_judgment`` does.
The readers, the prompts and the report: docs/judge-benchmarks.md, JudgeBench.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.genrm_pairwise import ORDERS, PreferenceCall, PreferencePair
from writing_rl.evaluation.inputs import InputError, is_parquet, parquet_rows
from writing_rl.offline.files import lines
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols import Unreadable
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, Messages, load_template, render, response_values
from writing_rl.protocols.text import split_reasoning

READERS = ("pairwise", "arena-hard")
LABELS = ("A>B", "B>A")
# (bucket, source prefix) as run_judge.py's main loops over them; "" (every pair) is the pooled Overall.
BUCKETS = (
    ("Knowledge", "mmlu-pro"),
    ("Reasoning", "livebench-reasoning"),
    ("Math", "livebench-math"),
    ("Coding", "livecodebench"),
    ("Overall", ""),
)
VERDICT_DECISION = {"A": "A>B", "B": "B>A", "C": "A=B"}  # the pairwise GenRM's verdict, in its game's order
ARENA_LABEL = re.compile(r"\[\[([AB<>=]+)\]\]")  # utils/judges.py, ArenaHard.get_judgment

ARENA_SYSTEM = """\
You are an impartial judge. You will see a user's request and two assistant answers to it, Response A and \
Response B. First work out your own answer to the request. Then check each response against it: is it correct, \
does it do what was asked, is it clear and to the point? Name the mistakes and the missing pieces you find. \
Neither the order of the responses nor their length says anything about their quality.

Finish with exactly one of these verdict labels on a line of its own:
[[A>>B]] Response A is much better
[[A>B]] Response A is slightly better
[[A=B]] the two are about equally good
[[B>A]] Response B is slightly better
[[B>>A]] Response B is much better"""

ARENA_TEMPLATE = """\
[Request]
{prompt}

[Response A]
{response_a}

[Response B]
{response_b}

Judge the two responses, then give your verdict label.
"""

# Sent once after a reply with no verdict label, with that reply before it (ArenaHard's second attempt).
ARENA_FOLLOW_UP = "Carry on from where you stopped and end with one final verdict label from the list."


@dataclass(frozen=True)
class JudgeBenchPair:
    pair_id: Any
    source: str
    question: str
    response_A: str
    response_B: str
    label: str  # "A>B" or "B>A"


@dataclass(frozen=True)
class Game:
    """One judge call: a pair shown in game 1 (A, B) or game 2 (B, A)."""

    pair: JudgeBenchPair
    number: int  # 1 or 2
    messages: Messages


@dataclass(frozen=True)
class ArenaReply:
    """What the arena-hard reader found in a reply: the one distinct label (None: none, or several) and
    whether the benchmark would ask again (no label at all)."""

    label: str | None
    ask_again: bool
    text: str


def read_pairs(path: str | Path) -> list[JudgeBenchPair]:
    """The pairs of a JudgeBench JSONL (``data/dataset=judgebench,response_model=*.jsonl``) or parquet (its HF
    split); a bad row fails naming it and the field."""
    rows = parquet_rows(path) if is_parquet(path) else lines(path)
    pairs: list[JudgeBenchPair] = []
    first_at: dict[Any, str] = {}
    for where, row in rows:
        pair_id = row.get("pair_id")
        if isinstance(pair_id, bool) or not isinstance(pair_id, (str, int)) or pair_id == "":
            raise InputError(f"{where}: pair_id must be a non-empty string or an integer, got {_shown(pair_id)}")
        if pair_id in first_at:
            raise InputError(f"{where}: pair_id {pair_id!r} appears twice (first at {first_at[pair_id]})")
        first_at[pair_id] = where
        where = f"{where} (pair_id {pair_id!r})"
        for name in ("source", "question"):
            if not isinstance(row.get(name), str) or not row[name].strip():
                raise InputError(f"{where}: {name} must be a non-empty string, got {_shown(row.get(name))}")
        for name in ("response_A", "response_B"):
            if not isinstance(row.get(name), str):
                raise InputError(f"{where}: {name} must be a string, got {_shown(row.get(name))}")
        if row.get("label") not in LABELS:
            raise InputError(f"{where}: label must be 'A>B' or 'B>A', got {_shown(row.get('label'))}")
        pairs.append(JudgeBenchPair(pair_id, row["source"], row["question"], row["response_A"], row["response_B"],
                                    row["label"]))  # fmt: skip
    if not pairs:
        raise InputError(f"{path}: no pairs")
    return pairs


def _shown(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {value!r:.60}"


def flip(decision: str | None) -> str | None:
    """``flip_judgment``: A>B and B>A swap, anything else (A=B, None, an odd label) stays."""
    return {"A>B": "B>A", "B>A": "A>B"}.get(decision, decision) if isinstance(decision, str) else decision


def counter(label: str, decisions: Sequence[str | None]) -> int:
    """compute_final_metrics' counter: +1 per game agreeing with the label, -1 per game naming the other answer;
    ``decisions`` each in its game's order (game 2's flipped here). A pair is correct iff this is > 0."""
    seen = [decisions[0], *(flip(d) for d in decisions[1:])]
    return sum(1 if d == label else -1 if d == flip(label) else 0 for d in seen)


def bucket_scores(pairs: Sequence[dict], seed: int = 0) -> dict[str, dict]:
    """Per bucket (``source.startswith(prefix)``) the score ``100 * correct / pairs`` with every pair in the
    denominator, its 95% bootstrap interval (pairs resampled, ``seed``), and the tallies. ``pairs``: lines with
    ``source``, ``label`` and ``decisions`` (one or two games)."""
    scores = {}
    for bucket, prefix in BUCKETS:
        members = [p for p in pairs if p["source"].startswith(prefix)]
        counts = [counter(p["label"], p["decisions"]) for p in members]
        correct = sum(c > 0 for c in counts)
        entry = stats.mean_with_ci([100.0 if c > 0 else 0.0 for c in counts], seed=seed)
        entry["mean"] = 100 * correct / len(members) if members else math.nan
        entry.update(prefix=prefix, correct=correct, incorrect=sum(c < 0 for c in counts),
                     tie=sum(c == 0 for c in counts))  # fmt: skip
        if members and len(members[0]["decisions"]) == 2:
            entry["inconsistent"] = sum(p["decisions"][0] != flip(p["decisions"][1]) for p in members)
            entry["nulls"] = sum(None in (p["decisions"][0], p["decisions"][1]) for p in members)
        scores[bucket] = entry
    return scores


def arena_hard_score(text: str) -> tuple[str | None, bool]:
    """``ArenaHard.get_score``: (the one distinct label, False); (None, True) for no label, the benchmark's
    cue to ask again; (None, False) for several distinct labels."""
    distinct = {m for m in ARENA_LABEL.findall(text) if m}
    if not distinct:
        return None, True
    if len(distinct) == 1:
        return distinct.pop(), False
    return None, False


def arena_hard_decision(label: str | None) -> str | None:
    """A>>B reads as A>B, B>>A as B>A; any other label stays as it is (and scores neither way)."""
    return label.replace(">>", ">").strip() if label else None


def arena_judgment(text: str) -> Judgment:
    """The arena-hard reader on the answer after a closed leading reasoning block (none: the whole reply)."""
    split = split_reasoning(text)
    label, ask_again = arena_hard_score("" if isinstance(split, Unreadable) else split[1])
    return Judgment(value=ArenaReply(label, ask_again, text))


def games_of(pairs: Sequence[JudgeBenchPair], reader: str, two_games: bool, template: str | None,
             system: str | None) -> list[Game]:  # fmt: skip
    body = load_template(template) if template else ARENA_TEMPLATE
    games = []
    for pair in pairs:
        for number in (1, 2) if two_games else (1,):
            if reader == "pairwise":  # response_A plays "chosen": game 1 shows it first, game 2 second
                preference = PreferencePair(pair.pair_id, pair.question, pair.response_A, pair.response_B, system)
                messages = PreferenceCall(preference, ORDERS[number - 1]).messages(template)
            else:
                shown = (pair.response_A, pair.response_B)[:: 1 if number == 1 else -1]
                user = render(body, prompt=pair.question, **response_values(*shown))
                messages = [{"role": "system", "content": system}] if system else []
                messages.append({"role": "user", "content": user})
            games.append(Game(pair, number, messages))
    return games


def run_judgebench(data: str, out_dir: str, settings: JudgeSettings, reader: str = "pairwise", single_game: bool = False,
                   template: str | None = None, system_prompt: str | None = None, seed: int = 0,
                   cache: str | None = None, progress: bool = True) -> list[str]:  # fmt: skip
    """Judge, write every output, and return the lines to print. ``template``/``system_prompt``: the reader's
    prompt (None: the built-in one of the reader)."""
    if reader not in READERS:
        raise InputError(f"--reader must be one of {', '.join(READERS)}, got {reader!r}")
    pairs = read_pairs(data)
    system = system_prompt or (PAIRWISE_SYSTEM if reader == "pairwise" else ARENA_SYSTEM)
    games = games_of(pairs, reader, not single_game, template, system)
    if reader == "pairwise":
        judgments, judge_section = judge_jobs(settings, games, lambda g: g.messages, verdict_judgment, out_dir,
                                              cache, progress)  # fmt: skip
        records = [_record(g, j, VERDICT_DECISION.get(j.verdict), j.verdict, 1) for g, j in zip(games, judgments)]
    else:
        records, judge_section = _arena_records(games, settings, out_dir, cache, progress)
    lines_by_pair = pair_lines(pairs, records)
    report = summarise(pairs, records, lines_by_pair, reader, not single_game, seed)
    report["judge"] = judge_section
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    out.write_jsonl(Path(out_dir) / "pairs.jsonl", lines_by_pair)
    out.write_reports(out_dir, report, markdown(report))
    shown = {name: s for name, s in report["scores"].items() if s["n"]}
    plot_line = out.plot(
        Path(out_dir) / "buckets.png",
        lambda axes: out.bar_plot_with_intervals(axes, list(shown), list(shown.values()),
                                                 f"JudgeBench ({reader} reader): accuracy", "accuracy (%)"),
    )  # fmt: skip
    overall = report["scores"]["Overall"]
    return [
        f"JudgeBench overall {_percent(overall['mean'])} over {overall['n']} pairs ({reader} reader, "
        f"{report['games']} game{'s' if report['games'] == 2 else ''} per pair): "
        + ", ".join(f"{name} {_percent(s['mean'])}" for name, s in report["scores"].items() if name != "Overall"),
        *(f"note: {note}" for note in report["notes"]),
        f"judge calls {len(records) + report['second_attempts']}: judge errors {report['failures']['judge_error']}, "
        f"unreadable {report['failures']['unreadable']}: counted; each gives no decision (neither way)",
        f"wrote {out_dir}/judgments.jsonl, pairs.jsonl, report.json, report.md",
        plot_line,
    ]


def _arena_records(games, settings, out_dir, cache, progress) -> tuple[list[dict], dict]:
    """Game replies read by the arena-hard reader; a reply with no label gets one follow-up call (the first
    reply, then ARENA_FOLLOW_UP), as ArenaHard's two attempts. Since no label spans the seam of the two
    replies, reading the second alone equals reading both joined, as the benchmark does."""
    first, section = judge_jobs(settings, games, lambda g: g.messages, arena_judgment, out_dir, cache, progress)
    again = [i for i, j in enumerate(first) if j.error is None and j.value is not None and j.value.ask_again]
    final, attempts = list(first), [1] * len(games)
    if again:
        asked = [(games[i], first[i].value.text) for i in again]
        second, more = judge_jobs(
            settings, asked,
            lambda job: [*job[0].messages, {"role": "assistant", "content": job[1]},
                         {"role": "user", "content": ARENA_FOLLOW_UP}],
            arena_judgment, out_dir, cache, progress,
        )  # fmt: skip
        for i, judgment in zip(again, second):
            final[i], attempts[i] = judgment, 2
        section = {**more, **section, "calls": section["calls"] + more["calls"],
                   "cache_hits": section["cache_hits"] + more["cache_hits"],
                   "wall_s": round(section["wall_s"] + more["wall_s"], 3)}  # fmt: skip
    section["second_attempts"] = len(again)
    records = []
    for game, judgment, tries in zip(games, final, attempts):
        label = judgment.value.label if judgment.value is not None else None
        records.append(_record(game, judgment, arena_hard_decision(label), label, tries))
    return records, section


def _record(game: Game, judgment: Judgment, decision: str | None, read: str | None, attempts: int) -> dict:
    """One line of judgments.jsonl: the decision in the game's own order (None: a failed call or no reading)."""
    pair = game.pair
    return {"pair_id": pair.pair_id, "source": pair.source, "label": pair.label, "game": game.number,
            "shown": "A,B" if game.number == 1 else "B,A", "read": read, "decision": decision, "attempts": attempts,
            "error": judgment.error, "unreadable": judgment.error is None and read is None}  # fmt: skip


def pair_lines(pairs: Sequence[JudgeBenchPair], records: Sequence[dict]) -> list[dict]:
    """One line per pair, its decisions in game order as the benchmark's output file holds them."""
    decisions: dict[Any, list] = {}
    for record in records:
        decisions.setdefault(record["pair_id"], []).append(record["decision"])
    result = []
    for pair in pairs:
        mine = decisions[pair.pair_id]
        count = counter(pair.label, mine)
        bucket = next((name for name, prefix in BUCKETS[:-1] if pair.source.startswith(prefix)), None)
        result.append({"pair_id": pair.pair_id, "source": pair.source, "bucket": bucket, "label": pair.label,
                       "decisions": mine, "counter": count, "correct": count > 0})  # fmt: skip
    return result


def summarise(pairs, records, lines_by_pair, reader: str, two_games: bool, seed: int) -> dict:
    scores = bucket_scores(lines_by_pair, seed)
    errors = sum(r["error"] is not None for r in records)
    failures = out.failures(errors, sum(r["unreadable"] for r in records), len(records))
    failures["pairs_with_failed_calls"] = len({r["pair_id"] for r in records if r["error"] is not None})
    failures["rule"] = (
        "a call that failed after its retries gives no decision, as an exception does in the benchmark's "
        "judge_pairs: it counts neither for nor against its pair, which stays in the denominator"
    )
    notes = [f"{bucket}: no pair in the file (source starting with {prefix!r})"
             for bucket, prefix in BUCKETS[:-1] if not scores[bucket]["n"]]  # fmt: skip
    others: dict[str, int] = {}
    for line in lines_by_pair:
        if line["bucket"] is None:
            others[line["source"]] = others.get(line["source"], 0) + 1
    if others:
        notes.append(
            f"sources in no bucket, counted in Overall only: {', '.join(f'{s} ({n})' for s, n in others.items())}"
        )
    return {
        "kind": "judgebench",
        "reader": reader,
        "games": 2 if two_games else 1,
        "pairs": len(pairs),
        "seed": seed,
        "overall": scores["Overall"]["mean"],
        "scores": scores,
        "second_attempts": sum(r["attempts"] == 2 for r in records),
        "notes": notes,
        "failures": failures,
    }


def _percent(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


READER_TEXT = {
    "pairwise": "our pairwise GenRM's prompt and verdict: [[A]] reads as A>B, [[B]] as B>A, [[C]] as A=B (in the "
    "game's own order), a reply without a verdict as no decision",
    "arena-hard": "the benchmark's reading of the [[A>>B]] ... [[B>>A]] scale: the one distinct [[...]] label of the "
    "reply (several distinct labels: no decision), >> read as >; a reply with no label is asked once more to "
    "finish with one",
}


def markdown(report: dict) -> str:
    two = report["games"] == 2
    header = ["bucket", "source prefix", "pairs", "score [95% CI]", "correct", "incorrect", "tie"]
    header += ["inconsistent", "with a null"] if two else []
    rows = [
        (name, repr(s["prefix"]) if s["prefix"] else "(all)", s["n"],
         "–" if not s["n"] else f"{s['mean']:.2f} [{s['low']:.2f}, {s['high']:.2f}]",
         s["correct"], s["incorrect"], s["tie"], *((s.get("inconsistent", 0), s.get("nulls", 0)) if two else ()))
        for name, s in report["scores"].items()
    ]  # fmt: skip
    games = (
        "each pair judged twice, game 1 showing A then B and game 2 B then A; game 2's decision is flipped and a "
        "pair is correct when more of its games agree with the label than name the other answer (one right and "
        "one wrong: not correct; one right and one tie or null: correct)"
        if two
        else "each pair judged once (A then B); correct when the decision is the label"
    )
    failures = report["failures"]
    return "\n".join(
        [
            f"# JudgeBench: {report['reader']} reader",
            "",
            f"Overall **{_percent(report['overall'])}** over {report['pairs']} pairs (pooled over every pair, not "
            f"the mean of the buckets). Reader: {READER_TEXT[report['reader']]}. Scoring: {games}. Each score is "
            "100 x correct / pairs, every pair in the denominator; the interval is a percentile bootstrap over pairs "
            f"with seed {report['seed']} (the benchmark reports none).",
            "",
            out.markdown_table(header, rows),
            "",
            *(f"- {note}" for note in report["notes"]),
            *(
                [f"- second attempts (no label in the first reply): {report['second_attempts']}"]
                if report["reader"] == "arena-hard"
                else []
            ),  # fmt: skip
            f"- judge errors {failures['judge_error']} ({out.rate(failures['judge_error_rate'])}) in "
            f"{failures['pairs_with_failed_calls']} pairs, unreadable {failures['unreadable']} "
            f"({out.rate(failures['unreadable_rate'])}): counted; {failures['rule']}.",
        ]
    )
