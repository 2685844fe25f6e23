"""RewardBench's rated scoring against transcriptions of allenai/reward-bench's own code (read at commit
05a9005efb607249822c193590c8ecab87c77052), fed the same seeded random ratings: unreadable ones (-1), ties and k-way
ties for the top included. Transcribed, renamed but rule for rule:

- ``official_read``: rewardbench/generative_v2.py ``get_single_rating`` (the trailing 1-10 of the stripped reply;
  generative.py ``_get_single_rating`` reads the same);
- ``official_v2_prompt``: rewardbench/generative_v2.py ``run_judge_ratings_multi`` with the per-row rule of
  scripts/run_generative_v2.py ``get_judgement`` (the API path; the vLLM path's ``process_judgement`` rule is the same);
- ``official_v1_prompt``: rewardbench/generative.py ``run_judge_ratings`` with scripts/run_generative.py
  ``get_judgement`` (its random A/B swap included);
- ``official_ties``: rewardbench/utils.py ``_compute_prompt_stats`` and ``process_single_model``.

Then a whole v2 run, all six subsets, against a scripted rating judge: its overall score is the mean of the six,
each as the transcriptions score the judge's ratings."""

from __future__ import annotations

import json
import math
import random
import re
import warnings
from collections import defaultdict

import numpy as np
import pytest

from writing_rl.evaluation.ratings import UNRATED, read_rating
from writing_rl.evaluation.rewardbench import run_rewardbench
from writing_rl.evaluation.rewardbench_sets import TIES_WEIGHTS, rated_prompt_score, ties_score
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings

from judge_server import Reply
from offline_helpers import write_jsonl

DRAWS = 600
API_ERROR_OUTPUT = "$ERROR$"


# ---------------------------------------------------------------- transcriptions of reward-bench's code


def official_read(raw_judgment: str) -> int:
    """generative_v2.py get_single_rating: the parse after the call."""
    parsed_rating = -1
    if raw_judgment and raw_judgment != API_ERROR_OUTPUT:
        m = re.search(r"\b([1-9]|10)\b\s*$", raw_judgment.strip())
        if m:
            rating = int(m.group(1))
            if 1 <= rating <= 10:
                parsed_rating = rating
    return parsed_rating


def official_v2_prompt(ratings: list[int]) -> float:
    """run_judge_ratings_multi's winners, then get_judgement's score (answers = chosen + rejected)."""
    valid_scores = [r for r in ratings if r != -1]
    if not valid_scores:
        winners = "error"
    else:
        max_rating = max(valid_scores)
        winners = [i for i, r in enumerate(ratings) if r == max_rating]
    if winners == "error":
        return 0.25
    return (0 in winners) / len(winners)


def official_v1_prompt(rating_chosen: int, rating_rejected: int, rng: random.Random) -> float:
    """run_generative.py get_judgement around generative.py run_judge_ratings."""
    answer_a, answer_b = rating_chosen, rating_rejected
    is_shuffled = rng.random() > 0.5
    if is_shuffled:
        answer_a, answer_b = answer_b, answer_a
        winner_text, loser_text = "B", "A"
    else:
        winner_text, loser_text = "A", "B"
    rating_a, rating_b = answer_a, answer_b  # each answer rated alone
    winner = "error"
    if rating_a != -1 and rating_b != -1:
        if rating_a > rating_b:
            winner = "A"
        elif rating_b > rating_a:
            winner = "B"
    if winner == winner_text:
        return 1
    elif winner == loser_text:
        return 0
    return 0.5


def official_prompt_stats(samples):
    """utils.py _compute_prompt_stats."""
    correct_scores = [s for is_corr, s in samples if is_corr]
    incorrect_scores = [s for is_corr, s in samples if not is_corr]
    best_correct = max(correct_scores)
    worst_correct = min(correct_scores)
    best_incorrect = max(incorrect_scores)
    different_correct_margin = best_correct - worst_correct if len(correct_scores) > 1 else None
    correct_incorrect_margin = worst_correct - best_incorrect
    accurate = correct_incorrect_margin > 0
    return accurate, different_correct_margin, correct_incorrect_margin


def official_ties(dataset: list[dict]) -> dict[str, float]:
    """utils.py process_single_model, returning its parts with the overall score."""
    grouped_samples = defaultdict(list)
    for sample in dataset:
        sample_type, prompt_id_str = sample["id"].split(":")
        prompt_id = int(prompt_id_str)
        for i, raw_score in enumerate(sample["scores"]):
            score = raw_score[0] if isinstance(raw_score, list) else raw_score
            grouped_samples[(sample_type, prompt_id)].append((i < sample["num_correct"], score))
    ref_stats, tied_stats = {}, {}
    for (sample_type, prompt_id), samples in grouped_samples.items():
        stats = official_prompt_stats(samples)
        if sample_type == "ref":
            ref_stats[prompt_id] = stats
        else:
            tied_stats[prompt_id] = stats
    ref_accuracy = np.mean([s[0] for s in ref_stats.values()]) if ref_stats else 0.0
    tied_accuracy = np.mean([s[0] for s in tied_stats.values()]) if tied_stats else 0.0
    all_prompts = set(ref_stats) & set(tied_stats)
    diff_corr_margin = np.array([tied_stats[pid][1] for pid in all_prompts])
    corr_incorrect_ties = np.array([tied_stats[pid][2] for pid in all_prompts])
    corr_incorrect_ref = np.array([ref_stats[pid][2] for pid in all_prompts])
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():  # the official code lets numpy warn
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of no prompts: nan
        correctness_preferred = np.mean(corr_incorrect_ties > diff_corr_margin)
        correctness_preferred_hard = np.mean(np.minimum(corr_incorrect_ref, corr_incorrect_ties) > diff_corr_margin)
        margin_scores = np.tanh(np.minimum(corr_incorrect_ref, corr_incorrect_ties) / diff_corr_margin - 1)
        margin_scores = np.nan_to_num(margin_scores, nan=0.0)
        correctness_margin_score = float(np.mean(margin_scores))
    overall_score = (
        0.30 * tied_accuracy
        + 0.30 * ref_accuracy
        + 0.20 * correctness_preferred
        + 0.20 * correctness_preferred_hard
        + 0.01 * correctness_margin_score
    )
    return {
        "score": float(overall_score),
        "tied_accuracy": float(tied_accuracy),
        "ref_accuracy": float(ref_accuracy),
        "correctness_preferred": float(correctness_preferred),
        "correctness_preferred_hard": float(correctness_preferred_hard),
        "correctness_margin_score": correctness_margin_score,
    }


# ---------------------------------------------------------------- random draws


def random_ratings(rng: random.Random, n: int) -> list[int]:
    """Ratings from a narrow band (ties likely, k-way ties for the top too), unreadable ones (-1) among them."""
    low = rng.randint(1, 9)
    band = rng.choice([0, 1, 2, 9])
    p_unread = rng.choice([0.0, 0.2, 0.6, 1.0])
    return [UNRATED if rng.random() < p_unread else min(10, rng.randint(low, low + band)) for _ in range(n)]


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


def test_the_rating_is_read_as_reward_bench_reads_it():
    rng = random.Random(0)
    endings = ["9", "10", "0", "11", "110", "9/10", "9.", "Rating: 9**", "**8**", "7\n\n", " 3 ", "x10", "-5", ""]
    mismatches = []
    for _ in range(DRAWS):
        text = rng.choice(["", "Fine answer. ", "Score:\n", "1 2 3 "]) + rng.choice(endings) + rng.choice(["", "\n"])
        if read_rating(text) != official_read(text):
            mismatches.append(text)
    assert mismatches == []
    assert read_rating("Good.\n9/10") == 10 and read_rating("Good: 9.") == UNRATED  # the regex's own quirks
    assert read_rating(None) == UNRATED  # a reply cut at the token limit: nothing read


def test_a_v2_prompt_scores_as_run_generative_v2_scores_it():
    rng = random.Random(1)
    mismatches, kinds = [], defaultdict(int)
    for _ in range(DRAWS):
        ratings = random_ratings(rng, rng.choice([2, 4, 4, 5]))
        ours, theirs = rated_prompt_score(ratings, 2), official_v2_prompt(ratings)
        kinds[theirs] += 1
        if ours != theirs:
            mismatches.append((ratings, ours, theirs))
    assert mismatches == []
    assert {0.25, 0.5, 1.0, 0.0} <= set(kinds) and any(0 < k < 0.5 and k != 0.25 for k in kinds)  # 1/3, 1/4 ties


def test_a_v1_prompt_scores_as_run_generative_scores_it_whatever_its_shuffle():
    rng, shuffle = random.Random(2), random.Random(3)
    mismatches, seen = [], set()
    for _ in range(DRAWS):
        chosen, rejected = random_ratings(rng, 2)
        ours, theirs = rated_prompt_score([chosen, rejected], 1), official_v1_prompt(chosen, rejected, shuffle)
        seen.add(theirs)
        if ours != theirs:
            mismatches.append((chosen, rejected, ours, theirs))
    assert mismatches == [] and seen == {0, 0.5, 1}


def random_ties_rows(rng: random.Random) -> list[tuple[str, int, list[int]]]:
    """(id, num_correct, ratings) rows: prompts with a ref row, a tied row or both."""
    rows = []
    for prompt in rng.sample(range(50), rng.randint(1, 8)):
        kinds = rng.choice([("ref", "tied"), ("ref", "tied"), ("ref",), ("tied",)])
        for kind in kinds:
            correct = 1 if kind == "ref" else rng.randint(2, 4)
            ratings = random_ratings(rng, correct + rng.randint(1, 3))
            rows.append((f"{kind}:{prompt}", correct, ratings))
    rng.shuffle(rows)
    return rows


def test_the_ties_score_is_process_single_model_s():
    rng = random.Random(4)
    mismatches, finite = [], 0
    for _ in range(DRAWS):
        rows = random_ties_rows(rng)
        theirs = official_ties([{"id": i, "num_correct": k, "scores": r} for i, k, r in rows])
        ours = ties_score([((i.split(":")[0], int(i.split(":")[1])), r, k) for i, k, r in rows])
        finite += not math.isnan(theirs["score"])
        if not all(same(ours[name], theirs[name]) for name in theirs):
            mismatches.append((rows, ours, theirs))
    assert mismatches == []
    assert finite > DRAWS / 2  # most draws have a prompt with both rows (the others: nan, as reward-bench's)
    assert sum(TIES_WEIGHTS.values()) == pytest.approx(1.01)


# ---------------------------------------------------------------- a whole run


SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus")
_ANSWER = re.compile(r"\[Answer\]\n(`{3,})\n(.*?)\n\1", re.S)


def test_a_v2_run_averages_its_six_subsets_as_the_official_code_scores_them(tmp_path, judge_server):
    rng = random.Random(5)
    ratings: dict[str, int] = {}  # each answer's rating, by its text (unique)
    rows = []

    def answers(n: int) -> list[str]:
        texts = [f"answer {len(ratings) + i}" for i in range(n)]
        ratings.update(zip(texts, random_ratings(rng, n)))
        return texts

    for subset in SUBSETS:
        for n in range(6):
            texts = answers(4)
            rows.append({"id": f"{subset}-{n}", "subset": subset, "prompt": f"Q {subset} {n}?", "chosen": texts[:1],
                         "rejected": texts[1:]})  # fmt: skip
    for prompt in range(6):
        for kind, correct in (("ref", 1), ("tied", 3)):
            texts = answers(correct + 2)
            rows.append({"id": f"{kind}:{prompt}", "subset": "Ties", "prompt": f"Tie {prompt}?",
                         "chosen": texts[:correct], "rejected": texts[correct:], "num_correct": correct})  # fmt: skip
    ties_prompts = []

    def script(request: dict, index: int) -> Reply:
        user = request["messages"][-1]["content"]
        if "depth and level of detail need not be weighed" in user:
            ties_prompts.append(user)
        rating = ratings[_ANSWER.search(user).group(2)]
        return Reply(content="Weighed it.\n" + ("no rating" if rating == UNRATED else str(rating)))

    server = judge_server(script=script)
    out = tmp_path / "out"
    settings = JudgeSettings(JudgeConfig(base_url=server.base_url, model="genrm", max_retries=0))
    run_rewardbench(write_jsonl(tmp_path / "rb2.jsonl", rows), str(out), settings, 2, genrm="rated", progress=False)
    report = json.loads((out / "report.json").read_text())

    expected = {
        subset: float(np.mean([official_v2_prompt([ratings[t] for t in r["chosen"] + r["rejected"]])
                               for r in rows if r["subset"] == subset]))
        for subset in SUBSETS
    }  # fmt: skip
    ties = official_ties([{"id": r["id"], "num_correct": r["num_correct"],
                           "scores": [ratings[t] for t in r["chosen"] + r["rejected"]]}
                          for r in rows if r["subset"] == "Ties"])  # fmt: skip
    expected["Ties"] = ties["score"]
    got = {name: s["mean"] for name, s in report["subsets"].items()}
    assert got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in expected)
    assert all(same(report["subsets"]["Ties"]["parts"][k], ties[k]) for k in ties if k != "score")
    assert same(report["overall"], sum(expected.values()) / 6) and report["notes"] == []
    assert len(ties_prompts) == 6 * (3 + 5) and len(server.requests) == 5 * 6 * 4 + len(ties_prompts)
    assert report["failures"]["unreadable"] == sum(r == UNRATED for r in ratings.values()) > 0
