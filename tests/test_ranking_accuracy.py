"""reward_fns.ranking_accuracy: GRRM's RLVR reward, by tables."""

import json

import numpy as np
import pytest

from reward_fns.ranking_accuracy import (
    compute_score,
    margin_score,
    preflight_row,
    ranking_agreement,
    read_gold_ranking,
)

TRUTH = {"A": 8, "B": 7, "C": 6, "D": 2}  # A > B > C > D
TRUTH_JSON = json.dumps(TRUTH)
WHY = "A keeps every nuance; B is close; C loses a clause; D mistranslates the verb."


def answer(ranking, scores, analysis=WHY):
    return f"{analysis}\n\n### Final Ranking:\n\n{ranking}\n\n### Scores:\n\n{scores}\n"


CASES = [
    # solution, options, (score, valid, ranking_reward, score_reward)
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2"), {}, (2.0, 1, 1.0, 1.0)),
    # same order, every margin off: AB 1 vs 2 (0.6), AC 2 vs 4 (0.2), AD 6 vs 9 (0), BC 1 vs 2 (0.6), BD 5 vs 7 (0.2), CD 4 vs 5 (0.6)
    (answer("A > B > C > D", "A: 10, B: 8, C: 6, D: 1"), {}, (1.0 + 2.2 / 6, 1, 1.0, 2.2 / 6)),
    # B = C tie where the truth orders them: 5/6 pairs right; margins AB 1 vs 2, AC 2 vs 2, AD 6 vs 7, BC 1 vs 0, BD 5 vs 5, CD 4 vs 5
    (answer("A > B = C > D", "A: 9, B: 7, C: 7, D: 2"), {}, (5 / 6 + 4.4 / 6, 1, 5 / 6, 4.4 / 6)),
    # fully reversed: no pair right; only B-C's margin is within 2 (1 vs -1: 0.2)
    (answer("D > C > B > A", "D: 8, C: 7, B: 6, A: 2"), {}, (0.2 / 6, 1, 0.0, 0.2 / 6)),
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2"), {"score_scale": 0.5}, (1.0, 1, 1.0, 1.0)),
    (
        answer("A > B > C > D", "A: 9, B: 7, C: 6, D: 2"),
        {"margin_rewards": [1.0, 0.5]},
        (1.0 + 4.5 / 6, 1, 1.0, 4.5 / 6),
    ),
    ("A > B > C > D\nA: 8, B: 7, C: 6, D: 2", {"variant": "no_cot"}, (2.0, 1, 1.0, 1.0)),
    (
        "x" * 200 + "\n### Final Ranking:\nA > B > C > D\n### Scores:\nA: 8, B: 7, C: 6, D: 2",
        {"variant": "zero"},
        (2.0, 1, 1.0, 1.0),
    ),
    (f"{WHY}\nA > B > C > D\nA: 8, B: 7, C: 6, D: 2", {"require_headers": False}, (2.0, 1, 1.0, 1.0)),
    (
        f"<think>{WHY}</think>\n### Final Ranking:\nA > B > C > D\n### Scores:\nA: 8, B: 7, C: 6, D: 2",
        {},
        (2.0, 1, 1.0, 1.0),
    ),
]

MALFORMED = [
    ("", {}),
    ("I think A is best.", {}),
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2", analysis=""), {}),  # no reasoning
    (f"{WHY}\nA > B > C > D\nA: 8, B: 7, C: 6, D: 2", {}),  # headers missing
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 8"), {}),  # ranking disagrees with the scores
    (answer("A > B > C", "A: 8, B: 7, C: 6"), {}),  # D missing
    (answer("A > B > C > D > E", "A: 8, B: 7, C: 6, D: 2, E: 1"), {}),  # E is no candidate
    (answer("D < C < B < A", "A: 8, B: 7, C: 6, D: 2"), {}),
    (answer("A>B>C>D", "A: 8, B: 7, C: 6, D: 2"), {}),  # strict spacing
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 12"), {}),
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2") + "\nHope this helps!", {}),
    (f"<think>{WHY}\n### Final Ranking:\nA > B > C > D\n### Scores:\nA: 8, B: 7, C: 6, D: 2", {}),  # unclosed
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2"), {"variant": "no_cot"}),
    (answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2"), {"variant": "zero"}),  # 76 chars < 50 x 4
]


@pytest.mark.parametrize("solution,options,expected", CASES)
def test_reward_table(solution, options, expected):
    result = compute_score("gqm", solution, TRUTH_JSON, None, **options)
    assert set(result) == {"score", "valid_answer", "ranking_reward", "score_reward"}
    assert [result["score"], result["valid_answer"], result["ranking_reward"], result["score_reward"]] == pytest.approx(
        list(expected)
    )


@pytest.mark.parametrize("solution,options", MALFORMED)
def test_malformed_answers_score_zero(solution, options):
    result = compute_score("gqm", solution, TRUTH_JSON, None, **options)
    assert result == {"score": 0.0, "valid_answer": 0, "ranking_reward": 0.0, "score_reward": 0.0}


RANKING_TRUTH_CASES = [
    (f"{WHY}\n### Final Ranking:\nA > B > C > D", {}, 1.0, 1),
    (f"{WHY}\n### Final Ranking:\nB > A > C > D", {}, 5 / 6, 1),
    (f"{WHY}\n### Final Ranking:\nA = B = C = D", {}, 0.0, 1),
    (f"{WHY}\nA > B > C > D", {}, 0.0, 0),
    (f"{WHY}\nA > B > C > D", {"require_headers": False}, 1.0, 1),
    ("A > B > C > D", {"variant": "no_cot", "score_scale": 2.0}, 2.0, 1),
]


@pytest.mark.parametrize("solution,options,score,valid", RANKING_TRUTH_CASES)
def test_ranking_string_truth_rewards_the_ranking_only(solution, options, score, valid):
    result = compute_score("gqm", solution, "A > B > C > D", {"index": 3}, **options)
    assert result["score"] == pytest.approx(score) and result["valid_answer"] == valid
    assert result["score_reward"] == 0.0


def test_ground_truth_forms_and_prompt_type_from_extra_info():
    perfect = answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2")
    for truth in (
        TRUTH,
        TRUTH_JSON,
        {k: np.int64(v) for k, v in TRUTH.items()},
        {**TRUTH, "E": None},
        {k: float(v) for k, v in TRUTH.items()},
    ):
        assert compute_score("gqm", perfect, truth)["score"] == 2.0
    scores_only = f"{WHY}\n### Scores:\nA: 8, B: 7, C: 6, D: 2"
    assert compute_score("gqm", scores_only, TRUTH, {"prompt_type": "score"})["score"] == 2.0
    assert compute_score("gqm", scores_only, TRUTH)["valid_answer"] == 0  # expects ranking_score by default
    # the option wins over the row's prompt_type and over the default of a score-dict truth
    assert compute_score("gqm", scores_only, TRUTH, prompt_type="score")["score"] == 2.0
    assert (
        compute_score("gqm", scores_only, TRUTH, {"prompt_type": "ranking_score"}, prompt_type="score")["score"] == 2.0
    )
    # what verl's naive manager adds when it hosts a reward model is accepted and ignored
    assert (
        compute_score("gqm", perfect, TRUTH, reward_router_address="x:1", reward_model_tokenizer=None)["score"] == 2.0
    )


@pytest.mark.parametrize(
    "truth,match",
    [
        ("{not json", "not valid JSON"),
        ({"A": 1}, "at least 2"),
        ({"A": 1, "C": 2}, "keyed A, B"),
        ({"A": 1, "B": 2.5}, "must be integers"),
        ("A > B > A", "invalid"),
        ("A", "invalid"),
        (7, "must be a score dict"),
    ],
)
def test_bad_ground_truth_is_a_data_error_naming_the_sample(truth, match):
    with pytest.raises(ValueError, match=match) as info:
        compute_score("gqm", "anything", truth, {"index": 42})
    assert "sample index=42" in str(info.value)


def test_min_reasoning_chars_sets_how_much_reasoning_the_zero_variant_requires():
    short = answer("A > B > C > D", "A: 8, B: 7, C: 6, D: 2")  # 76 characters of reasoning: too few by default
    assert compute_score("gqm", short, TRUTH, variant="zero")["valid_answer"] == 0
    assert compute_score("gqm", short, TRUTH, variant="zero", min_reasoning_chars=10)["score"] == 2.0


def test_preflight_accepts_a_good_truth_and_names_the_row_of_a_bad_one():
    assert preflight_row(TRUTH_JSON, {"index": 1}) is None
    assert preflight_row("B > A = C") is None
    with pytest.raises(ValueError, match="sample index=9: ground truth scores must be keyed A, B"):
        preflight_row({"A": 1, "C": 2}, {"index": 9})


def test_pair_math():
    truth = read_gold_ranking({"A": 5, "B": 5, "C": 1})
    assert truth[1] == (("A", "B"), ("C",))
    assert ranking_agreement((("A", "B"), ("C",)), truth[1]) == 1.0
    assert ranking_agreement((("A",), ("B",), ("C",)), truth[1]) == pytest.approx(2 / 3)  # A-B should be a tie
    assert margin_score({"A": 5, "B": 5, "C": 1}, {"A": 5, "B": 5, "C": 1}) == 1.0
    assert margin_score({"A": 6, "B": 5, "C": 1}, {"A": 5, "B": 5, "C": 1}) == pytest.approx((0.6 + 0.6 + 1.0) / 3)
