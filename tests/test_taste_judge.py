"""The stand-in judge with a taste (tests/stand_in_judge.py --taste, tests/taste.py): the preference it
applies, the same in every reply format we send, read back by our own readers; its noise knob; and the
measure a learning check follows."""

import pytest

from writing_rl.evaluation.writingbench import CriterionCall, Query, critic_judgment, critic_messages
from writing_rl.protocols import gqm_prompt, read_score_pair
from writing_rl.protocols.comparison import comparison_messages, read_outcome
from writing_rl.protocols.gqm_reply import read_gqm_output
from writing_rl.protocols.prompts import pairwise_messages
from writing_rl.protocols.rubric import (
    Criterion,
    criterion_messages,
    read_criterion_score,
    read_rubric_scores,
    rubric_messages,
)

from stand_in_judge import script
from taste import measure, parse_taste

E_RICH, E_POOR = "eerie green trees seem eleven feet deep", "a dull grey cat sat on a mat"


def reply(messages, taste: str | None, flip: float = 0.0) -> str:
    answer = script({"messages": messages}, 0, taste=parse_taste(taste) if taste else None, flip=flip)
    assert answer.status == 200, answer.body
    return answer.content


@pytest.mark.parametrize(
    ("spec", "text", "expected"),
    [
        ("letter:e", "Eerie trees", 5.0),
        ("-letter:e", "Eerie trees", 5.0),  # the measure is the quantity, whichever way the taste points
        ("word:the", "The cat, the other; theory", 2.0),
        ("length:3-5", "one two three four five six", 6.0),
        ("ending:!", "go now!  ", 1.0),
    ],
)
def test_the_measure_is_the_quantity_on_the_text(spec, text, expected):
    assert parse_taste(spec).measure(text) == expected
    assert measure(solution_str=text, taste=spec) == expected  # the watch's entry point


def test_value_and_grade_rise_with_what_the_taste_likes():
    more, fewer = parse_taste("letter:e"), parse_taste("-letter:e")
    assert more.value(E_RICH) > more.value(E_POOR) and fewer.value(E_RICH) < fewer.value(E_POOR)
    assert more.grade(E_RICH) > more.grade(E_POOR) and fewer.grade(E_RICH) < fewer.grade(E_POOR)
    band = parse_taste("length:3-5")
    assert band.value("a b c d") == 0 > band.value("a b") > band.value("a")
    assert band.value("a b c d") > band.value("a b c d e f g")
    assert all(0 <= t.grade(x) <= 10 for t in (more, fewer, band) for x in ("", E_RICH * 30, E_POOR))


@pytest.mark.parametrize("bad", ["", "letter", "letter:", "letter:ab", "colour:red", "length:9-3", "length:x"])
def test_a_malformed_taste_is_refused_saying_what_was_expected(bad):
    with pytest.raises(ValueError, match="expected|takes one character|LOW-HIGH"):
        parse_taste(bad)


@pytest.mark.parametrize("slot", ["A", "B"])
@pytest.mark.parametrize(("taste", "winner"), [("letter:e", E_RICH), ("-letter:e", E_POOR)])
def test_pairwise_verdicts_follow_the_taste_in_either_slot(slot, taste, winner):
    loser = E_POOR if winner == E_RICH else E_RICH
    messages = comparison_messages("Write a line.", winner, loser, slot)
    assert read_outcome(reply(messages, taste), slot) == "win"
    messages = comparison_messages("Write a line.", loser, winner, slot)
    assert read_outcome(reply(messages, taste), slot) == "loss"
    assert read_outcome(reply(comparison_messages("Write.", E_RICH, E_RICH, slot), taste), slot) == "tie"


def test_score_pairs_follow_the_taste():
    messages = pairwise_messages("Write a line.", E_POOR, E_RICH, output="scores")
    a, b = read_score_pair(reply(messages, "letter:e"))
    assert b > a


@pytest.mark.parametrize("taste", ["letter:e", "-letter:e"])
def test_a_group_ranking_and_its_scores_follow_the_taste(taste):
    texts = ["a cat", "the tree", "eerie green trees seem eleven feet deep and free", "we see"]
    messages = gqm_prompt.build_messages(texts, source_text="Ein Satz.", src_lang="de", trg_lang="en")
    read = read_gqm_output(reply(messages, taste), len(texts))
    scores = [read.scores[label] for label in "ABCD"]
    grades = [parse_taste(taste).grade(t) for t in texts]
    assert scores == grades
    best = max(range(4), key=lambda i: parse_taste(taste).value(texts[i]))
    assert "ABCD"[best] in read.ranking[0]


def test_rubric_scores_follow_the_taste_all_at_once_and_per_criterion():
    criteria = [Criterion("Vivid.", 1.0), Criterion("Clear.", 2.0)]
    for text, other in ((E_RICH, E_POOR), (E_POOR, E_RICH)):
        mine = read_rubric_scores(reply(rubric_messages("Write.", text, criteria), "letter:e"), 2)
        theirs = read_rubric_scores(reply(rubric_messages("Write.", other, criteria), "letter:e"), 2)
        assert (mine[0] > theirs[0]) == (text == E_RICH) and mine[0] == mine[1]
    one = [
        read_criterion_score(reply(criterion_messages("Write.", t, criteria[0]), "letter:e")) for t in (E_RICH, E_POOR)
    ]
    assert one[0] > one[1]


def test_writingbench_critic_scores_follow_the_taste():
    query = Query(index=1, domain1="d", domain2="e", query="Write.", checklist=())
    criterion = {"name": "Vivid", "criteria_description": "Vivid writing."}
    scores = [
        critic_judgment(reply(critic_messages(CriterionCall(query, criterion, text)), "letter:e")).value["score"]
        for text in (E_RICH, E_POOR)
    ]
    assert scores[0] > scores[1]


def test_flip_reverses_about_that_share_of_verdicts_and_the_same_request_the_same_way():
    """Over 2,000 distinct requests a flip of 0.2 reverses between 16% and 24% of them (the share is fixed by
    the requests' hashes, so this is not a draw that can fail once in five runs), and every reversal is a
    whole reversal: the verdict swapped, never dropped."""
    flips = 0
    for i in range(2000):
        messages = comparison_messages(f"Write line {i}.", E_RICH, E_POOR, "A")
        outcome = read_outcome(reply(messages, "letter:e", flip=0.2), "A")
        assert outcome in ("win", "loss")
        flips += outcome == "loss"
        assert read_outcome(reply(messages, "letter:e", flip=0.2), "A") == outcome
    assert 0.16 * 2000 <= flips <= 0.24 * 2000
    messages = comparison_messages("Write.", E_RICH, E_POOR, "A")
    assert read_outcome(reply(messages, "letter:e", flip=1.0), "A") == "loss"


def test_without_a_taste_the_verdicts_are_the_old_noise():
    """No taste: a hash of the texts, as tiny runs without TASTE have always had (rewards vary, mean nothing)."""
    outcomes = {
        read_outcome(reply(comparison_messages("Write.", f"text {i}", "other", "A"), None), "A") for i in range(30)
    }
    assert outcomes == {"win", "loss", "tie"}


@pytest.mark.parametrize("spec", ["letter:e", "word:the", "length:3-9", "ending:!"])
def test_a_graded_reference_has_the_measure_asked_for(spec):
    taste = parse_taste(spec)
    levels = (0, 1) if taste.kind == "ending" else (0, 1, 7, 16)
    assert [taste.measure(taste.text_with(level)) for level in levels] == [float(level) for level in levels]
