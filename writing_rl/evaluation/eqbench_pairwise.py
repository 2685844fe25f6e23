"""EQ-Bench Creative Writing's rating: pairwise verdicts between models' pieces, turned into TrueSkill ratings as
core/elo.py, core/elo_helpers_cw.py and core/trueskill_solver_cw.py do, anchored as core/elo.py anchors them.

Matchups are simpler than the benchmark's ladder sampling: every pair of models on every (prompt, iteration) that
both answered, each model's piece of the same iteration (the same seed modifier), judged in both orders.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation.eqbench_inputs import Piece, Prompt, fill
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.trueskill import TrueSkill
from writing_rl.offline.judge import Judgment

FIRST, SECOND = "A0493", "A0488"  # the writers' labels, shown first and second
TRUNCATE_CHARS = 4000
IGNORED_PROMPTS = ("5", "16", "20", "21", "26", "28", "30")
SKIPPED_KEYS = ("improvement_suggestions", "theory_of_mind", "_item_order_idx")
PENALISING_KEYS = ("avoids_poetic_overload", "coherence", "avoids_verbosity")  # a win here also costs the loser
PLUS_SCALE = 45.0
DEFAULT_RATING, SIGMA, BETA, TAU = 1200.0, 400.0, 200.0, 4.0
BIN_FOR_MU, BIN_FOR_SIGMA = 4, 3
ANCHORS = {"deepseek/deepseek-r1": 1500, "meta-llama/llama-3.2-1b-instruct": 200}
ENV = TrueSkill(mu=DEFAULT_RATING, sigma=SIGMA, beta=BETA, tau=TAU, draw_probability=0.0)

PAIRWISE_TEMPLATE = """\
Two writers answered the same creative writing prompt. Compare their pieces critically, criterion by criterion, and \
say which is stronger on each and by how much.

[Writing prompt]
{seeded_prompt}
[End of writing prompt]

[Writer A0493]
{model_a_analysis}
[End of writer A0493]

[Writer A0488]
{model_b_analysis}
[End of writer A0488]

The criteria, each with its key in the answer:
- character_authenticity_insight: how authentic and insightful the characters are
- interesting_original: how interesting and original the piece is
- writing_quality: the quality of the writing itself
- coherence: coherence of plot, character choices and metaphor
- instruction_following: how closely the piece follows the prompt
- world_and_atmosphere: the world and its atmosphere
- avoids_cliches: freedom from clichés in characters, dialogue and plot
- avoids_verbosity: freedom from flowery verbosity and showy vocabulary
- avoids_poetic_overload: freedom from gratuitous metaphor and poetic overload

Notes:
- A writer can be strong on one criterion and weak on another: weigh each on its own.
- Pieces may be cut short to keep their lengths comparable; do not hold that against either.
- Every criterion needs a winner: no ties.

For each criterion write the stronger writer's label followed by one to five "+" for the size of the gap, from \
"A0493+" (slightly stronger) to "A0488+++++" (far stronger).

Answer with one JSON object and nothing else, quotes inside strings escaped:
{
"chain_of_thought_reasoning": "your reasoning, before the verdicts",
"character_authenticity_insight": "label and pluses",
"interesting_original": "label and pluses",
"writing_quality": "label and pluses",
"coherence": "label and pluses",
"instruction_following": "label and pluses",
"world_and_atmosphere": "label and pluses",
"avoids_cliches": "label and pluses",
"avoids_verbosity": "label and pluses",
"avoids_poetic_overload": "label and pluses"
}
"""
PAIRWISE_FIELDS = ("writing_prompt", "seeded_prompt", "model_a_analysis", "model_b_analysis")


@dataclass(frozen=True)
class Game:
    """One pairwise call: ``test`` against ``other`` on one prompt and iteration; ``reversed``: ``other`` first."""

    prompt: Prompt
    test: Piece
    other: Piece
    test_model: str
    other_model: str
    reversed: bool

    def messages(self, template: str | None, system_prompt: str | None) -> list[dict]:
        first, second = (self.other, self.test) if self.reversed else (self.test, self.other)
        values = {
            "writing_prompt": self.prompt.text,  # as the benchmark fills it: <SEED> not replaced
            "seeded_prompt": self.prompt.seeded(self.test.iteration),
            "model_a_analysis": (first.text or "")[:TRUNCATE_CHARS],
            "model_b_analysis": (second.text or "")[:TRUNCATE_CHARS],
        }
        user = fill(template or PAIRWISE_TEMPLATE, PAIRWISE_FIELDS, values, format_style=False)
        return ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
            {"role": "user", "content": user}
        ]


def opponents(pieces: Sequence[Piece], policy: str) -> dict[str, list[Piece]]:
    """``--pairwise-against``'s pieces by model; each needs a model, not the policy's."""
    found: dict[str, list[Piece]] = {}
    for piece in pieces:
        if piece.model is None or piece.model == policy:
            raise InputError(f"{piece.where}: a --pairwise-against piece needs a model other than the policy's "
                             f"({policy!r}), got {piece.model!r}")  # fmt: skip
        found.setdefault(piece.model, []).append(piece)
    return found


def games(prompts: dict[str, Prompt], pieces_by_model: dict[str, list[Piece]]) -> list[Game]:
    """Every pair of models (in the given order, the earlier one the test model) on every prompt outside the
    benchmark's ignored ones and every iteration both answered, forward then reversed; prompts in file order."""
    by_key = {(m, p.prompt_id, p.iteration): p for m, ps in pieces_by_model.items() for p in ps if p.text is not None}
    iterations = sorted({i for _, _, i in by_key})
    models = list(pieces_by_model)
    found = []
    for prompt in prompts.values():
        if prompt.id in IGNORED_PROMPTS:
            continue
        for iteration in iterations:
            for a, test in enumerate(models):
                for other in models[a + 1 :]:
                    mine, theirs = by_key.get((test, prompt.id, iteration)), by_key.get((other, prompt.id, iteration))
                    if mine and theirs:
                        found += [Game(prompt, mine, theirs, test, other, flipped) for flipped in (False, True)]
    if not found:
        raise InputError("no prompt and iteration that the policy and a --pairwise-against model both answered "
                         f"(prompts {', '.join(IGNORED_PROMPTS)} are left out of the rating)")  # fmt: skip
    return found


def interpret(verdict: dict) -> tuple[float, int, int]:
    """(outcome for the first writer, its plus count, the second's): core/elo_helpers_cw.py's tally. Any key but
    the skipped ones counts, the reasoning included; a value that is not text may raise TypeError or
    AttributeError, which makes the game a failure there as here."""
    if not verdict:
        return 0.5, 0, 0
    first = second = 0
    for key, value in verdict.items():
        if key in SKIPPED_KEYS:
            continue
        if FIRST in value:
            pluses = value.count("+")
            if pluses > 0:
                first += pluses
            if key in PENALISING_KEYS:
                second -= pluses
        elif SECOND in value:
            pluses = value.count("+")
            if pluses > 0:
                second += pluses
            if key in PENALISING_KEYS:
                first -= pluses
    return (1.0 if first > second else 0.0 if second > first else 0.5), first, second


def pairwise_judgment(reply: str) -> Judgment:
    """The tally of the JSON between the reply's first "{" and last "}"; nothing read when that is not JSON or the
    tally fails on it (the benchmark records both as an error)."""
    start, end = reply.find("{"), reply.rfind("}")
    if start == -1 or end == -1 or end <= start:
        return Judgment()
    try:
        verdict = json.loads(reply[start : end + 1])
        if "error" in verdict:  # the benchmark reads a verdict with an "error" key as a failed call
            return Judgment()
        outcome, first, second = interpret(verdict)
    except (ValueError, TypeError, AttributeError):
        return Judgment()
    return Judgment(value={"outcome": outcome, "plus_first": first, "plus_second": second})


def fraction_for_test(outcome: float, plus_test: int, plus_other: int) -> float:
    """The test model's share of a game: 0.5 +- half the plus difference over 45, not clipped."""
    margin = (abs(plus_test - plus_other) / PLUS_SCALE) / 2.0 + 0.5
    return 0.5 if outcome == 0.5 else margin if outcome == 1.0 else 1.0 - margin


def game_record(game: Game, judgment: Judgment) -> dict[str, Any]:
    record = {
        "prompt_id": game.prompt.id, "iteration": game.test.iteration, "test_model": game.test_model,
        "other_model": game.other_model, "order": "reversed" if game.reversed else "forward",
        "error": judgment.error, "unreadable": judgment.parse_failure,
        "outcome_for_test": 0.5, "plus_for_test": 0, "plus_for_other": 0, "fraction_for_test": 0.5,
    }  # fmt: skip
    if judgment.value is not None:
        tally = judgment.value
        first, second = tally["plus_first"], tally["plus_second"]
        outcome = tally["outcome"] if not game.reversed else 1.0 - tally["outcome"]
        plus_test, plus_other = (second, first) if game.reversed else (first, second)
        record.update(outcome_for_test=outcome, plus_for_test=plus_test, plus_for_other=plus_other,
                      fraction_for_test=fraction_for_test(outcome, plus_test, plus_other))  # fmt: skip
    return record


def failed(record: dict) -> bool:
    return record["error"] is not None or record["unreadable"]


def deduplicate(records: Sequence[dict]) -> list[dict]:
    """core/elo.py's dedupe: one record per (prompt, pair of (model, iteration), fraction rounded to 4 places),
    the first kept. Both orders of a matchup share the test model, so when they give the same fraction the
    reversed game is dropped; failed games (fraction 0.5) take part, as they do there."""
    seen, kept = set(), []
    for r in records:
        pair = tuple(sorted([(r["test_model"], r["iteration"]), (r["other_model"], r["iteration"])]))
        signature = (r["prompt_id"], pair, round(r["fraction_for_test"], 4))
        if signature not in seen:
            seen.add(signature)
            kept.append(r)
    return kept


def matchups(records: Sequence[dict]) -> list[tuple[str, str, str, float]]:
    """(model 1, model 2, prompt, fraction for model 1) per matchup, in the order matchups first appear; model 1
    sorts first, and the fraction comes from the plus counts summed over the matchup's games."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        (m1, i1), (m2, i2) = sorted([(r["test_model"], r["iteration"]), (r["other_model"], r["iteration"])])
        groups.setdefault((m1, i1, m2, i2, r["prompt_id"]), []).append(r)
    found = []
    for (m1, _, m2, _, prompt_id), group in groups.items():
        plus_1 = sum(r["plus_for_test"] if r["test_model"] == m1 else r["plus_for_other"] for r in group)
        plus_2 = sum(r["plus_for_other"] if r["test_model"] == m1 else r["plus_for_test"] for r in group)
        outcome = 1.0 if plus_1 > plus_2 else 0.0 if plus_1 < plus_2 else 0.5
        found.append((m1, m2, prompt_id, fraction_for_test(outcome, plus_1, plus_2)))
    return found


def pseudo_wins(fraction: float, bins: int) -> tuple[int, int]:
    """bin_fraction_trueskill: (1, 1) for a draw, else 1 to ``bins`` wins for the side the fraction favours."""
    fraction = max(0.0, min(1.0, fraction))
    if abs(fraction - 0.5) < 1e-9:
        return 1, 1
    wins = max(1, min(bins, math.ceil(abs(fraction - 0.5) / (0.5 / bins))))
    return (int(wins), 0) if fraction > 0.5 else (0, int(wins))


def solve(models: Sequence[str], found: Sequence[tuple[str, str, str, float]], bins: int):
    """TrueSkill from every model at (1200, 400), the matchups applied in order: (1, 1) pseudo-wins as one draw,
    else the wins one by one. An update the package would fail (``FloatingPointError``) ends that matchup's
    updates, as the benchmark's solver skips it."""
    ratings = {m: ENV.rating(DEFAULT_RATING, SIGMA) for m in models}
    for m1, m2, _, fraction in found:
        if m1 == m2:
            continue
        wins_1, wins_2 = pseudo_wins(fraction, bins)
        try:
            if (wins_1, wins_2) == (1, 1):
                ratings[m1], ratings[m2] = ENV.rate_1vs1(ratings[m1], ratings[m2], drawn=True)
                continue
            for _ in range(wins_1):
                ratings[m1], ratings[m2] = ENV.rate_1vs1(ratings[m1], ratings[m2])
            for _ in range(wins_2):
                ratings[m2], ratings[m1] = ENV.rate_1vs1(ratings[m2], ratings[m1])
        except (ArithmeticError, ValueError):
            continue
    return {m: r.mu for m, r in ratings.items()}, {m: r.sigma for m, r in ratings.items()}


def normalise(raw: dict[str, float], anchors: dict[str, float] = ANCHORS) -> dict[str, float]:
    """The linear map sending the first two anchors present to their targets; the raw scores with fewer."""
    present = [(m, target) for m, target in anchors.items() if m in raw]
    if len(present) < 2:
        return dict(raw)
    (a, target_a), (b, target_b) = present[:2]
    if abs(raw[a] - raw[b]) < 1e-6:
        scale, shift = 1.0, target_a - raw[a]
    else:
        scale = (target_a - target_b) / (raw[a] - raw[b])
        shift = target_a - scale * raw[a]
    return {m: score * scale + shift for m, score in raw.items()}


def ratings(models: Sequence[str], records: Sequence[dict]) -> dict[str, Any]:
    """The final solve of core/elo.py: mu with 4 bins, sigma from a second solve with 3, CI mu +- 1.96 sigma;
    elo_norm from the unrounded mu, the normalised CI from the rounded numbers, as there."""
    kept = [r for r in deduplicate(records) if not failed(r) and r["prompt_id"] not in IGNORED_PROMPTS]
    found = matchups(kept)
    mu, _ = solve(models, found, BIN_FOR_MU)
    _, sigma = solve(models, found, BIN_FOR_SIGMA)
    normalised = normalise(mu)
    table = {}
    for m in models:
        table[m] = {
            "elo": round(mu[m], 2),
            "elo_norm": round(normalised[m], 2),
            "sigma": round(sigma[m], 2),
            "ci_low": round(mu[m] - 1.96 * sigma[m], 2),
            "ci_high": round(mu[m] + 1.96 * sigma[m], 2),
        }
    bounds = {}
    for m, row in table.items():
        bounds.update({m: row["elo"], f"{m}__ci_low": row["ci_low"], f"{m}__ci_high": row["ci_high"]})
    bounds_normalised = normalise(bounds)
    for m, row in table.items():
        row["ci_low_norm"] = round(bounds_normalised[f"{m}__ci_low"], 2)
        row["ci_high_norm"] = round(bounds_normalised[f"{m}__ci_high"], 2)
        row["matchups"] = sum(m in (m1, m2) for m1, m2, _, _ in found)
    return {
        "models": table,
        "anchored": sum(m in models for m in ANCHORS) >= 2,
        "games_kept": len(kept),
        "games_deduplicated": len(records) - len(deduplicate(records)),
        "matchups": len(found),
        "draws": sum(abs(max(0.0, min(1.0, f)) - 0.5) < 1e-9 for *_, f in found),
    }


def summary(models: Sequence[str], records: Sequence[dict]) -> dict[str, Any]:
    """report.json's ``pairwise``: the ratings, the games and their failures."""
    failures = out.failures(sum(r["error"] is not None for r in records), sum(r["unreadable"] for r in records),
                            len(records))  # fmt: skip
    return {**ratings(models, records), "games": len(records), "failures": failures}


def markdown_lines(rated: dict) -> list[str]:
    rows = [(m, f"{r['elo_norm']:.2f} [{r['ci_low_norm']:.2f}, {r['ci_high_norm']:.2f}]", f"{r['elo']:.2f}",
             f"{r['sigma']:.2f}", r["matchups"]) for m, r in rated["models"].items()]  # fmt: skip
    return [
        "",
        "## Rating (TrueSkill from pairwise verdicts, both orders)",
        "",
        f"{rated['games']} games, {rated['games_kept']} kept after dropping failures and repeated fractions "
        f"({rated['games_deduplicated']} repeats: both orders of a matchup giving the same fraction count once, as "
        f"in the benchmark), in {rated['matchups']} matchups ({rated['draws']} draws). Failed games are left out, as "
        f"the benchmark drops errored comparisons: {out.failures_line(rated['failures'])}.",
        "",
        out.markdown_table(["model", "elo_norm [95% CI]", "elo (raw)", "sigma", "matchups"], rows),
    ]


def plot_ratings(axes, rated: dict) -> None:
    table = rated["models"]
    bars = [{"mean": r["elo_norm"], "low": r["ci_low_norm"], "high": r["ci_high_norm"]} for r in table.values()]
    out.bar_plot_with_intervals(axes, list(table), bars, "EQ-Bench Creative Writing: rating (95% CI)", "elo_norm")
