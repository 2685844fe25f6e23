"""reward_fns.preference: pairwise GenRM accuracy against the human label, by tables."""

import pytest

from reward_fns.preference import compute_score, last_line_verdict, read_label

CASES = [
    # answer, label, options, (score, valid_answer, correct, predicted_tie)
    ("A is vivid, B is flat.\n[[A]]", "A", {}, (1.0, 1, 1, 0)),
    ("A is vivid, B is flat.\n[[A]]", "B", {}, (0.0, 1, 0, 0)),
    ("Both are fine.\n[[C]]", "A", {}, (0.0, 1, 0, 1)),
    ("Both are fine.\n[[C]]", "A", {"tie_score": 0.5}, (0.5, 1, 0, 1)),
    ("Both are fine.\n[[C]]", "C", {}, (1.0, 1, 1, 1)),
    ("Both are fine.\n[[C]]", "B", {"allow_tie": False}, (0.0, 0, 0, 0)),
    ("B wins.\n[[B]]", "C", {}, (0.0, 1, 0, 0)),
    ("<think>maybe [[A]]</think>\nOn reflection B.\n[[B]]", "B", {}, (1.0, 1, 1, 0)),
    ("Analysis.\n### Scores:\nA: 4, B: 8", "B", {}, (1.0, 1, 1, 0)),
    ("A: 8, B: 4", "A", {"output_format": "scores"}, (1.0, 1, 1, 0)),
    ("A: 6, B: 6", "A", {"tie_score": 0.25}, (0.25, 1, 0, 1)),
    ("Analysis.\nB: 8, A: 4", "B", {}, (1.0, 1, 1, 0)),
    ("[[A]]", "[[A]]", {}, (1.0, 1, 1, 0)),
    ("[[B]]", {"label": "b"}, {}, (1.0, 1, 1, 0)),
]

MALFORMED = [
    ("", "A", {}),
    ("I prefer the first one.", "A", {}),
    ("[[A]] or maybe [[B]]", "A", {}),  # hedging
    ("[[A]]\nThat is my verdict, final answer.", "A", {}),  # the verdict does not end the answer
    ("<think>[[A]]", "A", {}),  # never stopped thinking
    ("<think>[[A]]</think>", "A", {}),  # no answer after thinking
    ("Analysis.\nA: 11, B: 4", "A", {}),
    ("Analysis.\nA: 7", "A", {}),
    ("Analysis.\n[[A]]", "A", {"output_format": "scores"}),
    ("Analysis.\nA: 8, B: 4", "A", {"output_format": "verdict"}),
]


@pytest.mark.parametrize("answer,label,options,expected", CASES)
def test_reward_table(answer, label, options, expected):
    result = compute_score("preference", answer, label, None, **options)
    assert set(result) == {"score", "valid_answer", "correct", "predicted_tie"}
    assert (result["score"], result["valid_answer"], result["correct"], result["predicted_tie"]) == expected


@pytest.mark.parametrize("answer,label,options", MALFORMED)
def test_malformed_answers_score_zero(answer, label, options):
    assert compute_score("preference", answer, label, None, **options) == {
        "score": 0.0,
        "valid_answer": 0,
        "correct": 0,
        "predicted_tie": 0,
    }


def test_output_format_comes_from_the_row_in_auto_mode():
    assert compute_score("p", "A: 8, B: 4", "A", {"output_format": "verdict"})["valid_answer"] == 0
    assert compute_score("p", "Fine.\n[[A]]", "A", {"output_format": "scores"})["valid_answer"] == 0
    assert last_line_verdict("Fine.\n[[A]]") == "A" and last_line_verdict("A: 2, B: 9") == "B"


def test_bad_labels_and_options_are_errors():
    for label in ("D", "", None, 1, {"chosen": "A"}):
        with pytest.raises(ValueError, match="sample index=7"):
            compute_score("p", "[[A]]", label, {"index": 7})
    with pytest.raises(ValueError, match="output_format"):
        compute_score("p", "[[A]]", "A", output_format="json")
    assert read_label(" a ") == "A"
