"""Properties of an ensemble's reading (writing_rl/judge/votes.py, docs/judges/ensembles.md) on arbitrary member
values, drawn by hypothesis with a fixed seed: the mean, the majority, and what a split counts as under each rule."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from writing_rl.judge import JudgeReply, JudgeTimeout
from writing_rl.judge.ensemble import MemberAnswer
from writing_rl.judge.ensemble_config import SPLIT_RULES
from writing_rl.judge.votes import combine, read_answers
from writing_rl.protocols import VERDICTS, Unreadable
from writing_rl.protocols.comparison import OUTCOMES, read_outcome

PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=150)

SCORES = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False) | st.integers(-1000, 1000)
MEMBERS = {"outcomes": sorted(OUTCOMES), "verdicts": sorted(VERDICTS)}
RANK = {"win": 2, "tie": 1, "loss": 0}  # what an outcome pays, in order


def majority(values):
    top, count = Counter(values).most_common(1)[0]
    return top if 2 * count > len(values) else None


@PROPERTY
@given(st.lists(SCORES, min_size=2, max_size=9), st.sampled_from(SPLIT_RULES), st.randoms(use_true_random=False))
def test_the_judges_scores_combine_to_their_mean_which_never_splits_and_ignores_their_order(scores, rule, rng):
    value, split = combine(scores, rule)
    shuffled = list(scores)
    rng.shuffle(shuffled)
    assert not split
    assert min(scores) - 1e-6 <= value <= max(scores) + 1e-6
    assert value == pytest.approx(sum(scores) / len(scores), rel=1e-9, abs=1e-6)
    assert combine(shuffled, rule)[0] == pytest.approx(value, rel=1e-9, abs=1e-6)
    assert combine([scores[0]] * len(scores), rule)[0] == pytest.approx(scores[0], rel=1e-12, abs=1e-9)


@PROPERTY
@given(st.integers(2, 5), st.integers(1, 4), st.data())
def test_a_rubrics_scores_combine_criterion_by_criterion_within_the_judges_range(judges, criteria, data):
    rows = data.draw(st.lists(st.lists(SCORES, min_size=criteria, max_size=criteria), min_size=judges, max_size=judges))
    as_lists, _ = combine(rows, "tie")
    as_maps, _ = combine([{f"c{k}": v for k, v in enumerate(row)} for row in rows], "tie")
    for k in range(criteria):
        column = [row[k] for row in rows]
        assert min(column) - 1e-6 <= as_lists[k] <= max(column) + 1e-6
        assert as_maps[f"c{k}"] == pytest.approx(as_lists[k])


@PROPERTY
@given(st.sampled_from(sorted(MEMBERS)), st.sampled_from(SPLIT_RULES), st.data())
def test_a_verdict_more_than_half_of_the_judges_read_is_the_ensembles_in_any_order(kind, rule, data):
    values = data.draw(st.lists(st.sampled_from(MEMBERS[kind]), min_size=2, max_size=9))
    value, split = combine(values, rule)
    shuffled = data.draw(st.permutations(values))
    assert combine(shuffled, rule) == (value, split)
    winner = majority(values)
    assert split == (winner is None)
    if winner is not None:
        assert value == winner
    if len(set(values)) == 1:
        assert (value, split) == (values[0], False)


@PROPERTY
@given(st.sampled_from(SPLIT_RULES), st.data())
def test_a_split_over_outcomes_never_pays_more_than_a_tie_under_any_rule(rule, data):
    """tie: a tie; loss: a loss; unreadable: an Unreadable, which the reward's on_parse_error rule pays."""
    values = data.draw(st.lists(st.sampled_from(sorted(OUTCOMES)), min_size=2, max_size=9))
    value, split = combine(values, rule)
    if not split:
        return
    expected = {"tie": "tie", "loss": "loss"}.get(rule)
    if expected is None:
        assert isinstance(value, Unreadable)
    else:
        assert value == expected and RANK[value] <= RANK["tie"]


@PROPERTY
@given(st.sampled_from(SPLIT_RULES), st.data())
def test_a_split_over_verdicts_names_no_answer(rule, data):
    """A verdict names a slot, not an answer: a split is the tie verdict C under split=tie, and unreadable
    otherwise (a loss cannot be said in slots)."""
    values = data.draw(st.lists(st.sampled_from(sorted(VERDICTS)), min_size=2, max_size=9))
    value, split = combine(values, rule)
    if split:
        assert (value == "C") if rule == "tie" else isinstance(value, Unreadable)


def reply_for(outcome: str) -> JudgeReply:
    """A reply a judge shown the candidate first (slot A) writes for this outcome, or an unreadable one."""
    verdict = {"win": "[[A]]", "tie": "[[C]]", "loss": "[[B]]"}.get(outcome, "I like both.")
    return JudgeReply(f"Reasons.\n{verdict}", "stop", 0.01)


MEMBER_STATES = st.sampled_from(["win", "tie", "loss", "unreadable", "failed"])


def answers_for(states) -> list[MemberAnswer]:
    return [
        MemberAnswer(f"j{k}", error=JudgeTimeout("http://j/v1", "down", attempts=1))
        if state == "failed"
        else MemberAnswer(f"j{k}", reply=reply_for(state))
        for k, state in enumerate(states)
    ]


@PROPERTY
@given(st.lists(MEMBER_STATES, min_size=1, max_size=7), st.sampled_from(SPLIT_RULES))
def test_a_failed_judge_has_no_say_and_an_unreadable_reply_makes_the_whole_judgment_unreadable(states, rule):
    reading = read_answers(answers_for(states), read_outcome, ("A", "verdict", 0.0), rule)
    said = [s for s in states if s not in ("failed",)]
    if "unreadable" in said:
        assert isinstance(reading.value, Unreadable)
        assert reading.unreadable == tuple(f"j{k}" for k, s in enumerate(states) if s == "unreadable")
        return
    if not said:
        assert isinstance(reading.value, Unreadable)
        return
    without_failed = read_answers(answers_for(said), read_outcome, ("A", "verdict", 0.0), rule)
    assert (reading.value, reading.split, reading.agreed) == (
        without_failed.value,
        without_failed.split,
        without_failed.agreed,
    )
    if len(said) == 1:
        assert reading.value == said[0] and reading.agreed is None
    else:
        assert reading.agreed == (len(set(said)) == 1)
        assert reading.value == (majority(said) or {"tie": "tie", "loss": "loss"}.get(rule, reading.value))


@PROPERTY
@given(st.lists(MEMBER_STATES, min_size=1, max_size=7), st.sampled_from(SPLIT_RULES))
def test_no_ensemble_pays_a_win_unless_more_than_half_of_the_judges_that_answered_read_a_win(states, rule):
    reading = read_answers(answers_for(states), read_outcome, ("A", "verdict", 0.0), rule)
    said = [s for s in states if s != "failed"]
    if reading.value == "win":
        assert "unreadable" not in said and 2 * said.count("win") > len(said)
