"""reward_fns.rubric's compute_score with an in-process judge double (tests/test_rubric.py runs it only through
verl's reward loop, on Ray): what each layout asks the judge, the reward and every key of its result, what a
format error, a failed call and an unreadable reply pay, and the preflight's view of a row and of its calls."""

from __future__ import annotations

import asyncio
import json
import re
from types import SimpleNamespace

import pytest

from reward_fns.rubric import calls_per_rollout, compute_score, preflight_judge_messages, preflight_row
from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.protocols.rubric import RUBRIC_SYSTEM, Criterion, criterion_messages, rubric_messages
from writing_rl.reward_loop.failures import UnreadableJudgeReply

RUBRIC = [
    {"criterion": "Tells a story", "weight": 2.0},
    {"criterion": "Names the station", "weight": 1.0},
    {"criterion": "Contains factual errors", "weight": -1.0},
]
CRITERIA = [
    Criterion("Tells a story", 2.0),
    Criterion("Names the station", 1.0),
    Criterion("Contains factual errors", -1.0),
]
TRUTH = {"prompt": "Write about a station.", "rubric": RUBRIC}
# The judge's scores by criterion: the story told in part, the station named, no factual error.
SCORES = {"Tells a story": 7, "Names the station": 10, "Contains factual errors": 1}
REWARD = (2.0 * 6 / 9 + 1.0 * 9 / 9 - 1.0 * 0 / 9) / 3.0
NO_FLAGS = {"parse_error": 0, "judge_truncated": 0, "judge_refusal": 0}


class Judge:
    """Scores each criterion it is asked about from ``scores`` (by its text), in the layout asked: the scores
    object of the one-call layout, or WritingBench's critic object per criterion. ``reply``: that text instead,
    ``fail``: the calls whose criterion is in it fail. Keeps every call's messages."""

    def __init__(self, scores=None, reply=None, fail=(), finish_reason="stop"):
        self.scores, self.reply, self.fail, self.finish_reason = scores or SCORES, reply, fail, finish_reason
        self.asked = []

    async def complete(self, messages):
        self.asked.append(messages)
        user = messages[-1]["content"]
        if "[Criterion]" in user:
            text = user.split("[Criterion]\n", 1)[1].split("\n", 1)[0].removeprefix("(pitfall) ")
            if text in self.fail:
                raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
            answer = json.dumps({"score": self.scores[text], "reason": "r"})
        else:
            lines = re.findall(r"^(\d+)\. (?:\(pitfall\) )?(.*)$", user.split("[Rubric]\n", 1)[1], re.M)
            if any(text in self.fail for _, text in lines):
                raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
            answer = json.dumps({"scores": [{"id": int(i), "score": self.scores[text]} for i, text in lines]})
        text = self.reply if self.reply is not None else f"Weighed each criterion.\n{answer}"
        return JudgeReply(text, self.finish_reason, 0.01)


def score(response, judge, truth=TRUTH, **options):
    return asyncio.run(compute_score("rubric", response, truth, {"index": 0}, judge=SampleJudge(judge), **options))


def positions(*scaled, n=8):
    return {f"rubric/c{i + 1}": scaled[i] if i < len(scaled) else -1.0 for i in range(n)}


SCALED = positions(6 / 9, 1.0, 0.0)


# ---------------------------------------------------------------- the reward and its keys


def test_one_call_scores_every_criterion_of_the_rubric():
    judge = Judge()
    result = score("<think>plan</think>A story at Waterloo.", judge)
    assert judge.asked == [rubric_messages("Write about a station.", "A story at Waterloo.", CRITERIA, RUBRIC_SYSTEM)]
    assert result.pop("score") == pytest.approx(REWARD)
    assert result == {"format_error": 0, **SCALED, **NO_FLAGS}


def test_per_criterion_one_call_scores_each_criterion():
    judge = Judge()
    result = score("A story at Waterloo.", judge, per_criterion=True)
    assert judge.asked == [
        criterion_messages("Write about a station.", "A story at Waterloo.", c, RUBRIC_SYSTEM) for c in CRITERIA
    ]
    assert result.pop("score") == pytest.approx(REWARD)
    assert result == {"format_error": 0, **SCALED, **NO_FLAGS}


@pytest.mark.parametrize("per_criterion", [False, True])
@pytest.mark.parametrize("system_prompt", [None, "Score strictly."])
def test_the_system_prompt_reaches_every_call(per_criterion, system_prompt):
    judge = Judge()
    score("A story.", judge, per_criterion=per_criterion, system_prompt=system_prompt)
    layouts = [criterion_messages("Write about a station.", "A story.", c, system_prompt) for c in CRITERIA]
    one = [rubric_messages("Write about a station.", "A story.", CRITERIA, system_prompt)]
    assert judge.asked == (layouts if per_criterion else one)


def test_the_criteria_are_logged_per_position_the_same_keys_on_every_sample():
    expected = {"score": REWARD, "format_error": 0, **positions(6 / 9, 1.0, n=2), **NO_FLAGS}
    assert score("A story.", Judge(), positions=2) == pytest.approx(expected)
    assert score("A story.", Judge(), positions=0) == pytest.approx({"score": REWARD, "format_error": 0, **NO_FLAGS})
    assert set(score("<think>", Judge(), positions=3)) == {"score", "format_error", *positions(n=3), *NO_FLAGS}


def test_a_pitfall_hit_in_full_subtracts_its_weight():
    result = score("A story.", Judge({**SCORES, "Contains factual errors": 10}))
    assert result["score"] == pytest.approx(REWARD - 1.0 / 3) and result["rubric/c3"] == 1.0


# ---------------------------------------------------------------- what a failure pays


@pytest.mark.parametrize("response", ["<think>never closed", "<think>x</think>  ", ""])
def test_no_answer_is_a_loss_and_a_format_error_without_a_judge_call(response):
    judge = Judge()
    assert score(response, judge) == {"score": 0.0, "format_error": 1, **positions(), **NO_FLAGS}
    assert judge.asked == []


@pytest.mark.parametrize("per_criterion", [False, True])
def test_a_failed_call_pays_the_loss(per_criterion):
    judge = Judge(fail=("Names the station",))
    assert score("A story.", judge, per_criterion=per_criterion) == {
        "score": 0.0,
        "format_error": 0,
        **positions(),
        **NO_FLAGS,
    }


def test_a_failed_criterion_call_cancels_the_samples_other_calls():
    class Held(Judge):
        """The first criterion's call fails at once; the others wait until released."""

        def __init__(self):
            super().__init__(fail=("Tells a story",))
            self.release, self.cancelled = asyncio.Event(), 0

        async def complete(self, messages):
            if "Tells a story" not in messages[-1]["content"]:
                try:
                    await self.release.wait()
                except asyncio.CancelledError:
                    self.cancelled += 1
                    raise
            return await super().complete(messages)

    async def main():
        judge = Held()
        result = await compute_score("rubric", "A story.", TRUTH, judge=SampleJudge(judge), per_criterion=True)
        await asyncio.sleep(0)  # (a cancelled task sees its CancelledError at its next step)
        cancelled = judge.cancelled
        judge.release.set()
        return result, cancelled

    result, cancelled = asyncio.run(main())
    assert result["score"] == 0.0 and cancelled == 2


@pytest.mark.parametrize("per_criterion", [False, True])
def test_an_unreadable_reply_is_a_counted_loss(per_criterion):
    result = score("A story.", Judge(reply="All good, 10/10."), per_criterion=per_criterion)
    assert result == {"score": 0.0, "format_error": 0, **positions(), **NO_FLAGS, "parse_error": 1}
    result = score("A story.", Judge(finish_reason="length"), per_criterion=per_criterion)
    assert result == {"score": 0.0, "format_error": 0, **positions(), "parse_error": 1, "judge_truncated": 1,
                      "judge_refusal": 0}  # fmt: skip


def test_one_unreadable_criterion_makes_the_sample_unreadable():
    class OneGarbled(Judge):
        async def complete(self, messages):
            reply = await super().complete(messages)
            garbled = "Names the station" in messages[-1]["content"]
            return JudgeReply("I cannot score this." if garbled else reply.text, "stop", 0.01)

    assert score("A story.", OneGarbled(), per_criterion=True) == {
        "score": 0.0,
        "format_error": 0,
        **positions(),
        **NO_FLAGS,
        "parse_error": 1,
    }


@pytest.mark.parametrize("per_criterion", [False, True])
def test_on_parse_error_raise_stops_the_step(per_criterion):
    with pytest.raises(UnreadableJudgeReply, match=r"could not be read \(parse_error: "):
        score("A story.", Judge(reply="All good, 10/10."), per_criterion=per_criterion, on_parse_error="raise")


@pytest.mark.parametrize("prompt", [None, "", "   ", 3])
def test_a_row_without_a_prompt_is_an_error_naming_the_field(prompt):
    with pytest.raises(ValueError, match=r"^ground_truth\.prompt must be the request as text, got "):
        score("A story.", Judge(), truth={"prompt": prompt, "rubric": RUBRIC})


# ---------------------------------------------------------------- the preflight (writing_rl/tools/preflight/)


def test_the_preflight_accepts_a_row_with_a_prompt_and_a_rubric():
    assert preflight_row(TRUTH) is None
    with pytest.raises(ValueError, match="rubric must be a non-empty list"):
        preflight_row({"prompt": "Write.", "rubric": []})


@pytest.mark.parametrize("prompt", [None, "", "   ", 3])
def test_the_preflight_refuses_a_row_without_a_prompt(prompt):
    with pytest.raises(ValueError, match=r"^ground_truth\.prompt must be the request as text$"):
        preflight_row({"prompt": prompt, "rubric": RUBRIC})


def test_the_preflights_judge_call_is_the_one_call_layout_or_the_longest_criterions():
    row = SimpleNamespace(prompt="ignored", ground_truth=TRUTH, extra_info={})
    prompt = "Write about a station."
    assert preflight_judge_messages(row, "R", 8, {}) == rubric_messages(prompt, "R", CRITERIA, RUBRIC_SYSTEM)
    assert preflight_judge_messages(row, "R", 8, {"system_prompt": None}) == rubric_messages(
        prompt, "R", CRITERIA, None
    )
    # the longest criterion is a pitfall here: not the first, nor the greatest string
    longest = CRITERIA[2]
    assert preflight_judge_messages(row, "R", 8, {"per_criterion": True}) == criterion_messages(
        prompt, "R", longest, RUBRIC_SYSTEM
    )
    assert preflight_judge_messages(row, "R", 8, {"per_criterion": True, "system_prompt": "S"}) == criterion_messages(
        prompt, "R", longest, "S"
    )


@pytest.mark.parametrize("options, calls", [({}, 1.0), ({"per_criterion": False}, 1.0), ({"per_criterion": True}, 3.0)])
def test_calls_per_rollout_is_one_call_or_one_per_criterion(options, calls):
    judge = Judge()
    score("A story.", judge, **options)
    row = SimpleNamespace(prompt="p", ground_truth=TRUTH, extra_info={})
    assert calls_per_rollout(row, 8, options) == calls == len(judge.asked)
    assert isinstance(calls_per_rollout(row, 8, options), float)
