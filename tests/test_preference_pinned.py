"""reward_fns.preference, pinned where tests/test_preference.py is silent: the last-line rule under an explicit
output format, how a bad label names its sample, and the preflight's view of a row."""

from __future__ import annotations

import pytest

from reward_fns.preference import compute_score, last_line_verdict, preflight_row, read_label

MALFORMED = {"score": 0.0, "valid_answer": 0, "correct": 0, "predicted_tie": 0}


def test_with_an_explicit_verdict_format_the_verdict_must_still_end_the_answer():
    answer = "Analysis.\n[[A]]\nThat is my verdict."
    assert last_line_verdict(answer, "verdict") is None
    assert compute_score("preference", answer, "A", None, output_format="verdict") == MALFORMED
    assert compute_score("preference", answer, "A", {"output_format": "verdict"}) == MALFORMED  # the row's
    assert last_line_verdict("Analysis.\n[[A]]", "verdict") == "A"


@pytest.mark.parametrize("output_format", ["scores", "auto"])
@pytest.mark.parametrize("line", ["A: 7/10, B: 4/10", "**A: 7, B: 4**", "A:7, B:4", "Scores: A: 7, B: 4"])
def test_training_wants_the_exact_score_line(line, output_format):
    # A judge's reader takes these score lines (writing_rl/protocols/pairwise.py); a GenRM in training must
    # write the exact 'A: 7, B: 4'.
    answer = f"Analysis.\n{line}"
    assert last_line_verdict(answer, output_format) is None
    assert compute_score("preference", answer, "A", None, output_format=output_format) == MALFORMED
    assert last_line_verdict("Analysis.\nA: 7, B: 4", output_format) == "A"


@pytest.mark.parametrize("extra_info", [None, {}, {"split": "train"}, {"index": None}])
def test_a_bad_label_of_a_row_without_index_names_no_index(extra_info):
    with pytest.raises(ValueError, match=r"^sample: ground truth must be the preferred slot 'A', 'B' or 'C'"):
        read_label("D", extra_info)


def test_the_preflight_accepts_a_labelled_row_and_names_one_it_cannot_score():
    assert preflight_row("A", {"index": 3}) is None
    assert preflight_row({"label": "[[C]]"}) is None
    with pytest.raises(ValueError, match=r"^sample index=3: ground truth .* got 'D'"):
        preflight_row("D", {"index": 3})
