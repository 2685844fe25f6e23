"""How an ensemble's readings are combined (writing_rl/judge/votes.py): means, majorities, the split rules and
unreadable replies, on the judges' answers as the ensemble hands them over (``MemberAnswer``s)."""

from dataclasses import dataclass

import pytest

from writing_rl.judge import JudgeReply
from writing_rl.judge.base import NoJudge
from writing_rl.judge.ensemble import EnsembleReply, MemberAnswer, sample_keys
from writing_rl.judge.errors import JudgeError
from writing_rl.judge.sample import SampleJudge
from writing_rl.judge.votes import combine, read_answers
from writing_rl.protocols import Unreadable


@dataclass(frozen=True)
class Ranked:
    """A reading shaped like GRRM's: numbers, a ranking and the judge's reasoning."""

    scores: dict
    ranking: tuple
    reasoning: str


def look_up(text: str, readings: dict):
    """A reader whose reply text names its reading in ``readings`` (its argument, as a reader's slot is)."""
    return readings[text]


def answered(name: str, text: str, finish_reason: str = "stop") -> MemberAnswer:
    return MemberAnswer(name, reply=JudgeReply(text, finish_reason, 0.1))


def failed(name: str) -> MemberAnswer:
    return MemberAnswer(name, error=JudgeError("http://judge", "HTTP 500"))


def read(answers, readings, split="tie"):
    return read_answers(answers, look_up, (readings,), split)


def test_a_score_is_the_judges_mean_not_their_median():
    assert combine([1, 2, 9], "tie") == (4.0, False)
    assert combine([7, 8.5], "tie") == (7.75, False)
    assert combine([{"A": 1, "B": 10}, {"A": 2, "B": 0}, {"A": 9, "B": 2}], "tie") == ({"A": 4.0, "B": 4.0}, False)
    assert combine([(1, 0), (2, 0), (9, 3)], "tie") == ((4.0, 1.0), False)  # a tuple stays a tuple


def test_yes_or_no_readings_are_votes_not_numbers_to_average():
    assert combine([True, True, False], "tie") == (True, False)
    value, was_split = combine([True, False], "tie")
    assert was_split and isinstance(value, Unreadable) and "(different values)" in value


def test_mappings_that_cannot_be_averaged_key_by_key_are_voted_on_whole():
    assert combine([{"A": 1}, {"B": 1}, {"A": 1}], "tie") == ({"A": 1}, False)  # other keys
    assert combine([{"A": "x"}, {"A": "y"}, {"A": "x"}], "tie") == ({"A": "x"}, False)  # not numbers
    assert combine([{}, {}], "tie") == ({}, False)  # nothing to average
    assert combine([[], []], "tie") == ([], False)


def test_a_majority_needs_more_than_half_of_the_judges():
    assert combine(["win", "win", "loss"], "tie") == ("win", False)
    assert combine(["A", "A", "B", "B"], "tie") == ("C", True)


@pytest.mark.parametrize(
    "rule, values, counted",
    [
        ("tie", ["win", "loss"], "tie"),
        ("tie", ["win", "tie", "loss"], "tie"),  # every outcome at once is still a split over outcomes
        ("tie", ["A", "B", "C"], "C"),
        ("loss", ["win", "tie", "loss"], "loss"),
        ("loss", ["tie", "win"], "loss"),
    ],
)
def test_a_split_counts_as_its_rule_says(rule, values, counted):
    assert combine(values, rule) == (counted, True)


@pytest.mark.parametrize(
    "rule, values",
    [
        ("loss", ["A", "B", "C"]),  # whose loss? a verdict letter does not say
        ("unreadable", ["win", "loss"]),
        ("tie", ["win", "A"]),  # outcomes and verdicts together: no rule counts them
    ],
)
def test_a_split_no_rule_counts_is_unreadable_and_names_what_the_judges_said(rule, values):
    value, was_split = combine(values, rule)
    assert was_split and isinstance(value, Unreadable) and value.kind == "parse_error"
    said = ", ".join(sorted(repr(v) for v in set(values)))
    assert f"split ({said}) with no majority" in value and f"judge.ensemble.split={rule}" in value


def test_a_rankings_numbers_are_averaged_its_ranking_the_majoritys_and_its_reasoning_the_first_judges():
    a = Ranked({"A": 8, "B": 3}, ("A", "B"), "a's reasons")
    b = Ranked({"A": 6, "B": 5}, ("A", "B"), "b's reasons")
    c = Ranked({"A": 1, "B": 7}, ("B", "A"), "c's reasons")
    assert combine([a, b, c], "tie") == (Ranked({"A": 5.0, "B": 5.0}, ("A", "B"), "a's reasons"), False)
    # A field more than half of the judges read alike is theirs, whichever judge came first.
    shared = Ranked({"A": 2, "B": 2}, ("B", "A"), "b's reasons")
    assert combine([a, b, shared], "tie")[0].reasoning == "b's reasons"
    # Without a majority on the ranking either, the first judge's stands.
    tied = Ranked({"A": 0, "B": 0}, ("A", "B", "tie"), "its own reasons")
    assert combine([c, b, tied], "tie")[0] == Ranked({"A": 7 / 3, "B": 4.0}, ("B", "A"), "c's reasons")


def test_judges_agree_on_a_ranking_when_its_numbers_match_whatever_their_reasoning():
    readings = {
        "a": Ranked({"A": 8, "B": 3}, ("A", "B"), "a's reasons"),
        "b": Ranked({"A": 8, "B": 3}, ("A", "B"), "b's reasons"),
        "c": Ranked({"A": 8, "B": 4}, ("A", "B"), "c's reasons"),
    }
    same = read([answered("a", "a"), answered("b", "b")], readings)
    assert same.agreed is True and same.value.scores == {"A": 8.0, "B": 3.0}
    assert read([answered("a", "a"), answered("c", "c")], readings).agreed is False


def test_a_judge_whose_call_failed_has_no_say_wherever_it_stands():
    readings = {"win": "win", "loss": "loss"}
    reading = read([failed("a"), answered("b", "win"), failed("c"), answered("d", "win")], readings)
    assert (reading.value, reading.agreed, reading.split, reading.unreadable) == ("win", True, False, ())
    reading = read([failed("a"), answered("b", "win"), answered("c", "loss"), answered("d", "loss")], readings)
    assert (reading.value, reading.agreed, reading.split) == ("loss", False, False)


def test_one_judge_read_is_the_judgment_with_no_agreement_counted():
    reading = read([failed("a"), answered("b", "7"), failed("c")], {"7": 7})
    assert (reading.value, reading.agreed, reading.split, reading.unreadable) == (7, None, False, ())


def test_no_judge_answering_reads_as_unreadable_never_as_a_value():
    reading = read([failed("a"), failed("b"), failed("c")], {})
    assert isinstance(reading.value, Unreadable) and "none of the ensemble's 3 judges answered" in reading.value
    assert reading.unreadable == () and reading.agreed is None


def test_an_unreadable_reply_names_each_judge_and_why_and_keeps_a_kind_they_share():
    readings = {"win": "win", "?": Unreadable("no verdict found")}
    answers = [answered("a", "win"), answered("b", "?"), failed("c"), answered("d", "?")]
    reading = read(answers, readings)
    assert reading.unreadable == ("b", "d") and reading.value.kind == "parse_error"
    assert "2 of the ensemble's 4 judges' replies could not be read" in reading.value
    assert "(b: no verdict found; d: no verdict found)" in reading.value
    cut = read([answered("a", "win"), answered("b", "win", "length"), answered("c", "win", "length")], readings)
    assert cut.unreadable == ("b", "c") and cut.value.kind == "judge_truncated"


def test_unreadable_replies_of_different_kinds_are_a_parse_error():
    refused = MemberAnswer("b", reply=JudgeReply("", "content_filter", 0.1))
    reading = read([answered("a", "win", "length"), refused], {"win": "win"})
    assert reading.unreadable == ("a", "b") and reading.value.kind == "parse_error"


def test_a_judgment_read_from_one_judge_is_counted_with_no_judge_unreadable():
    """The reading an ensemble's sample keeps feeds its metrics, whichever way the judgment was read."""
    answers = (answered("a", "win"), failed("b"))
    sample = SampleJudge(NoJudge("-"))
    assert sample.read(EnsembleReply("", "stop", 0.1, answers=answers), look_up, {"win": "win"}) == "win"
    keys = sample_keys(("a", "b"), [], sample.reads)
    assert keys["judge/ensemble/a/unreadable_total"] == 0 and keys["judge/ensemble/b/unreadable_total"] == 0
    assert keys["judge/ensemble/judgments_total"] == 1 and keys["judge/ensemble/agreement"] == -1.0
