"""``writing-rl eval arena-hard``: policies on Arena-Hard-Auto v2.0, each answer judged against the category's
baseline answer in two games, scored as lmarena/arena-hard-auto's show_result.py scores (``arenahard_scores``).

Inputs in the benchmark's own formats: question.jsonl, model_answer/<model>.jsonl (``arenahard_inputs``). The
report: docs/writing-benchmarks.md, Arena-Hard v2.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from writing_rl.evaluation import arenahard_scores as scoring
from writing_rl.evaluation import report as out
from writing_rl.evaluation.arenahard_inputs import Answers, Question, parse_baselines, read_answers, read_questions
from writing_rl.evaluation.genrm_pairwise import PreferenceCall, PreferencePair
from writing_rl.evaluation.inputs import InputError
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs, verdict_judgment
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, Messages, load_template

BENCHMARK = "Arena-Hard-Auto v2.0"
OFFICIAL_BASELINES = {"hard_prompt": "o3-mini-2025-01-31", "creative_writing": "gemini-2.0-flash-001"}
HEADLINE = "creative_writing"  # the writing policies' number
STYLE_CONTROL = {"hard_prompt": True}  # the official configurations: style control for hard prompts only
READERS = ("arena-hard", "pairwise")
PAIRWISE_LABELS = {"A": "A>B", "B": "B>A", "C": "A=B"}  # our pairwise GenRM's verdicts as labels
USER_TEMPLATE = (  # the benchmark's request layout (config/arena-hard-v2.0.yaml prompt_template)
    "<|User Prompt|>\n{QUESTION}\n\n<|The Start of Assistant A's Answer|>\n{ANSWER_A}\n"
    "<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\n{ANSWER_B}\n"
    "<|The End of Assistant B's Answer|>"
)
_VERDICTS = (
    "End your reply with exactly one verdict label:\n"
    "[[A>>B]] if A is much better, [[A>B]] if A is somewhat better, [[A=B]] if they are about equal, "
    "[[B>A]] if B is somewhat better, [[B>>A]] if B is much better."
)
_FAIR = "Judge substance rather than length or formatting, and ignore the order in which the answers are shown."
SYSTEM_PROMPTS = {
    "hard_prompt": "You are an impartial judge of two AI assistants' answers to the same user prompt. Before "
    "reading them, work out your own answer, so that you can check theirs. Then compare each answer with yours: "
    "name its mistakes and inaccuracies, whether it does what the prompt asks (or asks for clarification where "
    "the prompt really is ambiguous), whether everything in it is relevant, whether it is concise, and what "
    f"important information it leaves out. {_FAIR}\n\n{_VERDICTS}",
    "creative_writing": "You are an impartial judge of two AI assistants' answers to the same writing request. "
    "Compare them: how fully and faithfully each carries out the request, its originality and voice, the "
    "coherence of its structure, the quality of its prose, and any mistakes or missing parts. "
    f"{_FAIR}\n\n{_VERDICTS}",
}


_SLOTS = re.compile(r"\{(QUESTION|ANSWER_A|ANSWER_B)\}")


@dataclass(frozen=True)
class Game:
    """One judge call: ``number`` 1 shows the baseline as A and the model as B, 2 the reverse."""

    question: Question
    model: str
    baseline: str
    number: int
    a: str
    b: str


def game_messages(game: Game, reader: str, template: str | None, system: str | None) -> Messages:
    if reader == "pairwise":  # our GenRM's request: the baseline as the pair's first response in game 1
        baseline, model = (game.a, game.b) if game.number == 1 else (game.b, game.a)
        pair = PreferencePair(game.question.uid, game.question.prompt, baseline, model, system or PAIRWISE_SYSTEM)
        return PreferenceCall(pair, "chosen_first" if game.number == 1 else "chosen_second").messages(template)
    values = {"QUESTION": game.question.prompt, "ANSWER_A": game.a, "ANSWER_B": game.b}
    user = _fill(template or USER_TEMPLATE, values)
    return [{"role": "system", "content": system or SYSTEM_PROMPTS.get(game.question.category, SYSTEM_PROMPTS[
        "hard_prompt"])}, {"role": "user", "content": user}]  # fmt: skip


def _fill(template: str, values: Mapping[str, str]) -> str:
    """{QUESTION}, {ANSWER_A} and {ANSWER_B} filled in one pass; other braces stay as they are."""
    return _SLOTS.sub(lambda m: values[m.group(1)], template)


def judge_label(judgment: Judgment, reader: str) -> str | None:
    if reader == "pairwise":
        return PAIRWISE_LABELS.get(judgment.verdict) if judgment.verdict else None
    return judgment.value


def read_label_judgment(text: str) -> Judgment:
    """The arena-hard reader: the label as read (None: no label; an unknown one is kept and counted later)."""
    return Judgment(value=scoring.read_label(text))


@dataclass(frozen=True)
class Category:
    """What one category's leaderboard is computed from."""

    name: str
    baseline: Answers
    style_control: bool
    questions: int
    missing: dict[str, int] = field(default_factory=dict)  # model -> questions it has no answer to


def run_arena_hard(
    questions: str,
    answers: Sequence[str],
    baselines: Sequence[str],
    out_dir: str,
    settings: JudgeSettings,
    category: str = HEADLINE,
    reader: str = "arena-hard",
    style_control: bool | None = None,
    template: str | None = None,
    system_prompt: str | None = None,
    seed: int = 0,
    recount_metadata: bool = False,
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge every answer against its category's baseline in both games, write every output, and return the lines
    to print. ``style_control`` None: the official choice per category (on for hard_prompt only)."""
    if reader not in READERS:
        raise InputError(f"--reader must be one of {', '.join(READERS)}, got {reader!r}")
    known = read_questions(questions)
    present = list(dict.fromkeys(q.category for q in known.values()))
    if category != "all" and category not in present:
        raise InputError(f"{questions}: no question of category {category!r} (its categories: {', '.join(present)})")
    names = present if category == "all" else [category]
    _check_template(template, reader)
    paths = parse_baselines(baselines, names)
    read = {path: read_answers(path, recount_metadata) for path in dict.fromkeys(paths.values())}
    models = [read_answers(path, recount_metadata) for path in answers]
    _check_models(models, [read[paths[c]] for c in names])
    plans, games = {}, []
    for name in names:
        base = read[paths[name]]
        asked = [q for q in known.values() if q.category == name]
        plan = Category(name, base, STYLE_CONTROL.get(name, False) if style_control is None else style_control,
                        len(asked), {m.model: 0 for m in models})  # fmt: skip
        for q in asked:
            if q.uid not in base.text:
                raise InputError(f"{base.path}: no answer to question {q.uid!r} ({name}); the baseline needs them all")
            for m in models:
                if q.uid not in m.text:
                    plan.missing[m.model] += 1
                    continue
                games += [Game(q, m.model, base.model, 1, base.text[q.uid], m.text[q.uid]),
                          Game(q, m.model, base.model, 2, m.text[q.uid], base.text[q.uid])]  # fmt: skip
        plans[name] = plan
    judge_read = verdict_judgment if reader == "pairwise" else read_label_judgment
    judgments, judge_section = judge_jobs(
        settings, games, lambda g: game_messages(g, reader, template, system_prompt), judge_read, out_dir, cache,
        progress,
    )  # fmt: skip
    records = battle_records(games, judgments, reader)
    styles = {m.model: m.style for m in [*models, *read.values()]}
    report = summarise(plans, records, styles, models, reader, seed)
    report["judge"] = judge_section
    out.write_jsonl(Path(out_dir) / "judgments.jsonl", records)
    out.write_reports(out_dir, report, markdown(report))
    return [*summary_lines(report), f"wrote {out_dir}/judgments.jsonl, report.json, report.md", plot(out_dir, report)]


def _check_template(template: str | None, reader: str) -> None:
    if not template:
        return
    if reader == "pairwise":
        load_template(template)  # a template without both response placeholders fails before any call
        return
    missing = [f"{{{n}}}" for n in ("QUESTION", "ANSWER_A", "ANSWER_B") if f"{{{n}}}" not in Path(template).read_text()]
    if missing:
        raise InputError(f"--template {template}: missing {', '.join(missing)} (the arena-hard reader's placeholders)")


def _check_models(models: Sequence[Answers], baselines: Sequence[Answers]) -> None:
    seen: dict[str, str] = {}
    for m in models:
        if m.model in seen:
            raise InputError(f"{m.path}: model {m.model!r} again (also in {seen[m.model]})")
        seen[m.model] = m.path
        if any(m.model == b.model for b in baselines):
            raise InputError(f"{m.path}: model {m.model!r} is a baseline; a model is judged against the baseline")


def battle_records(games: Sequence[Game], judgments: Sequence[Judgment], reader: str) -> list[dict]:
    """One line per battle (a question, a model, its two games), in the official judgment layout (``games``: None
    for a failed call, else ``{"score": label}``) with each call's error, the status and the model's rows."""
    records = []
    for first, j1, j2 in zip(games[::2], judgments[::2], judgments[1::2]):
        labels = [judge_label(j, reader) for j in (j1, j2)]
        errors = [j1.error, j2.error]
        rows = scoring.battle_rows(*labels) if errors == [None, None] else None
        unknown = sum(label is not None and label not in scoring.A_POINTS for label in labels)
        status = ("judge_error" if any(errors) else "unknown_label" if unknown else "unreadable" if rows is None
                  else "scored")  # fmt: skip
        q = first.question
        records.append({
            "uid": q.uid, "category": q.category, "model": first.model, "baseline": first.baseline,
            "games": [None if e else {"score": label} for e, label in zip(errors, labels)],
            "errors": errors, "status": status, "scores": rows,
        })  # fmt: skip
    return records


def summarise(plans: Mapping[str, Category], records, styles, models: Sequence[Answers], reader: str, seed: int):
    categories, notes = {}, []
    for name, plan in plans.items():
        mine = [r for r in records if r["category"] == name]
        scored = [r for r in mine if r["status"] == "scored"]
        rng = np.random.default_rng(seed)  # one generator per category: adding a category changes no other's numbers
        entry: dict[str, Any] = {
            "baseline": plan.baseline.model, "official_baseline": OFFICIAL_BASELINES.get(name),
            "style_control": plan.style_control, "questions": plan.questions,
        }  # fmt: skip
        scores, coefficients = scoring.leaderboard(scored, plan.baseline.model, styles if plan.style_control else None,
                                                   rng)  # fmt: skip
        if coefficients is not None:
            entry["style_coefficients"] = coefficients
        entry["models"] = {}
        for model in [m.model for m in models] + [plan.baseline.model]:
            score = scores.get(model, {"win_rate": float("nan"), "lower": float("nan"), "upper": float("nan")})
            shown, ci = scoring.display(score)
            entry["models"][model] = {**score, "score": shown, "ci": ci, "baseline": model == plan.baseline.model}
            if model != plan.baseline.model:
                battles = [r for r in mine if r["model"] == model]
                entry["models"][model].update(
                    battles=len(battles), battles_scored=sum(r["status"] == "scored" for r in battles),
                    rows=sum(len(r["scores"]) for r in battles if r["scores"]), missing_answers=plan.missing[model],
                )  # fmt: skip
        entry["battles_dropped"] = len(mine) - len(scored)
        categories[name] = entry
        if entry["official_baseline"] and plan.baseline.model != entry["official_baseline"]:
            notes.append(f"{name}: baseline {plan.baseline.model}, not the official {entry['official_baseline']}: "
                         "scores are not comparable with the leaderboard's")  # fmt: skip
    notes += _metadata_notes(plans, models)
    if reader == "pairwise":
        notes.append("pairwise reader: our GenRM's verdicts read as A>B, B>A or A=B; no strong verdicts")
    labels = [g["score"] for r in records for g in r["games"] if g is not None]
    failures = out.failures(sum(e is not None for r in records for e in r["errors"]),
                            sum(label not in scoring.A_POINTS for label in labels), 2 * len(records))  # fmt: skip
    failures["unknown_labels"] = sum(label is not None and label not in scoring.A_POINTS for label in labels)
    failures["battles_dropped"] = sum(r["status"] != "scored" for r in records)
    headline = HEADLINE if HEADLINE in categories else next(iter(categories))
    return {
        "kind": "arena-hard", "benchmark": BENCHMARK, "reader": reader, "seed": seed, "headline": headline,
        "categories": categories, "battles": len(records), "notes": notes, "failures": failures,
    }  # fmt: skip


def _metadata_notes(plans: Mapping[str, Category], models: Sequence[Answers]) -> list[str]:
    files = [*models, *{id(p.baseline): p.baseline for p in plans.values()}.values()]
    counted = ", ".join(f"{a.model} ({a.counted})" for a in files if a.counted)
    notes = []
    if counted:
        notes.append(f"metadata computed (absent, or --recount-metadata) for {counted}: markdown counts by the "
                     "official rules, token_len as words, CJK characters and punctuation marks (not tiktoken's "
                     "gpt-4o tokens)")  # fmt: skip
    for name, plan in plans.items():
        answers = [plan.baseline, *models]
        if plan.style_control and (0 < sum(a.counted for a in answers) < sum(len(a.text) for a in answers)):
            notes.append(f"{name}: the length feature compares token_len of two counters (the files' and ours); "
                         "--recount-metadata counts every answer with ours")  # fmt: skip
    return notes


def summary_lines(report: dict) -> list[str]:
    lines = []
    for name, entry in report["categories"].items():
        style = "style control" if entry["style_control"] else "no style control"
        scores = ", ".join(
            f"{m} {s['score']} {s['ci']}" if s["ci"] != "–" else f"{m} – (no battle scored)"
            for m, s in entry["models"].items()
            if not s["baseline"]
        )
        lines.append(f"{BENCHMARK} {name} ({style}, baseline {entry['baseline']} 50.0): {scores}")
    failures = report["failures"]
    lines.append(
        f"judge calls {2 * report['battles']}: {out.failures_line(failures)}; battles dropped "
        f"{failures['battles_dropped']} of {report['battles']} (both games of a battle with a failed or unreadable "
        "game, as the official scoring drops them)"
    )
    return lines + [f"note: {note}" for note in report["notes"]]


def markdown(report: dict) -> str:
    lines = [
        f"# {BENCHMARK}: {', '.join(report['categories'])}",
        "",
        f"Headline: **{report['headline']}**. Each answer is judged against the baseline's answer to the same "
        "question in two games (baseline as A, then as B); a strong verdict counts 3 rows, a battle with a failed or "
        "unreadable game (or an unknown label) is dropped whole. Without style control the score is the mean of 100 "
        "bootstrap means of each model's rows; with it, the median of 100 bootstrap Bradley-Terry fits with length "
        "and markdown-density features; CI: the 5% and 95% quantiles (a 90% interval), in points. Bootstraps "
        f"seeded with {report['seed']} (the official ones are unseeded). Reader: {report['reader']}.",
    ]
    for name, entry in report["categories"].items():
        style = "style control (length, markdown)" if entry["style_control"] else "no style control"
        ranked = sorted(entry["models"].items(), key=lambda kv: (math.isnan(kv[1]["score"]), -kv[1]["score"]))
        rows = [
            (model, out.rate(s["score"]) if math.isnan(s["score"]) else f"{s['score']:.1f}", s["ci"],
             "baseline" if s["baseline"] else
             f"{s['battles_scored']} / {s['battles']} ({s['missing_answers']} unanswered)", s.get("rows", "–"))
            for model, s in ranked
        ]  # fmt: skip
        lines += ["", f"## {name}: {entry['questions']} questions, baseline {entry['baseline']}, {style}", ""]
        lines.append(out.markdown_table(["model", "score (%)", "CI (%)", "battles scored / judged", "rows"], rows))
        if "style_coefficients" in entry:
            coefficients = ", ".join(f"{k} {v:+.3f}" for k, v in entry["style_coefficients"].items())
            lines += ["", f"Style coefficients (median): {coefficients}"]
    lines += ["", *(f"- {note}" for note in report["notes"])]
    failures = report["failures"]
    lines.append(f"- {out.failures_line(failures)}; unknown labels {failures['unknown_labels']} (counted as "
                 f"unreadable); battles dropped {failures['battles_dropped']} of {report['battles']}")  # fmt: skip
    return "\n".join(lines)


def plot(out_dir: str, report: dict) -> str:
    labels, values = [], []
    for name, entry in report["categories"].items():
        for model, s in entry["models"].items():
            if not s["baseline"] and s["win_rate"] == s["win_rate"]:
                labels.append(f"{name}: {model}")
                values.append({"mean": 100 * s["win_rate"], "low": 100 * s["lower"], "high": 100 * s["upper"]})
    if not values:
        return "plot skipped: no model was scored"

    def draw(axes) -> None:
        out.bar_plot_with_intervals(axes, labels, values, f"{BENCHMARK} against the baseline (90% CI)", "score (%)")
        axes.axhline(50, color="#888888", linestyle="--", linewidth=1)

    return out.plot(Path(out_dir) / "scores.png", draw)
