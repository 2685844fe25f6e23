"""protocols/rubric.py pinned: a row's rubric, the prompts that show it, and the readers of the judge's
scores (a reply that a response could have written into is never a reward)."""

import json
import math
import re

import numpy as np
import pytest

from writing_rl.protocols import Unreadable
from writing_rl.protocols.rubric import (
    RUBRIC_SYSTEM,
    Criterion,
    criterion_messages,
    read_criterion_score,
    read_rubric,
    read_rubric_scores,
    rubric_messages,
    rubric_reward,
)


def unreadable(result, pattern: str) -> bool:
    return isinstance(result, Unreadable) and re.match(pattern, result) is not None


def scores_block(*entries) -> str:
    return json.dumps({"scores": [{"id": i, "score": s} for i, s in entries]})


# ---------------------------------------------------------------- the rubric of a row


def test_a_rubric_from_parquet_is_read_like_a_list_with_weights_defaulting_to_one():
    rubric = np.array([{"criterion": "  Tells a story "}, {"criterion": "Rambles", "weight": -2}], dtype=object)
    assert read_rubric({"rubric": rubric}) == [Criterion("Tells a story", 1.0), Criterion("Rambles", -2.0)]
    assert all(isinstance(c.weight, float) for c in read_rubric({"rubric": rubric}))


@pytest.mark.parametrize(
    "rubric, message",
    [
        (None, r"ground_truth.rubric must be a non-empty list of \{criterion, weight\}, got None"),
        ("Tells a story", "must be a non-empty list"),
        ([{"criterion": "ok"}, "Names the station"], r"rubric\[1\].criterion must be a non-empty string, got None"),
        ([{"criterion": "   "}], r"rubric\[0\].criterion must be a non-empty string, got '   '"),
        ([{"criterion": "ok", "weight": True}], r"rubric\[0\].weight must be a non-zero number, got True"),
        ([{"criterion": "ok", "weight": math.inf}], r"rubric\[0\].weight must be a non-zero number, got inf"),
        ([{"criterion": "ok", "weight": 1}, {"criterion": "z", "weight": 0}], r"rubric\[1\].weight .* got 0$"),
    ],
)
def test_a_bad_rubric_names_the_entry_and_what_it_got(rubric, message):
    with pytest.raises(ValueError, match=message):
        read_rubric({"rubric": rubric})


def test_a_rubric_of_pitfalls_only_is_rejected():
    """Its reward would divide by a zero total of positive weights."""
    with pytest.raises(ValueError, match=r"^ground_truth.rubric has no criterion with a positive weight"):
        read_rubric({"rubric": [{"criterion": "Rambles", "weight": -1}]})


def test_a_ground_truth_that_is_not_a_mapping_has_no_rubric():
    with pytest.raises(ValueError, match="got None"):
        read_rubric([{"criterion": "ok"}])


# ---------------------------------------------------------------- prompts


CRITERIA = [Criterion("Tells a story", 2.0), Criterion("Contains factual errors", -1.0)]


def test_the_rubric_prompt_numbers_the_criteria_from_one_and_marks_pitfalls():
    sent = rubric_messages("Write.", "A story.", CRITERIA)
    assert sent[0] == {"role": "system", "content": RUBRIC_SYSTEM}
    assert "[Rubric]\n1. Tells a story\n2. (pitfall) Contains factual errors\n" in sent[-1]["content"]
    assert sent[-1]["content"].count("[Request]\nWrite.\n\n[Response]\n```\nA story.\n```\n") == 1
    assert [m["role"] for m in rubric_messages("Write.", "A story.", CRITERIA, system=None)] == ["user"]


def test_a_criterion_prompt_states_the_scale_a_pitfall_reverses():
    requirement = criterion_messages("Write.", "A story.", CRITERIA[0])[-1]["content"]
    pitfall = criterion_messages("Write.", "A story.", CRITERIA[1], system="Judge.")
    assert "[Criterion]\nTells a story\n" in requirement and "(10: meets it completely)" in requirement
    assert "[Request]\nWrite.\n\n[Response]\n```\nA story.\n```\n" in requirement
    assert "[Criterion]\n(pitfall) Contains factual errors\n" in pitfall[-1]["content"]
    assert "(10: falls into it completely, 1: not at all)" in pitfall[-1]["content"]
    assert pitfall[0] == {"role": "system", "content": "Judge."}
    assert [m["role"] for m in criterion_messages("W.", "R.", CRITERIA[0], system=None)] == ["user"]


# ---------------------------------------------------------------- per-criterion replies


@pytest.mark.parametrize("score", [1, 10])
def test_a_critic_score_at_either_end_of_the_scale_is_read(score):
    assert read_criterion_score(f'Fine.\n{{"score": {score}, "reason": "r"}}') == score


@pytest.mark.parametrize("closing", ["```", "~~~", "```  \n"])
def test_a_critic_object_may_close_a_fence_that_ends_the_reply(closing):
    reply = f'Fine.\n{closing[:3]}json\n{{"score": 6, "reason": "r"}}\n{closing}'
    assert read_criterion_score(reply) == 6


def test_a_critic_reply_whose_object_is_quoted_mid_reply_is_unreadable():
    result = read_criterion_score('It says {"score": 10, "reason": "best"} but I give it a 3.')
    assert unreadable(result, "the reply does not end with its JSON object"), result


def test_a_critic_score_that_is_not_an_integer_says_so():
    assert unreadable(read_criterion_score('{"score": 7.5}'), "score 7.5 is not an integer")


def test_a_critic_reply_with_an_open_reasoning_block_is_unreadable():
    result = read_criterion_score('<think>{"score": 9}')
    assert unreadable(result, "the judge's <think> block is never closed"), result


# ---------------------------------------------------------------- all-criteria replies


def test_all_scores_are_read_in_criterion_order_whatever_order_the_judge_wrote():
    reply = "Reasoning.\n" + scores_block((2, 10), (1, 1), (3, 5))
    assert read_rubric_scores(reply, 3) == [1.0, 10.0, 5.0]


def test_an_all_criteria_reply_that_does_not_end_with_its_object_is_unreadable():
    result = read_rubric_scores(scores_block((1, 9)) + "\nThose are the response's own scores; I give 2.", 1)
    assert unreadable(result, "the reply does not end with its JSON object"), result


def test_an_all_criteria_reply_with_an_open_reasoning_block_is_unreadable():
    assert unreadable(read_rubric_scores("<think>" + scores_block((1, 9)), 1), "the judge's <think> block")


@pytest.mark.parametrize(
    "answer, reason",
    [
        ('{"scores": {"1": 7}}', '"scores" must be a list of {"id", "score"}, got dict'),
        ('{"scores": [7]}', "criterion id None is not one of 1-2"),
        ('{"scores": [{"id": true, "score": 7}, {"id": 2, "score": 7}]}', "criterion id True is not one of 1-2"),
        ('{"scores": [{"id": 0, "score": 7}]}', "criterion id 0 is not one of 1-2"),
        ('{"scores": [{"id": 3, "score": 7}]}', "criterion id 3 is not one of 1-2"),
        ('{"scores": [{"id": 1, "score": 7}, {"id": 1, "score": 7}]}', "criterion 1 is scored twice"),
        (
            '{"scores": [{"id": 1, "score": true}, {"id": 2, "score": 7}]}',
            "criterion 1: score True is not within 1-10",
        ),
        ('{"scores": [{"id": 1, "score": "9"}, {"id": 2, "score": 7}]}', "criterion 1: score '9' is not within"),
        ('{"scores": [{"id": 2, "score": 7}]}', "criteria [1] have no score"),
        ('{"note": 1}', 'no JSON object with a "scores" field'),
        ('{"scores": [{"id": 1, "score": 2, "id": 2}]}', 'a JSON object has "id" twice'),
    ],
)
def test_a_malformed_scores_object_is_unreadable_and_says_why(answer, reason):
    result = read_rubric_scores("Reasoning.\n" + answer, 2)
    assert unreadable(result, re.escape(reason)), result


def test_scores_at_the_ends_of_the_scale_are_read():
    assert read_rubric_scores(scores_block((1, 1), (2, 10)), 2) == [1.0, 10.0]


def test_a_scores_field_outside_any_object_is_unreadable():
    reply = 'The response wrote "scores": [10, 10].\n' + scores_block((1, 3), (2, 4))
    assert unreadable(read_rubric_scores(reply, 2), 'a "scores" field outside any well-formed JSON object')


def test_agreeing_scores_objects_are_read_and_conflicting_ones_are_not():
    same = scores_block((1, 3), (2, 4))
    assert read_rubric_scores(f"Draft: {same}\nFinal: {same}", 2) == [3.0, 4.0]
    result = read_rubric_scores(f"{scores_block((1, 10), (2, 10))}\n{same}", 2)
    assert unreadable(result, 'conflicting "scores" objects in one reply'), result


# ---------------------------------------------------------------- the reward


def test_the_reward_weighs_requirements_subtracts_pitfalls_and_is_floored_at_zero():
    criteria = [Criterion("a", 3.0), Criterion("b", 1.0), Criterion("pit", -2.0)]
    assert rubric_reward(criteria, [10, 1, 1]) == pytest.approx(3 / 4)
    assert rubric_reward(criteria, [10, 10, 5.5]) == pytest.approx((4 - 2 * 0.5) / 4)
    assert rubric_reward(criteria, [1, 10, 10]) == 0.0
    assert rubric_reward([Criterion("a", 0.5)], [4]) == pytest.approx(1 / 3)
