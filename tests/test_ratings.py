"""One answer rated alone (writing_rl/evaluation/ratings.py): the defaults are the benchmark's own reader and
its non-Ties prompt, the pointwise reader keeps a fractional score and gives a whole one as an int (as
judgments.jsonl records it), and an unknown reader is refused by name."""

from __future__ import annotations

import pytest

from writing_rl.evaluation.ratings import RATING_TEMPLATE, TIES_TEMPLATE, UNRATED, rating_messages, read_rating


def test_the_default_call_is_the_rating_readers_non_ties_prompt_with_no_system_message():
    default = rating_messages("Name a river.", "The Nile.")
    assert default == rating_messages("Name a river.", "The Nile.", reader="rating", ties=False)
    assert [m["role"] for m in default] == ["user"]
    assert RATING_TEMPLATE.split("[Request]")[0] in default[0]["content"]
    assert "need not be weighed" in TIES_TEMPLATE and "need not be weighed" not in default[0]["content"]


def test_the_default_reader_takes_the_integer_at_the_very_end():
    assert read_rating("A fine answer.\n8") == 8
    assert read_rating("A fine answer, 8 of 10.\nRating: 9**") == UNRATED


def test_the_pointwise_reader_keeps_a_fractional_score_and_gives_a_whole_one_as_an_int():
    half = read_rating('Solid.\n{"score": 7.5}', "pointwise", answer="The Nile.")
    whole = read_rating('Solid.\n{"score": 7}', "pointwise", answer="The Nile.")
    assert half == 7.5
    assert whole == 7 and isinstance(whole, int)


def test_an_unknown_reader_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^reader must be one of rating, pointwise, got 'stars'$"):
        read_rating("8", "stars")
