"""`writing-rl eval eqbench-creative`: EQ-Bench Creative Writing v3 scored as the benchmark scores it.

Differential tests feed the same random judge replies and verdicts to our scoring and to transcriptions, written
here, of the benchmark's own functions (EQ-bench/creative-writing-bench: core/scoring.py, core/elo_helpers_cw.py,
core/trueskill_solver_cw.py, core/elo.py) and find no mismatch; our TrueSkill is checked against the `trueskill`
package when it is installed (it is not a dependency), against values recorded from it, and against the
closed-form two-player equations. End to end: a scripted judge on 127.0.0.1, resume from the cache, failures
counted, bad rows named.
"""

from __future__ import annotations

import json
import math
import random
import re

import numpy as np
import pytest

from writing_rl.evaluation import eqbench
from writing_rl.evaluation import eqbench_pairwise as pairwise
from writing_rl.evaluation import trueskill as ts
from writing_rl.evaluation.eqbench import CRITERIA, NEGATIVE_CRITERIA, run_eqbench_creative
from writing_rl.evaluation.eqbench_inputs import Piece, Prompt
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.kinds.eqbench import KIND
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings, Judgment
from writing_rl.settings import ConfigError
from writing_rl.tools.commands.evaluation import add_eval

from judge_server import Reply, quality
from offline_helpers import report_of, write_jsonl

# ---------------------------------------------------------------------------------------------------------------
# Transcriptions of the benchmark's scoring (EQ-bench/creative-writing-bench), kept as close to the source as reads.


def official_parse_judge_scores_creative(judge_model_response: str) -> dict:  # core/scoring.py
    scores = {}
    matches1 = re.findall(r"(.*?):\s*(?:Score\s+)?(-?\d+(?:\.\d+)?)", judge_model_response)
    matches2 = re.findall(r"(.*?):\s*\[(-?\d+(?:\.\d+)?)\]", judge_model_response)
    for matches in [matches1, matches2]:
        for match in matches:
            metric_name = match[0].strip()
            score = float(match[1])
            if score <= 20:
                scores[metric_name] = score
    return scores


def official_invert_if_negative(metric, score, negative_criteria):  # core/scoring.py
    if metric in negative_criteria:
        return 20.0 - score
    return score


def official_piece_scores(tasks, negative_criteria):  # core/scoring.py compute_creative_scores, its loop
    piece_scores = []
    for task_data in tasks:
        for _seed_mod, block in task_data.get("results_by_modifier", {}).items():
            j_scores = block.get("judge_scores", {})
            if not j_scores:
                continue
            local_vals = []
            for metric, val in j_scores.items():
                if isinstance(val, (int, float)):
                    new_val = official_invert_if_negative(metric, val, negative_criteria)
                    if new_val <= 20:
                        local_vals.append(new_val)
            if local_vals:
                piece_scores.append(sum(local_vals) / len(local_vals))
    return piece_scores


def official_compute_creative_scores(tasks, negative_criteria):  # core/scoring.py, the rest
    piece_scores = official_piece_scores(tasks, negative_criteria)
    if not piece_scores:
        return 0.0
    return sum(piece_scores) / len(piece_scores)


def official_single_score(tasks, negative_criteria):  # core/scoring.py compute_single_benchmark_score_creative
    avg_0_20 = official_compute_creative_scores(tasks, negative_criteria)
    return {"overall_score": round(avg_0_20, 2), "eqbench_creative_score": round(avg_0_20 * 5.0, 2)}


def official_bootstrap(tasks, negative_criteria, samples):
    """core/scoring.py bootstrap_benchmark_stability_creative, with the draws of random.choices given."""
    original = official_single_score(tasks, negative_criteria)["overall_score"]
    boot_scores = []
    for picks in samples:
        sample_tasks = [tasks[i] for i in picks]
        boot_scores.append(official_single_score(sample_tasks, negative_criteria)["overall_score"])
    boot_scores.sort()
    lower_idx = max(0, int((1 - 0.95) / 2 * len(boot_scores)))
    upper_idx = min(int((1 + 0.95) / 2 * len(boot_scores)) - 1, len(boot_scores) - 1)
    return {
        "original": original,
        "bootstrap_mean": float(np.mean(boot_scores)),
        "bootstrap_std": float(np.std(boot_scores, ddof=1)),
        "ci_lower": float(boot_scores[lower_idx]),
        "ci_upper": float(boot_scores[upper_idx]),
    }


def official_completed_tasks(replies):  # core/benchmark.py compute_benchmark_results_creative's task filter
    tasks = [
        {
            "status": "completed",
            "results_by_modifier": {"seed": {"judge_scores": official_parse_judge_scores_creative(r)}},
        }
        for r in replies
    ]
    return [t for t in tasks if any(b.get("judge_scores") for b in t["results_by_modifier"].values())]


def official_interpret_pairwise_result_cw(result_dict):  # core/elo_helpers_cw.py
    if not result_dict:
        return 0.5, 0, 0
    a_score = 0
    b_score = 0
    for key, val in result_dict.items():
        if key in ["improvement_suggestions", "theory_of_mind", "_item_order_idx"]:
            continue
        if "A0493" in val:
            plus_count = val.count("+")
            if plus_count > 0:
                a_score += plus_count
            if key in ["avoids_poetic_overload", "coherence", "avoids_verbosity"]:
                b_score -= plus_count
        elif "A0488" in val:
            plus_count = val.count("+")
            if plus_count > 0:
                b_score += plus_count
            if key in ["avoids_poetic_overload", "coherence", "avoids_verbosity"]:
                a_score -= plus_count
    if a_score > b_score:
        return 1.0, a_score, b_score
    elif b_score > a_score:
        return 0.0, a_score, b_score
    return 0.5, a_score, b_score


def official_compute_fraction_for_test_cw(outcome_for_test, plus_for_test, plus_for_other):  # core/elo_helpers_cw.py
    diff = abs(plus_for_test - plus_for_other)
    diff_norm = diff / 45.0
    margin = diff_norm / 2.0 + 0.5  # custom_blend_cw is the identity
    if outcome_for_test == 0.5:
        return 0.5
    elif outcome_for_test == 1.0:
        return margin
    return 1.0 - margin


def official_bin_fraction_trueskill(frac, bin_size):  # core/trueskill_solver_cw.py
    frac = max(0.0, min(1.0, frac))
    if abs(frac - 0.5) < 1e-9:
        return 1, 1
    step = 0.5 / bin_size
    if frac > 0.5:
        return int(max(1, min(bin_size, math.ceil((frac - 0.5) / step)))), 0
    return 0, int(max(1, min(bin_size, math.ceil((0.5 - frac) / step))))


def official_judge_result(reply):  # core/elo.py do_pairwise_judge_cw, then the checks of its caller
    start, end = reply.find("{"), reply.rfind("}")
    if start == -1 or end == -1 or end <= start:
        return None
    try:
        result = json.loads(reply[start : end + 1])
    except Exception:
        return None
    if "error" in result:
        return None
    try:
        return official_interpret_pairwise_result_cw(result)
    except Exception:  # _judge_item_iteration_pairs_in_parallel_cw records it as an error
        return None


def official_comparison(item_id, test, neighbor, iteration, direction, result):
    """One comp entry of core/elo.py _judge_item_iteration_pairs_in_parallel_cw (``result``: the interpreted
    verdict, None for an error)."""
    comp = {
        "item_id": item_id,
        "pair": {
            "test_model": test,
            "neighbor_model": neighbor,
            "test_model_iteration_id": str(iteration),
            "neighbor_model_iteration_id": str(iteration),
        },
    }
    if result is None:
        comp.update(error="x", outcome_for_test_model=0.5, plus_for_test=0, plus_for_other=0, fraction_for_test=0.5)
        return comp
    outcome, plus_a, plus_b = result
    if direction == "forward":
        comp.update(outcome_for_test_model=outcome, plus_for_test=plus_a, plus_for_other=plus_b)
    else:
        comp.update(
            outcome_for_test_model={1.0: 0.0, 0.0: 1.0}.get(outcome, 0.5), plus_for_test=plus_b, plus_for_other=plus_a
        )
    comp["fraction_for_test"] = official_compute_fraction_for_test_cw(
        comp["outcome_for_test_model"], comp["plus_for_test"], comp["plus_for_other"]
    )
    return comp


def official_deduplicate(comps):  # core/elo.py deduplicate_comparisons_cw
    seen, unique = set(), []
    for c in comps:
        pair = c["pair"]
        m1, m2 = tuple(
            sorted(
                [
                    (pair["test_model"], pair["test_model_iteration_id"]),
                    (pair["neighbor_model"], pair["neighbor_model_iteration_id"]),
                ]
            )
        )
        sig = f"{c['item_id']}|{m1[0]}|{m1[1]}|{m2[0]}|{m2[1]}|{round(c.get('fraction_for_test', -1.0), 4)}"
        if sig not in seen:
            seen.add(sig)
            unique.append(c)
    return unique


def official_solve(all_models, comps, bin_size, engine):  # core/trueskill_solver_cw.py solve_with_trueskill_cw
    grouped = {}
    for c in comps:
        pair = c["pair"]
        key = tuple(
            sorted(
                [
                    (pair["test_model"], pair["test_model_iteration_id"]),
                    (pair["neighbor_model"], pair["neighbor_model_iteration_id"]),
                ]
            )
        )
        grouped.setdefault((key[0][0], key[0][1], key[1][0], key[1][1], c["item_id"]), []).append(c)
    processed = []
    for (m1, _i1, m2, _i2, _item), group in grouped.items():  # _fraction_from_plus_cw
        plus_m1 = plus_m2 = 0
        for comp in group:
            if comp["pair"]["test_model"] == m1:
                plus_m1 += comp["plus_for_test"]
                plus_m2 += comp["plus_for_other"]
            else:
                plus_m2 += comp["plus_for_test"]
                plus_m1 += comp["plus_for_other"]
        outcome = 1.0 if plus_m1 > plus_m2 else 0.0 if plus_m1 < plus_m2 else 0.5
        processed.append((m1, m2, official_compute_fraction_for_test_cw(outcome, plus_m1, plus_m2)))
    env, rating = engine
    ratings = {m: rating(1200.0, 400.0) for m in all_models}
    for m1, m2, frac in processed:
        wins_m1, wins_m2 = official_bin_fraction_trueskill(frac, bin_size)
        try:
            if wins_m1 == 1 and wins_m2 == 1:
                ratings[m1], ratings[m2] = env.rate_1vs1(ratings[m1], ratings[m2], drawn=True)
            else:
                for _ in range(wins_m1):
                    ratings[m1], ratings[m2] = env.rate_1vs1(ratings[m1], ratings[m2])
                for _ in range(wins_m2):
                    r_m2, r_m1 = env.rate_1vs1(ratings[m2], ratings[m1])
                    ratings[m1], ratings[m2] = r_m1, r_m2
        except Exception:
            pass
    return {m: r.mu for m, r in ratings.items()}, {m: r.sigma for m, r in ratings.items()}


def official_normalize(raw_scores):  # core/elo.py normalize_elo_scores_cw
    anchors = {"deepseek/deepseek-r1": 1500, "meta-llama/llama-3.2-1b-instruct": 200}
    valid = {k: v for k, v in anchors.items() if k in raw_scores}
    if len(valid) < 2:
        return dict(raw_scores)
    (model_a, target_a), (model_b, target_b) = list(valid.items())[:2]
    raw_a, raw_b = raw_scores[model_a], raw_scores[model_b]
    if abs(raw_a - raw_b) < 1e-6:
        scale, shift = 1.0, target_a - raw_a
    else:
        scale = (target_a - target_b) / (raw_a - raw_b)
        shift = target_a - (scale * raw_a)
    return {m: s * scale + shift for m, s in raw_scores.items()}


def official_final_ratings(models, comps, engine):  # core/elo.py run_elo_analysis_creative, step 8
    ignored = ["5", "16", "20", "21", "26", "28", "30"]
    comps = [c for c in official_deduplicate(comps) if "error" not in c and c["item_id"].split("_")[0] not in ignored]
    mu, _ = official_solve(models, comps, 4, engine)
    _, sigma = official_solve(models, comps, 3, engine)
    normalized = official_normalize(mu)
    table = {
        m: {
            "elo": round(mu[m], 2),
            "elo_norm": round(normalized.get(m, mu[m]), 2),
            "sigma": round(sigma[m], 2),
            "ci_low": round(mu[m] - 1.96 * sigma[m], 2),
            "ci_high": round(mu[m] + 1.96 * sigma[m], 2),
        }
        for m in models
    }
    bounds = {}
    for m, d in table.items():
        bounds.update({m: d["elo"], f"{m}__ci_low": d["ci_low"], f"{m}__ci_high": d["ci_high"]})
    norm_bounds = official_normalize(bounds)
    for m, d in table.items():
        d["ci_low_norm"] = round(norm_bounds.get(f"{m}__ci_low", d["elo_norm"]), 2)
        d["ci_high_norm"] = round(norm_bounds.get(f"{m}__ci_high", d["elo_norm"]), 2)
    return table, mu, sigma


def rating_engine():
    """The `trueskill` package's environment when it is installed, else ours (then only the solver's logic is
    compared; our TrueSkill has its own tests)."""
    try:
        import warnings

        import trueskill

        warnings.filterwarnings("ignore", category=DeprecationWarning)
        env = trueskill.TrueSkill(mu=1200.0, sigma=400.0, beta=200.0, tau=4.0, draw_probability=0.0)
        return env, env.create_rating
    except ImportError:
        return pairwise.ENV, pairwise.ENV.rating


# ---------------------------------------------------------------------------------------------------------------
# Differential tests

NAMES = [*CRITERIA, "Chapter 2", "Overall", "Note", "Score", "", "overwrought"]


def random_reply(rng: random.Random) -> str:
    def value() -> str:
        n = rng.choice([rng.randint(-6, 26), rng.randint(0, 20), rng.randint(0, 20)])
        return f"{n}.{rng.randint(0, 9)}" if rng.random() < 0.2 else str(n)

    def line() -> str:
        name = rng.choice(NAMES)
        kind = rng.randrange(9)
        if kind == 0:
            return f"{name}: Score {value()}"
        if kind == 1:
            return f"{name}: [{value()}]"
        if kind == 2:
            return f"  {name}  :[{value()}] trailing"
        if kind == 3:
            return f"{name}: {value()}, {rng.choice(NAMES)}: {value()}"
        if kind == 4:
            return rng.choice(
                [
                    "The pacing slips at 3:15 in chapter 4: 12 lines drag.",
                    "[Scores]",
                    "",
                    "No colon 17 here",
                    f"{name}: N/A",
                    "Ratio 20:21",
                    f"{name}: [ {value()} ]",
                ]
            )
        return f"{name}: {value()}"

    if rng.random() < 0.05:  # only lower-is-better criteria below 0: every value is dropped once inverted
        return "\n".join(f"{rng.choice(NEGATIVE_CRITERIA)}: -{rng.randint(1, 5)}" for _ in range(rng.randint(1, 3)))
    return "[Analysis]\nSome words.\n\n[Scores]\n" + "\n".join(line() for _ in range(rng.randint(0, 30)))


def test_rubric_parsing_and_scores_match_the_official_functions():
    rng = random.Random(56)
    replies = [random_reply(rng) for _ in range(800)]
    mismatches = 0
    for reply in replies:
        ours, theirs = eqbench.parse_judge_scores(reply), official_parse_judge_scores_creative(reply)
        mismatches += list(ours.items()) != list(theirs.items())
        ours_pieces = [s for s in [eqbench.piece_score(ours)] if ours and s is not None]
        mismatches += ours_pieces != official_piece_scores(official_completed_tasks([reply]), NEGATIVE_CRITERIA)
    assert mismatches == 0
    assert any(not eqbench.parse_judge_scores(r) for r in replies)  # empty replies occur
    assert any(
        eqbench.parse_judge_scores(r) and eqbench.piece_score(eqbench.parse_judge_scores(r)) is None for r in replies
    )  # and replies whose every value is dropped

    for trial in range(60):  # whole runs: which tasks count, the headline numbers and the bootstrap
        run = rng.sample(replies, rng.randint(1, 60))
        parsed = [eqbench.parse_judge_scores(r) for r in run]
        piece_scores = [eqbench.piece_score(p) for p in parsed if p]
        tasks = official_completed_tasks(run)
        assert eqbench.headline(piece_scores) == official_single_score(tasks, NEGATIVE_CRITERIA)
        if trial % 10 == 0 and tasks:
            draws = np.random.default_rng(trial).integers(0, len(tasks), size=(500, len(tasks)))
            ours = eqbench.bootstrap(piece_scores, seed=trial)
            assert {k: ours[k] for k in ("original", "bootstrap_mean", "bootstrap_std", "ci_lower", "ci_upper")} == (
                official_bootstrap(tasks, NEGATIVE_CRITERIA, draws)
            )
    assert eqbench.headline([]) == {"overall_score": 0.0, "eqbench_creative_score": 0.0}
    assert eqbench.bootstrap([]) == {"error": "No tasks found for bootstrap"}


def random_verdict(rng: random.Random) -> dict:
    keys = [
        "chain_of_thought_reasoning",
        "character_authenticity_insight",
        "interesting_original",
        "writing_quality",
        "coherence",
        "instruction_following",
        "world_and_atmosphere",
        "avoids_cliches",
        "avoids_verbosity",
        "avoids_poetic_overload",
        "improvement_suggestions",
        "theory_of_mind",
        "extra",
    ]

    def value():
        roll = rng.random()
        if roll < 0.75:
            label = rng.choice(["A0493", "A0488", "A0293", "A0493 over A0488", ""])
            return label + "+" * rng.randint(0, 6) + rng.choice(["", " (clear)", " +"])
        return rng.choice([["A0493", "+", "+"], ["A0488", "+"], 3, None, {"A0493": 1}, {"x": 1}, True, "both"])

    return {k: value() for k in rng.sample(keys, rng.randint(0, len(keys)))}


def test_pairwise_reading_fraction_and_binning_match_the_official_functions():
    rng = random.Random(7)
    mismatches = 0
    for _ in range(3000):
        verdict = random_verdict(rng)
        if rng.random() < 0.05:
            verdict["error"] = "boom"
        reply = rng.choice(["Here: ", "", "```json\n"]) + json.dumps(verdict) + rng.choice(["", " done", "\n```"])
        if rng.random() < 0.05:
            reply = reply.replace("}", "", 1) if rng.random() < 0.5 else "no json at all"
        judgment = pairwise.pairwise_judgment(reply)
        theirs = official_judge_result(reply)
        ours = (
            None
            if judgment.value is None
            else tuple(judgment.value[k] for k in ("outcome", "plus_first", "plus_second"))
        )
        mismatches += ours != theirs
        if ours is not None:
            for flipped in (False, True):
                fraction = pairwise.fraction_for_test(ours[0] if not flipped else 1.0 - ours[0], *ours[1:])
                official = official_compute_fraction_for_test_cw(ours[0] if not flipped else 1.0 - ours[0], *ours[1:])
                mismatches += fraction != official
    assert mismatches == 0
    fractions = [rng.uniform(-0.3, 1.3) for _ in range(3000)] + [0.5, 0.5 + 1e-10, 0.625, 0.375, 1.0, 0.0]
    fractions += [0.5 + k * 0.125 / 3 for k in range(-12, 13)]
    for bins in (3, 4):
        assert [pairwise.pseudo_wins(f, bins) for f in fractions] == [
            official_bin_fraction_trueskill(f, bins) for f in fractions
        ]


PROMPTS = {pid: Prompt(pid, "c", "t", f"Prompt {pid}. <SEED>", ("s1", "s2")) for pid in ("1", "2", "5", "7", "9")}


def test_ratings_match_the_official_solver_and_normalisation():
    """Random verdicts for every pair of models on every prompt and iteration, both orders, some failed, through
    our records and ratings and through the transcribed comparison entries, dedupe, solver and anchoring."""
    engine = rating_engine()
    rng = random.Random(11)
    checked = 0
    for _ in range(40):
        models = rng.sample(
            ["deepseek/deepseek-r1", "meta-llama/llama-3.2-1b-instruct", "p", "q", "r"], rng.randint(2, 5)
        )
        records, comps = [], []
        for pid in PROMPTS:
            for iteration in (1, 2):
                for a, test in enumerate(models):
                    for other in models[a + 1 :]:
                        pieces = [Piece(m, pid, iteration, "text", "here") for m in (test, other)]
                        for flipped in (False, True):
                            roll = rng.random()
                            if roll < 0.1:
                                judgment, result = Judgment(error="http"), None
                            elif roll < 0.15:
                                judgment, result = Judgment(), None
                            else:
                                # small tallies, so that equal fractions in both orders (the dedupe) occur often
                                plus_a, plus_b = rng.randint(-3, 12), rng.randint(-3, 12)
                                outcome = 1.0 if plus_a > plus_b else 0.0 if plus_b > plus_a else 0.5
                                result = (outcome, plus_a, plus_b)
                                judgment = Judgment(
                                    value={"outcome": outcome, "plus_first": plus_a, "plus_second": plus_b}
                                )
                            game = pairwise.Game(PROMPTS[pid], *pieces, test, other, flipped)
                            records.append(pairwise.game_record(game, judgment))
                            comps.append(
                                official_comparison(
                                    pid, test, other, iteration, "reversed" if flipped else "forward", result
                                )
                            )
        ours = pairwise.ratings(models, records)
        table, mu, _ = official_final_ratings(models, comps, engine)
        assert {m: {k: v for k, v in row.items() if k != "matchups"} for m, row in ours["models"].items()} == table
        assert (
            pairwise.solve(
                models,
                pairwise.matchups(
                    [r for r in pairwise.deduplicate(records) if not pairwise.failed(r) and r["prompt_id"] != "5"]
                ),
                4,
            )[0]
            == mu
        )
        checked += ours["games_deduplicated"] > 0
    assert checked >= 20  # the dedupe of equal fractions in both orders was exercised


# ---------------------------------------------------------------------------------------------------------------
# TrueSkill

ENV = ts.TrueSkill(mu=1200.0, sigma=400.0, beta=200.0, tau=4.0, draw_probability=0.0)


def test_trueskill_matches_values_recorded_from_the_trueskill_package():
    """Recorded from trueskill 0.4.5 (default backend), TrueSkill(1200, 400, 200, 4, draw_probability=0)."""
    assert ts.draw_margin(0.0, 2, 200.0) == 1.0634655995097232e-05  # not 0: the package's erfcinv is a fit
    r = {name: ENV.rating(1200.0, 400.0) for name in "abc"}
    for x, y, drawn in [
        ("a", "b", False),
        ("a", "b", True),
        ("b", "c", False),
        ("c", "a", True),
        ("a", "c", False),
        ("b", "a", False),
        ("c", "b", True),
    ]:
        r[x], r[y] = ENV.rate_1vs1(r[x], r[y], drawn=drawn)
    assert {k: (v.mu, v.sigma) for k, v in r.items()} == {
        "a": (1167.3011987245777, 195.1685822278738),
        "b": (1267.1317060793801, 189.93476956449524),
        "c": (1092.2087428541843, 191.58934425083757),
    }
    equal = ENV.rate_1vs1(ENV.rating(1200.0, 400.0), ENV.rating(1200.0, 400.0), drawn=True)
    assert [round(g.mu, 3) for g in equal] == [1200.0, 1200.0] and [round(g.sigma, 3) for g in equal] == [460.212] * 2
    for first, second, drawn in [
        ((1200.0, 400.0), (40000.0, 40.0), False),
        ((40000.0, 40.0), (1200.0, 40.0), False),
        ((40000.0, 40.0), (1200.0, 40.0), True),
    ]:
        with pytest.raises(FloatingPointError):  # where the package raises too
            ENV.rate_1vs1(ENV.rating(*first), ENV.rating(*second), drawn=drawn)


def closed_form(first, second, drawn: bool):
    """The two-player TrueSkill update written out (Herbrich et al. 2007; Moser, 'Computing your skill'), with the
    same normal fits; our factor-graph version must agree to rounding."""
    var1, var2 = first.sigma**2 + 4.0**2, second.sigma**2 + 4.0**2
    c = math.sqrt(2 * 200.0**2 + var1 + var2)
    t, eps = (first.mu - second.mu) / c, ts.draw_margin(0.0, 2, 200.0) / c
    v, w = (ts.v_draw(t, eps), ts.w_draw(t, eps)) if drawn else (ts.v_win(t, eps), ts.w_win(t, eps))
    return (
        (first.mu + var1 / c * v, math.sqrt(var1 * (1 - var1 / c**2 * w))),
        (second.mu - var2 / c * v, math.sqrt(var2 * (1 - var2 / c**2 * w))),
    )


def test_trueskill_agrees_with_the_closed_form_and_with_the_package_when_installed():
    rng = random.Random(3)
    try:
        import warnings

        import trueskill

        warnings.filterwarnings("ignore", category=DeprecationWarning)
        package = trueskill.TrueSkill(mu=1200.0, sigma=400.0, beta=200.0, tau=4.0, draw_probability=0.0)
    except ImportError:
        package = None
    for _ in range(3000):
        raw = [(rng.uniform(0, 2500), rng.uniform(30, 400)) for _ in range(2)]
        first, second = (ENV.rating(*r) for r in raw)
        drawn = rng.random() < 0.3
        try:
            ours = ENV.rate_1vs1(first, second, drawn=drawn)
        except FloatingPointError:
            continue
        tolerance = 1e-6 if drawn else 1e-9  # a draw divides by a tiny interval's mass: rounding is amplified
        for (mu, sigma), rated in zip(closed_form(first, second, drawn), ours):
            assert rated.mu == pytest.approx(mu, rel=tolerance) and rated.sigma == pytest.approx(sigma, rel=tolerance)
        if package is not None:
            theirs = package.rate_1vs1(*(package.create_rating(*r) for r in raw), drawn=drawn)
            assert [(r.mu, r.sigma) for r in theirs] == [(r.mu, r.sigma) for r in ours]  # bit for bit


# ---------------------------------------------------------------------------------------------------------------
# End to end, against a scripted judge

BENCHMARK = {
    "1": {
        "category": "fiction",
        "title": "Harbour",
        "writing_prompt": "Write about a harbour. <SEED> 500 words.",
        "seed_modifiers": ["Include a gull.", "Set it at night."],
    },
    "5": {
        "category": "poetry",
        "title": "Frost",
        "writing_prompt": "A poem on frost. <SEED>",
        "seed_modifiers": ["Rhyme it.", "Free verse."],
    },
    "7": {
        "category": "fiction",
        "title": "Train",
        "writing_prompt": "A night train. <SEED>",
        "seed_modifiers": ["Two strangers.", "One secret."],
    },
}
R1, LLAMA = "deepseek/deepseek-r1", "meta-llama/llama-3.2-1b-instruct"


def between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def eqbench_judge(failing: dict):
    """Rubric requests: every criterion 10 + 4 x quality ("good" minus "bad"), lower-is-better ones 10 - 4 x quality,
    so that each piece scores 10 + 4 x quality; "EXTRA" adds a line the benchmark counts too, "NOSCORE" gets no score,
    "FAIL500" an HTTP 500 while ``failing["on"]``. Pairwise requests: the better piece wins every criterion."""

    def script(request: dict, index: int) -> Reply:
        user = request["messages"][-1]["content"]
        if "[Writer A0493]" in user:
            a = quality(between(user, "[Writer A0493]", "[End of writer A0493]"))
            b = quality(between(user, "[Writer A0488]", "[End of writer A0488]"))
            label = "A0493" if a >= b else "A0488"
            verdict = {
                k: label + "+" * min(5, 1 + abs(a - b)) for k in ("writing_quality", "coherence", "avoids_cliches")
            }
            return Reply(content=json.dumps({"chain_of_thought_reasoning": "weighed", **verdict}))
        piece = between(user, "[Piece]", "[End of piece]")
        if "FAIL500" in piece and failing["on"]:
            return Reply(status=500, body=b'{"error": "down"}')
        if "NOSCORE" in piece:
            return Reply(content="A fine piece, I would not score it.")
        q = quality(piece)
        lines = [f"{c}: {max(0, min(20, 10 - 4 * q if c in NEGATIVE_CRITERIA else 10 + 4 * q))}" for c in CRITERIA]
        extra = ["Chapter 2: 4"] if "EXTRA" in piece else []
        return Reply(content="[Analysis]\nSolid.\n\n[Scores]\n" + "\n".join(extra + lines))

    return script


def settings_for(server) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="judge", max_retries=0))


def write_prompts(tmp_path, prompts=BENCHMARK) -> str:
    path = tmp_path / "creative_writing_prompts_v3.json"
    path.write_text(json.dumps(prompts))
    return str(path)


POLICY = [
    {"prompt_id": "1", "iteration": 1, "response": "<think>plan</think>A good harbour story."},
    {"prompt_id": "5", "iteration": 1, "response": "A good good frost poem. EXTRA"},
    {"prompt_id": "7", "iteration": 1, "response": "A train story. FAIL500"},
    {"prompt_id": "1", "iteration": 2, "response": "A harbour at night. NOSCORE"},
    {"prompt_id": "5", "iteration": 2, "response": "<think>never closed"},
    {"prompt_id": 7, "iteration": "2", "response": "A good good train."},
]


def test_a_rubric_run_scores_as_the_benchmark_counts_failures_and_resumes(tmp_path, judge_server):
    failing = {"on": True}
    server = judge_server(script=eqbench_judge(failing))
    prompts, responses, out = write_prompts(tmp_path), write_jsonl(tmp_path / "p.jsonl", POLICY), tmp_path / "out"
    printed = run_eqbench_creative(prompts, responses, str(out), settings_for(server), progress=False)
    assert len(server.requests) == 5  # the unclosed <think> is no answer: no call
    sent = {between(r["messages"][-1]["content"], "[Piece]", "[End of piece]"): r["messages"] for r in server.requests}
    harbour = sent["A good harbour story."]  # the reasoning block is not shown
    assert len(harbour) == 1 and "Write about a harbour. Include a gull. 500 words." in harbour[0]["content"]
    assert "Set it at night." in sent["A harbour at night. NOSCORE"][0]["content"]  # iteration 2, the second seed
    report = report_of(out)
    pieces = [14.0, (22 * 18 + 4) / 23, 18.0]  # iteration 1 then 2, prompts in file order; "Chapter 2" counts
    average = sum(pieces) / 3
    assert report["mean_piece_score"] == average  # unrounded; overall_score is the benchmark's creative_score_0_20
    assert (report["overall_score"], report["eqbench_creative_score"]) == (round(average, 2), round(average * 5, 2))
    assert (report["pieces"], report["pieces_judged"], report["pieces_scored"]) == (6, 5, 3)
    assert report["failures"]["judge_error"] == 1 and report["failures"]["unreadable"] == 1
    assert report["failures"]["empty_responses"] == 1 and report["missing_pieces"] == 0
    assert report["other_keys"] == {"Chapter 2": 1} and report["criteria"]["Meandering"]["mean"] == pytest.approx(
        (6 + 2 + 2) / 3
    )  # raw values: lower is better, not inverted
    boot = report["bootstrap_analysis"]
    assert boot["n_bootstrap"] == 500 and boot["ci_lower"] <= boot["original"] <= boot["ci_upper"]
    assert report["eqbench_creative_ci"] == [round(boot["ci_lower"] * 5, 2), round(boot["ci_upper"] * 5, 2)]
    assert set(report["categories"]) == {"fiction", "poetry"}
    md = (out / "report.md").read_text()
    assert f"Rubric score **{round(average * 5, 2):.2f}**" in md and "'Chapter 2' x1" in md
    assert "bootstrap seeded with --seed 0 (the benchmark's is unseeded)" in md
    assert printed[0].startswith(f"policy: EQ-Bench Creative Writing rubric {round(average * 5, 2):.2f} (0-100;")
    lines = [json.loads(line) for line in (out / "pieces.jsonl").read_text().splitlines()]
    assert [(p["prompt_id"], p["iteration"], p["piece_score"]) for p in lines] == [
        ("1", 1, 14.0),
        ("5", 1, pieces[1]),
        ("7", 1, None),
        ("1", 2, None),
        ("7", 2, 18.0),
    ]

    failing["on"] = False  # a rerun retries the failed call only; the reply with no score is an answer, cached
    run_eqbench_creative(prompts, responses, str(out), settings_for(server), progress=False)
    assert len(server.requests) == 6 and report_of(out)["pieces_scored"] == 4
    assert report_of(out)["failures"]["judge_error"] == 0 and report_of(out)["failures"]["unreadable"] == 1
    before = report_of(out)
    run_eqbench_creative(prompts, responses, str(out), settings_for(server), progress=False)
    assert len(server.requests) == 6  # everything from the cache
    after = report_of(out)
    assert after["judge"]["cache_hits"] == 5 and {**after, "judge": None} == {**before, "judge": None}  # seeded
    assert {line["model"] for line in lines} == {"policy"}

    # the benchmark's own judge prompt is a str.format template: {writing_prompt} keeps <SEED>, as it does there
    template = tmp_path / "creative_writing_judging_prompt.txt"
    template.write_text(
        "{writing_prompt}\n[Piece]\n{test_model_response}\n[End of piece]\n{{not a field}}\n"
        "{lower_is_better_criteria}\n{creative_writing_criteria}"
    )
    run_eqbench_creative(
        prompts,
        responses,
        str(tmp_path / "official"),
        settings_for(server),
        template=str(template),
        system_prompt="Be strict.",
        progress=False,
    )
    request = server.requests[-1]["messages"]
    assert request[0] == {"role": "system", "content": "Be strict."} and "<SEED>" in request[1]["content"]
    assert (
        "\n{not a field}\nUnearned Transformations, Incongruent Ending Positivity, Overwrought" in request[1]["content"]
    )
    assert "\n- Adherence to Instructions\n- Believable Character Actions\n" in request[1]["content"]
    assert request[1]["content"].endswith("\n- Overall Impression")


def test_the_cli_rates_the_policy_against_the_anchors_from_a_runs_file(tmp_path, judge_server, capsys):
    import argparse

    server = judge_server(script=eqbench_judge({"on": False}))
    prompts, out = write_prompts(tmp_path), tmp_path / "rated"
    policy = write_jsonl(
        tmp_path / "policy.jsonl",
        [
            {"prompt_id": pid, "iteration": i, "model": "mine", "response": "A good piece."}
            for pid in BENCHMARK
            for i in (1, 2)
        ],
    )
    runs = {
        "run-r1": {
            "test_model": R1,
            "creative_tasks": {
                str(i): {
                    pid: {
                        "test_model": R1,
                        "status": "completed",
                        "results_by_modifier": {
                            BENCHMARK[pid]["seed_modifiers"][i - 1]: {
                                "model_response": "A good good good piece.",
                                "judge_scores": {},
                            }
                        },
                    }
                    for pid in BENCHMARK
                }
                for i in (1, 2)
            },
        }
    }
    (tmp_path / "others").mkdir()
    (tmp_path / "others" / "creative_bench_runs.json").write_text(json.dumps(runs))
    write_jsonl(
        tmp_path / "others" / "llama.jsonl",
        [
            {"prompt_id": pid, "iteration": i, "model": LLAMA, "response": "A bad piece."}
            for pid in BENCHMARK
            for i in (1, 2)
        ],
    )
    parser = argparse.ArgumentParser(prog="writing-rl")
    add_eval(parser.add_subparsers(dest="command"), kinds=(KIND,))
    args = parser.parse_args(
        [
            "eval",
            "eqbench-creative",
            "--prompts",
            prompts,
            "--responses",
            policy,
            "--out",
            str(out),
            "--pairwise-against",
            str(tmp_path / "others"),
            "--judge-url",
            server.base_url,
            "--judge-model",
            "judge",
            "--quiet",
        ]
    )
    assert args.handler(args) == 0
    # rubric: the policy's 6 pieces; pairwise: 3 pairs x 2 prompts (prompt 5 is left out of the rating) x 2
    # iterations x both orders
    assert len(server.requests) == 6 + 3 * 2 * 2 * 2
    report = report_of(out)
    rated = report["pairwise"]["models"]
    assert (rated[R1]["elo_norm"], rated[LLAMA]["elo_norm"]) == (1500.0, 200.0) and report["pairwise"]["anchored"]
    assert 200 < rated["mine"]["elo_norm"] < 1500 and rated["mine"]["ci_low_norm"] < rated["mine"]["elo_norm"]
    assert report["pairwise"]["games"] == 24 and report["pairwise"]["failures"]["judge_error"] == 0
    comparisons = [json.loads(line) for line in (out / "comparisons.jsonl").read_text().splitlines()]
    assert {c["prompt_id"] for c in comparisons} == {"1", "7"}
    assert {(c["test_model"], c["other_model"]) for c in comparisons} == {("mine", R1), ("mine", LLAMA), (R1, LLAMA)}
    printed = capsys.readouterr().out
    assert f"mine: rating {rated['mine']['elo_norm']:.2f} [" in printed and "ratings.png" in printed
    assert "## Rating (TrueSkill from pairwise verdicts, both orders)" in (out / "report.md").read_text()

    requests = tmp_path / "requests.jsonl"
    args = parser.parse_args(
        [
            "eval",
            "eqbench-creative",
            "--prompts",
            prompts,
            "--out",
            str(tmp_path / "req"),
            "--write-requests",
            str(requests),
        ]
    )
    assert args.handler(args) == 0
    rows = [json.loads(line) for line in requests.read_text().splitlines()]
    assert len(rows) == 9 and rows[-1]["iteration"] == 3 and rows[-1]["prompt"] == "A night train. Two strangers."


def test_bad_input_is_named(tmp_path):
    settings = JudgeSettings(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    prompts = write_prompts(tmp_path)

    def fails(rows, match, **kwargs):
        path = write_jsonl(tmp_path / "x.jsonl", rows)
        with pytest.raises((InputError, ConfigError), match=match):
            run_eqbench_creative(prompts, path, str(tmp_path / "out"), settings, progress=False, **kwargs)

    row = {"prompt_id": "1", "iteration": 1, "response": "text"}
    fails([{**row, "prompt_id": "27"}], r"x.jsonl:1: prompt_id '27' is not a prompt of the benchmark")
    fails([row, {**row, "iteration": 0}], r"x.jsonl:2: iteration must be an integer from 1, got 0")
    fails([{k: v for k, v in row.items() if k != "response"}], r"x.jsonl:1: missing response")
    fails(
        [row, {**row, "iteration": "1"}],
        r"x.jsonl:2: a second piece for model None, iteration 1, prompt '1' "
        r"\(the first: .*x.jsonl:1\)",
    )
    fails([{**row, "model": "a"}, {**row, "model": "b"}], r"the responses hold 2 models \(a, b\): pass --model")
    fails([{**row, "model": "a"}], r"--model 'c': no such model", model="c")
    template = tmp_path / "t.txt"
    template.write_text("Judge {writing_prompt}")
    fails([row], r"t.txt: the template has no \{test_model_response\} placeholder", template=str(template))
    write_jsonl(tmp_path / "other.jsonl", [row])
    fails(
        [row],
        r"other.jsonl:1: a --pairwise-against piece needs a model other than the policy's \('policy'\), "
        r"got None",
        against=[str(tmp_path / "other.jsonl")],
    )
    write_jsonl(tmp_path / "other.jsonl", [{**row, "prompt_id": "5", "model": "o"}])
    fails(
        [{**row, "prompt_id": "5"}],
        r"no prompt and iteration that the policy and a --pairwise-against model both "
        r"answered",
        against=[str(tmp_path / "other.jsonl")],
    )
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps({"r": {"creative_tasks": {"1": {"1": {"results_by_modifier": {"a": {}, "b": {}}}}}}}))
    with pytest.raises(InputError, match=r"runs.json: run 'r', iteration 1, prompt 1: 2 seed modifiers"):
        run_eqbench_creative(prompts, str(runs), str(tmp_path / "out"), settings, progress=False)
    broken = {**BENCHMARK, "7": {**BENCHMARK["7"], "seed_modifiers": []}}
    with pytest.raises(InputError, match=r"prompt '7': seed_modifiers must be a non-empty list of strings"):
        run_eqbench_creative(write_prompts(tmp_path, broken), str(runs), str(tmp_path / "out"), settings)
