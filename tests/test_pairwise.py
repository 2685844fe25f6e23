"""reward_fns.pairwise: the Writing-RL reward, against a scripted judge double."""

import asyncio

import numpy as np
import pytest

from reward_fns.pairwise import compute_score, read_writing_rl_task
from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.protocols.comparison import outcome
from writing_rl.protocols.prompts import read_pairwise_request
from writing_rl.reward_loop.failures import UnreadableJudgeReply


class ScriptedJudge:
    """Answers each call with the next scripted text; records what it was asked."""

    def __init__(self, *replies, finish_reason="stop"):
        self.replies = list(replies)
        self.finish_reason = finish_reason
        self.asked = []

    async def complete(self, messages):
        self.asked.append(messages[-1]["content"])
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return JudgeReply(text=reply, finish_reason=self.finish_reason, latency_s=0.01)


def slot_of(user_message: str, text: str) -> str:
    _, a, b = read_pairwise_request(user_message)
    assert text in (a, b)
    return "A" if a == text else "B"


GT = {"prompt": "Write a haiku.", "target": ["ref easy", "ref hard"], "criteria": None, "id": 7}


def score(response, judge, **kwargs):
    sample_judge = SampleJudge(judge)
    result = asyncio.run(
        compute_score("writing", response, kwargs.pop("ground_truth", GT), {"index": 7}, judge=sample_judge, **kwargs)
    )
    return result, sample_judge


@pytest.mark.parametrize(
    "strategy, verdict, expected",
    [
        ("position-advantage", "[[A]]", ("win", 1.0)),
        ("position-advantage", "[[B]]", ("loss", 0.0)),
        ("position-advantage", "[[C]]", ("tie", 0.5)),
        ("position-disadvantage", "[[B]]", ("win", 1.0)),
        ("position-disadvantage", "[[A]]", ("loss", 0.0)),
        ("position-disadvantage", "[[C]]", ("tie", 0.5)),
    ],
)
def test_single_order_strategies(strategy, verdict, expected):
    judge = ScriptedJudge(f"reasoning\n{verdict}")
    result, _ = score("my answer", judge, strategy=strategy)
    name, reward = expected
    assert result["score"] == reward
    assert result[name] == 1.0 and result["win"] + result["tie"] + result["loss"] == 1.0
    assert result["position_consistent"] == -1 and result["parse_error"] == 0 and result["format_error"] == 0
    response_slot = "A" if strategy == "position-advantage" else "B"
    assert slot_of(judge.asked[0], "my answer") == response_slot


def test_default_strategy_shows_the_reference_first():
    judge = ScriptedJudge("[[B]]")
    result, _ = score("mine", judge)
    assert slot_of(judge.asked[0], "ref easy") == "A" and result["score"] == 1.0


def test_list_target_uses_the_first_reference_until_the_curriculum_moves_it():
    judge = ScriptedJudge("[[B]]")
    score("mine", judge)
    assert "ref easy" in judge.asked[0] and "ref hard" not in judge.asked[0]


@pytest.mark.parametrize(
    "verdicts, reward, consistent, rates",
    [
        (("[[A]]", "[[B]]"), 1.0, 1, (1.0, 0.0, 0.0)),  # wins in both orders
        (("[[B]]", "[[A]]"), 0.0, 1, (0.0, 0.0, 1.0)),  # loses in both
        (("[[A]]", "[[A]]"), 0.5, 0, (0.5, 0.0, 0.5)),  # judge always picks the first slot
        (("[[C]]", "[[C]]"), 0.5, 1, (0.0, 1.0, 0.0)),
        (("[[A]]", "[[C]]"), 0.75, 0, (0.5, 0.5, 0.0)),
    ],
)
def test_both_orders_are_averaged_and_consistency_reported(verdicts, reward, consistent, rates):
    judge = ScriptedJudge(*verdicts)
    result, sample_judge = score("mine", judge, strategy="both")
    assert result["score"] == pytest.approx(reward)
    assert result["position_consistent"] == consistent
    assert (result["win"], result["tie"], result["loss"]) == pytest.approx(rates)
    assert slot_of(judge.asked[0], "mine") == "A" and slot_of(judge.asked[1], "mine") == "B"
    assert len(sample_judge.calls) == 2


def test_configured_scores():
    result, _ = score("mine", ScriptedJudge("[[C]]"), win_score=2.0, tie_score=0.25, loss_score=-1.0)
    assert result["score"] == 0.25
    result, _ = score("mine", ScriptedJudge("[[A]]"), win_score=2.0, tie_score=0.25, loss_score=-1.0)
    assert result["score"] == -1.0


def test_no_verdict_is_a_parse_error_that_pays_a_loss_by_default():
    result, sample_judge = score("mine", ScriptedJudge("I like both, hard to say."))
    assert result["parse_error"] == 1 and result["score"] == 0.0 and result["loss"] == 1.0
    assert result["judge_truncated"] == 0 and result["judge_refusal"] == 0
    assert [why.kind for _, why in sample_judge.unreadable] == ["parse_error"]
    result, _ = score("mine", ScriptedJudge("no verdict"), neutral_reward=0.2)
    assert result["score"] == 0.0  # the neutral reward is for failed judge calls, not for unreadable replies
    result, _ = score("mine", ScriptedJudge("no verdict"), on_parse_error="tie")
    assert result["score"] == 0.5 and result["tie"] == 1.0 and result["parse_error"] == 1
    with pytest.raises(UnreadableJudgeReply, match="on_parse_error=raise"):
        score("mine", ScriptedJudge("no verdict"), on_parse_error="raise")
    with pytest.raises(ValueError, match="on_parse_error='neutral': expected one of"):
        score("mine", ScriptedJudge("no verdict"), on_parse_error="neutral")


@pytest.mark.parametrize("finish_reason, key", [("length", "judge_truncated"), ("content_filter", "judge_refusal")])
def test_truncated_or_refused_judge_reply_is_not_trusted(finish_reason, key):
    # Cut off by max_tokens: a verdict token seen mid-reasoning is not the final verdict.
    result, _ = score("mine", ScriptedJudge("Maybe [[B]] but let me check", finish_reason=finish_reason))
    assert result["parse_error"] == 1 and result[key] == 1 and result["score"] == 0.0


def test_one_unparseable_order_counts_as_a_loss_and_is_flagged():
    result, _ = score("mine", ScriptedJudge("[[A]]", "garbled"), strategy="both")
    assert result["score"] == 0.5 and result["parse_error"] == 1 and result["position_consistent"] == -1
    assert (result["win"], result["loss"]) == (0.5, 0.5)


def test_score_format_judges_with_a_tie_margin():
    result, _ = score("mine", ScriptedJudge("Reasoning\nA: 4, B: 8"), output="scores")
    assert result["score"] == 1.0  # the response is B by default
    result, _ = score("mine", ScriptedJudge("Reasoning\nA: 7, B: 8"), output="scores", tie_margin=1)
    assert result["score"] == 0.5


@pytest.mark.parametrize("response", ["<think>never closed", "<think>x</think>   ", "", "  "])
def test_no_answer_is_a_loss_and_a_format_error_without_a_judge_call(response):
    judge = ScriptedJudge()
    result, sample_judge = score(response, judge, strategy="both")
    assert result["score"] == 0.0 and result["format_error"] == 1 and result["loss"] == 1.0
    assert judge.asked == [] and sample_judge.calls == []


def test_closed_think_is_stripped_before_judging():
    judge = ScriptedJudge("[[B]]")
    score("<think>secret plan</think>The poem.", judge)
    assert "secret plan" not in judge.asked[0] and "[Response B]\n```\nThe poem.\n```" in judge.asked[0]


def test_judge_failure_gives_the_neutral_result_and_is_recorded():
    judge = ScriptedJudge("[[A]]", JudgeTimeout("http://judge/v1", "no reply", attempts=3))
    result, sample_judge = score("mine", judge, strategy="both", neutral_reward=0.1)
    assert result["score"] == 0.1 and result["parse_error"] == 0
    assert len(sample_judge.errors) == 1 and isinstance(sample_judge.errors[0], JudgeTimeout)


def test_criteria_reach_the_judge():
    truth = {**GT, "criteria": ["Use a kigo", "5-7-5"]}
    judge = ScriptedJudge("[[B]]")
    score("mine", judge, ground_truth=truth)
    assert "[Evaluation criteria]\n- Use a kigo\n- 5-7-5" in judge.asked[0]


def test_every_result_has_the_same_keys():
    keys = {
        frozenset(score("mine", ScriptedJudge("[[A]]"))[0]),
        frozenset(score("mine", ScriptedJudge("??"))[0]),
        frozenset(score("<think>", ScriptedJudge())[0]),
        frozenset(score("mine", ScriptedJudge(JudgeTimeout("u", "x")))[0]),
        frozenset(score("mine", ScriptedJudge("[[A]]", "[[B]]"), strategy="both")[0]),
    }
    assert len(keys) == 1


def test_ground_truth_forms_accepted():
    assert read_writing_rl_task({"prompt": "p", "target": "one ref"}).references == ("one ref",)
    assert read_writing_rl_task({"prompt": "p", "target": np.array(["a", "b"], dtype=object)}).references == ("a", "b")
    task = read_writing_rl_task('{"prompt": "p", "target": ["a"], "criteria": "be brief", "id": 3}')
    assert task.criteria == "be brief" and task.id == 3
    assert read_writing_rl_task({"prompt": "p", "target": ["a"], "id": np.int64(4)}).id == 4
    assert read_writing_rl_task({"prompt": "p", "target": ["a"], "id": 5.0}).id == 5  # parquet's float column
    assert read_writing_rl_task({"prompt": "p", "target": ["a"], "id": "essay-17"}).id == "essay-17"


@pytest.mark.parametrize(
    "truth, message",
    [
        ("not json", "not JSON"),
        (["a"], "must be a dict"),
        ({"target": ["a"], "id": 3}, r"sample id=3: reward_model.ground_truth.prompt"),
        ({"prompt": "p", "target": [], "id": 3}, "target must be"),
        ({"prompt": "p", "target": ["ok", ""], "id": 3}, "target must be"),
        ({"prompt": "p", "target": 5}, r"sample index=7: reward_model.ground_truth.target"),
        (
            {"prompt": "p", "target": ["a"], "id": 2.5},
            r"sample id=2.5: reward_model.ground_truth.id must be an integer",
        ),
        ({"prompt": "p", "target": ["a"], "id": ""}, r"ground_truth.id must be an integer or a non-empty string"),
        ({"prompt": "p", "target": ["a"], "id": [3]}, r"ground_truth.id .* got list \[3\]"),
    ],
)
def test_bad_ground_truth_names_the_sample_and_field(truth, message):
    with pytest.raises(ValueError, match=message):
        read_writing_rl_task(truth, {"index": 7})


def test_unknown_strategy_is_rejected():
    with pytest.raises(ValueError, match="strategy=.random.: expected one of"):
        score("mine", ScriptedJudge(), strategy="random")


@pytest.mark.parametrize("verdict, slot, result", [("A", "A", "win"), ("B", "A", "loss"), ("C", "B", "tie")])
def test_outcome(verdict, slot, result):
    assert outcome(verdict, slot) == result
