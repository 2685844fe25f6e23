"""``writing-rl eval eqbench-creative``: a policy's pieces on EQ-Bench Creative Writing v3, scored as the benchmark
scores them: the rubric score (0-20 and x5 on 0-100) with its task bootstrap, and with ``--pairwise-against`` the
TrueSkill rating from pairwise verdicts (``eqbench_pairwise``). The inputs, the scoring, what differs from the
official run: docs/writing-benchmarks.md, EQ-Bench Creative Writing v3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from writing_rl.evaluation import report as out
from writing_rl.evaluation import stats
from writing_rl.evaluation.eqbench_inputs import (
    Piece,
    Prompt,
    fill,
    policy_pieces,
    read_pieces,
    read_prompts,
    read_template,
    write_requests,
)
from writing_rl.offline.judge import JudgeSettings, Judgment, judge_jobs

# The benchmark's data/creative_writing_criteria.txt and data/negative_criteria.txt (lower is better).
CRITERIA = (
    "Adherence to Instructions", "Believable Character Actions", "Nuanced Characters",
    "Consistent Voice/Tone of Writing", "Imagery and Descriptive Quality", "Elegant Prose", "Emotionally Engaging",
    "Emotionally Complex", "Coherent", "Meandering", "Weak Dialogue", "Tell-Don't-Show", "Unsurprising or Uncreative",
    "Amateurish", "Purple Prose", "Overwrought", "Incongruent Ending Positivity", "Unearned Transformations",
    "Well-earned Lightness or Darkness", "Sentences Flow Naturally", "Overall Reader Engagement", "Overall Impression",
)  # fmt: skip
NEGATIVE_CRITERIA = (
    "Unearned Transformations", "Incongruent Ending Positivity", "Overwrought", "Purple Prose", "Amateurish",
    "Unsurprising or Uncreative", "Tell-Don't-Show", "Weak Dialogue", "Meandering",
)  # fmt: skip
SCORE_MAX = 20.0
# core/scoring.py: "name: 13" / "name: Score 13" and "name: [13]", each pass over the whole reply.
SCORE_PATTERNS = (re.compile(r"(.*?):\s*(?:Score\s+)?(-?\d+(?:\.\d+)?)"), re.compile(r"(.*?):\s*\[(-?\d+(?:\.\d+)?)\]"))
BOOTSTRAP_DRAWS, CONFIDENCE = 500, 0.95

RUBRIC_TEMPLATE = """\
Judge the piece of creative writing below. Read the writing prompt and the piece, write a critical analysis, then \
score the piece from 0 to 20 on each criterion listed at the end.

[Writing prompt]
{seeded_prompt}
[End of writing prompt]

[Piece]
{test_model_response}
[End of piece]

How to score:
- 20 is the best a piece could do. For these criteria a higher score means more of the flaw, so lower is better: \
{lower_is_better_criteria}.
- Be demanding: keep the top of the scale for work a discerning editor would publish, and name the weaknesses you see.
- Judge the piece only; if the writer added notes about it after the end, ignore them.
- Explicit content is not a flaw in itself: judge the writing.
- Leave out a criterion that does not apply (e.g. dialogue, in a piece without any).
- No markdown. Give each score on a line of its own, as "criterion name: score", the names spelled as listed.

Answer in this shape:

[Analysis]
(your analysis)

[Scores]
(criterion name): (0-20)

The criteria:
{creative_writing_criteria}
"""
RUBRIC_FIELDS = ("writing_prompt", "seeded_prompt", "test_model_response", "creative_writing_criteria",
                 "lower_is_better_criteria")  # fmt: skip


@dataclass(frozen=True)
class RubricCall:
    piece: Piece
    prompt: Prompt
    text: str


def rubric_messages(call: RubricCall, template: str | None, system_prompt: str | None) -> list[dict]:
    values = {
        "writing_prompt": call.prompt.text,  # as the benchmark fills it: <SEED> not replaced
        "seeded_prompt": call.prompt.seeded(call.piece.iteration),
        "test_model_response": call.text,
        "creative_writing_criteria": "\n".join("- " + c for c in CRITERIA),
        "lower_is_better_criteria": ", ".join(NEGATIVE_CRITERIA),
    }
    user = fill(template or RUBRIC_TEMPLATE, RUBRIC_FIELDS, values, format_style=True)
    return ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
        {"role": "user", "content": user}
    ]


def parse_judge_scores(reply: str) -> dict[str, float]:
    """Every "name: number" the reply holds, as core/scoring.py reads them: both patterns over the whole reply,
    a later value of a name replacing an earlier one, values above 20 dropped (negative ones kept)."""
    scores: dict[str, float] = {}
    for pattern in SCORE_PATTERNS:
        for name, number in pattern.findall(reply):
            if float(number) <= SCORE_MAX:
                scores[name.strip()] = float(number)
    return scores


def rubric_judgment(reply: str) -> Judgment:
    scores = parse_judge_scores(reply)
    return Judgment(value=scores) if scores else Judgment()


def invert_if_negative(name: str, score: float) -> float:
    return SCORE_MAX - score if name in NEGATIVE_CRITERIA else score


def piece_score(scores: dict[str, float]) -> float | None:
    """The mean of every parsed value, lower-is-better ones inverted, values above 20 after that dropped; None
    when nothing is left."""
    values = [v for v in (invert_if_negative(name, s) for name, s in scores.items()) if v <= SCORE_MAX]
    return sum(values) / len(values) if values else None


def creative_score(piece_scores: Sequence[float | None]) -> float:
    """The benchmark's 0-20 score: the mean of the pieces' scores (0.0 when there is none)."""
    scored = [s for s in piece_scores if s is not None]
    return sum(scored) / len(scored) if scored else 0.0


def headline(piece_scores: Sequence[float | None]) -> dict[str, float]:
    average = creative_score(piece_scores)
    return {"overall_score": round(average, 2), "eqbench_creative_score": round(average * 5.0, 2)}


def bootstrap(piece_scores: Sequence[float | None], seed: int = 0) -> dict[str, Any]:
    """The benchmark's stability check: 500 resamples of the tasks (seeded here, unseeded there), each scored as
    the rounded 0-20 score; the interval takes the sorted scores at int(0.025*500) and int(0.975*500)-1."""
    if not piece_scores:
        return {"error": "No tasks found for bootstrap"}
    rng = np.random.default_rng(seed)
    draws = sorted(
        headline([piece_scores[i] for i in row])["overall_score"]
        for row in rng.integers(0, len(piece_scores), size=(BOOTSTRAP_DRAWS, len(piece_scores)))
    )
    low = max(0, int((1 - CONFIDENCE) / 2 * len(draws)))
    high = min(int((1 + CONFIDENCE) / 2 * len(draws)) - 1, len(draws) - 1)
    return {
        "original": headline(piece_scores)["overall_score"],
        "bootstrap_mean": float(np.mean(draws)),
        "bootstrap_std": float(np.std(draws, ddof=1)),
        "ci_lower": float(draws[low]),
        "ci_upper": float(draws[high]),
        "confidence_level": CONFIDENCE,
        "n_bootstrap": BOOTSTRAP_DRAWS,
        "seed": seed,
    }


def requests_only(prompts_path: str, iterations: int, requests_path: str, out_dir: str) -> list[str]:
    """``--write-requests``: the generation inputs, no judge call; report.json says what was written."""
    count = write_requests(read_prompts(prompts_path), iterations, requests_path)
    report = {"kind": "eqbench-creative", "requests": count, "iterations": iterations, "file": str(requests_path),
              "failures": out.failures(0, 0, 0)}  # fmt: skip
    out.write_reports(out_dir, report, f"# EQ-Bench Creative Writing v3: generation requests\n\n{count} requests "
                                       f"({iterations} iterations) written to {requests_path}.")  # fmt: skip
    return [f"wrote {count} generation requests ({iterations} iterations) to {requests_path}"]


def run_eqbench_creative(
    prompts_path: str,
    responses: str,
    out_dir: str,
    settings: JudgeSettings,
    model: str | None = None,
    against: Sequence[str] = (),
    template: str | None = None,
    pairwise_template: str | None = None,
    system_prompt: str | None = None,
    seed: int = 0,
    cache: str | None = None,
    progress: bool = True,
) -> list[str]:
    """Judge the policy's pieces on the rubric (and, given ``against``, every pair of models in both orders),
    write every output, and return the lines to print. Bad input fails before any call."""
    from writing_rl.evaluation import eqbench_pairwise as pairwise

    rubric_template = read_template(template, "test_model_response") if template else None
    pair_template = (
        read_template(pairwise_template, "model_a_analysis", "model_b_analysis") if pairwise_template else None
    )
    prompts = read_prompts(prompts_path)
    name, mine = policy_pieces(read_pieces([responses], prompts), model)
    position = {pid: n for n, pid in enumerate(prompts)}
    mine = sorted((replace(p, model=name) for p in mine), key=lambda p: (p.iteration, position[p.prompt_id]))
    opponents = pairwise.opponents(read_pieces(against, prompts), name) if against else {}
    games = pairwise.games(prompts, {name: mine, **opponents}) if opponents else []
    calls = [RubricCall(p, prompts[p.prompt_id], p.text) for p in mine if p.text is not None]
    judgments, section = judge_jobs(
        settings, calls, lambda c: rubric_messages(c, rubric_template, system_prompt), rubric_judgment, out_dir,
        cache, progress,
    )  # fmt: skip
    pieces = [_piece_line(c, j) for c, j in zip(calls, judgments)]
    records, sections = [], {"rubric": section}
    if games:
        game_judgments, sections["pairwise"] = judge_jobs(
            settings, games, lambda g: g.messages(pair_template, system_prompt), pairwise.pairwise_judgment, out_dir,
            cache, progress,
        )  # fmt: skip
        records = [pairwise.game_record(g, j) for g, j in zip(games, game_judgments)]
    report = summarise(prompts, name, mine, pieces, records, [name, *opponents], seed)
    report["judge"] = _judge_section(sections)
    out_path = Path(out_dir)
    out.write_jsonl(out_path / "pieces.jsonl", pieces)
    written = ["pieces.jsonl"]
    if records:
        out.write_jsonl(out_path / "comparisons.jsonl", records)
        written.append("comparisons.jsonl")
    out.write_reports(out_dir, report, markdown(report))
    criteria = report["criteria"]
    plots = [
        out.plot(
            out_path / "criteria.png",
            lambda axes: out.bar_plot_with_intervals(
                axes, list(criteria), list(criteria.values()), "EQ-Bench Creative Writing: criteria (raw)", "0-20"
            ),
        )
    ]
    if records:
        plots.append(out.plot(out_path / "ratings.png", lambda axes: pairwise.plot_ratings(axes, report["pairwise"])))
    printed = [
        f"{name}: EQ-Bench Creative Writing rubric {report['eqbench_creative_score']:.2f} (0-100; "
        f"{report['overall_score']:.2f} of 20) over {report['pieces_scored']} of {report['pieces']} pieces",
        f"judge calls {report['judge']['calls']}: {out.failures_line(report['failures'])}",
    ]
    if records:
        mine_rated = report["pairwise"]["models"][name]
        printed.append(f"{name}: rating {mine_rated['elo_norm']:.2f} [{mine_rated['ci_low_norm']:.2f}, "
                       f"{mine_rated['ci_high_norm']:.2f}]" + ("" if report["pairwise"]["anchored"] else
                                                               " (raw: fewer than two anchor models)"))  # fmt: skip
    printed += [f"note: {note}" for note in report["notes"]]
    return [*printed, f"wrote {out_dir}/{', '.join(written)}, report.json, report.md", *plots]


def _piece_line(call: RubricCall, judgment: Judgment) -> dict:
    scores = judgment.value or {}
    return {
        "prompt_id": call.piece.prompt_id, "iteration": call.piece.iteration, "model": call.piece.model,
        "judge_scores": scores, "piece_score": piece_score(scores) if scores else None,
        "error": judgment.error, "unreadable": judgment.parse_failure, "chars": len(call.text),
    }  # fmt: skip


def _judge_section(sections: dict[str, dict]) -> dict:
    merged: dict[str, Any] = {key: sum(s[key] for s in sections.values()) for key in ("calls", "cache_hits")}
    merged["wall_s"] = round(sum(s["wall_s"] for s in sections.values()), 3)
    first = next((s["first_failure"] for s in sections.values() if "first_failure" in s), None)
    if first is not None:
        merged["first_failure"] = first
    return {**merged, **sections}


def summarise(prompts, name, mine, pieces, records, models, seed=0) -> dict:
    from writing_rl.evaluation import eqbench_pairwise as pairwise

    scored = [p for p in pieces if p["judge_scores"]]  # the benchmark's tasks: judged, with some score parsed
    piece_scores = [p["piece_score"] for p in scored]
    iterations = sorted({p.iteration for p in mine})
    rubric_failures = out.failures(sum(p["error"] is not None for p in pieces), sum(p["unreadable"] for p in pieces),
                                   len(pieces))  # fmt: skip
    empty = len(mine) - len(pieces)
    expected = len(prompts) * len(iterations)
    report: dict[str, Any] = {
        "kind": "eqbench-creative", "model": name, **headline(piece_scores),
        "mean_piece_score": creative_score(piece_scores), "bootstrap_analysis": bootstrap(piece_scores, seed),
        "pieces": len(mine), "pieces_judged": len(pieces), "pieces_scored": len(scored),
        "pieces_without_valid_scores": sum(s is None for s in piece_scores), "iterations": iterations,
        "missing_pieces": expected - len(mine), "short_pieces": sum(p["chars"] < 500 for p in pieces),
    }  # fmt: skip
    boot = report["bootstrap_analysis"]
    if "error" not in boot:
        report["eqbench_creative_ci"] = [round(boot["ci_lower"] * 5, 2), round(boot["ci_upper"] * 5, 2)]
    report["criteria"] = {c: stats.mean_with_ci([p["judge_scores"][c] for p in scored if c in p["judge_scores"]],
                                                 seed=seed) for c in CRITERIA}  # fmt: skip
    others: dict[str, int] = {}
    for p in scored:
        for key in p["judge_scores"]:
            if key not in CRITERIA:
                others[key] = others.get(key, 0) + 1
    report["other_keys"] = dict(sorted(others.items(), key=lambda kv: -kv[1])[:20])
    category = {p["prompt_id"]: prompts[p["prompt_id"]].category for p in scored}
    kept = [(s, category[p["prompt_id"]]) for p, s in zip(scored, piece_scores) if s is not None]
    report["categories"] = stats.by_group([s for s, _ in kept], [c for _, c in kept], seed=seed)
    failures = [rubric_failures]
    report["rubric_failures"] = {**rubric_failures, "empty_responses": empty}
    if records:
        report["pairwise"] = pairwise.summary(models, records)
        failures.append(report["pairwise"]["failures"])
    calls = len(pieces) + len(records)
    report["failures"] = {
        **out.failures(sum(f["judge_error"] for f in failures), sum(f["unreadable"] for f in failures), calls),
        "empty_responses": empty,
    }
    report["notes"] = _notes(report, expected, seed)
    return report


def _notes(report: dict, expected: int, seed: int) -> list[str]:
    notes = [f"bootstrap seeded with --seed {seed} (the benchmark's is unseeded)"]
    if report["missing_pieces"]:
        notes.append(f"{report['missing_pieces']} of {expected} pieces (prompts x iterations) are missing")
    if report["pieces_scored"] == 0:
        notes.append("no piece was scored: the score is the benchmark's 0.0 for an empty run")
    if "pairwise" in report and not report["pairwise"]["anchored"]:
        notes.append("fewer than two anchor models (deepseek/deepseek-r1, meta-llama/llama-3.2-1b-instruct): "
                     "elo_norm is the raw rating")  # fmt: skip
    return notes


def markdown(report: dict) -> str:
    from writing_rl.evaluation import eqbench_pairwise as pairwise

    boot = report["bootstrap_analysis"]
    interval = f", 95% CI {boot['ci_lower']:.2f}-{boot['ci_upper']:.2f}" if "error" not in boot else ""
    lines_ = [
        f"# EQ-Bench Creative Writing v3: {report['model']}",
        "",
        f"Rubric score **{report['eqbench_creative_score']:.2f}** (0-100; {report['overall_score']:.2f} of 20"
        f"{interval}) over {report['pieces_scored']} of {report['pieces']} pieces, iterations "
        f"{', '.join(map(str, report['iterations']))}. Each piece scores the mean of every value parsed from its "
        "judge reply (lower-is-better criteria as 20 minus the value); the score is the mean over pieces. A failed "
        "judge call or a reply with no score leaves its piece out, as the benchmark skips empty judge scores.",
        "",
        out.markdown_table(
            ["criterion (raw, lower is better marked)", "pieces", "mean [95% CI]"],
            [
                (c + (" (lower is better)" if c in NEGATIVE_CRITERIA else ""), s["n"], out.interval(s))
                for c, s in report["criteria"].items()
            ],
        ),  # fmt: skip
        "",
        out.markdown_table(
            ["category", "pieces", "piece score [95% CI]"],
            [(c, s["n"], out.interval(s)) for c, s in report["categories"].items()],
        ),  # fmt: skip
        "",
    ]
    if report["other_keys"]:
        lines_.append("Parsed lines that name no criterion (the benchmark counts them too): "
                      + ", ".join(f"{k!r} x{n}" for k, n in report["other_keys"].items()) + ".")  # fmt: skip
    if "pairwise" in report:
        lines_ += pairwise.markdown_lines(report["pairwise"])
    failures = report["rubric_failures"]
    lines_ += ["", f"- rubric calls: {out.failures_line(failures)}; empty responses (no call, not scored) "
                   f"{failures['empty_responses']}; pieces under 500 characters {report['short_pieces']}"]  # fmt: skip
    lines_ += [f"- {note}" for note in report["notes"]]
    return "\n".join(lines_)
