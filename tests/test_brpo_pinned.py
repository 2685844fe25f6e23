"""reward_fns.brpo, pinned where tests/test_brpo.py is silent: the vote, what reaches the judge and whose calls
they are, the preflight's view of a call and of a group's calls."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from reward_fns.brpo import METHOD, choose_references, compute_score, vote
from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.protocols import strip_think
from writing_rl.protocols.comparison import STRATEGIES, comparison_messages
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, format_criteria, pairwise_messages, read_pairwise_request
from writing_rl.reward_loop.contract import Member

from judge_server import quality


class Judge:
    """Prefers the answer of higher quality; ``reply(a, b)`` overrides; ``fail_on(a, b)`` fails the call."""

    def __init__(self, reply=None, fail_on=lambda a, b: False):
        self.reply, self.fail_on = reply, fail_on

    async def complete(self, messages):
        _, a, b = read_pairwise_request(messages[-1]["content"])
        if self.fail_on(a, b):
            raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
        if self.reply is not None:
            return JudgeReply(self.reply(a, b), "stop", 0.01)
        verdict = "A" if quality(a) > quality(b) else "B" if quality(b) > quality(a) else "C"
        return JudgeReply(f"[[{verdict}]]", "stop", 0.01)


def members(*texts, uid="group-1", ground_truth=None):
    truth = {"prompt": "Write a toast."} if ground_truth is None else ground_truth
    return [Member(uid, t, len(t), "Write a toast.", "writing", truth, {}) for t in texts]


def run(group, judge=None, **options):
    sample = SampleJudge(judge or Judge(), keep_transcripts=True)
    return asyncio.run(compute_score(group, judge=sample, **options)), sample


def reference_of(texts, uid="group-1", k=1, seed=0):
    return choose_references(list(dict.fromkeys(texts)), k, seed, uid)


@pytest.mark.parametrize(
    "outcomes, majority",
    [
        (["win"], "win"),
        (["loss", "win", "loss"], "loss"),
        (["tie", "win", "tie"], "tie"),
        (["win", "loss"], "tie"),  # split
        (["win", "loss", "tie"], "tie"),  # three ways
        (["win", "win", "loss", "loss", "tie"], "tie"),
    ],
)
def test_the_vote_is_the_majority_and_a_split_is_a_tie(outcomes, majority):
    assert vote(outcomes) == majority


def test_each_call_is_recorded_on_the_first_rollout_of_the_candidate_judged():
    texts = ["<think>x</think>good toast", "plain toast", "good toast", "bad toast"]
    answers = [strip_think(t) for t in texts]
    (reference,) = reference_of(answers)
    _, sample = run(members(*texts))
    for call in sample.calls:
        _, a, b = read_pairwise_request(call.messages[-1]["content"])
        candidate = b if a == reference else a
        assert call.member == answers.index(candidate)
    assert len(sample.calls) == 2 * 2  # two candidates besides the reference, both orders


def test_the_rows_criteria_and_the_prompt_options_reach_the_judge():
    truth = {"prompt": "Write a toast.", "criteria": ["Be warm", "Be brief"]}
    texts = ["good toast", "bad toast"]
    (reference,) = reference_of(texts)
    (candidate,) = [t for t in texts if t != reference]
    options = {"system_prompt": "You are the referee.", "output": "scores", "strategy": "position-advantage"}
    results, sample = run(
        members(*texts, ground_truth=truth), judge=Judge(reply=lambda a, b: "A: 7, B: 6"), tie_margin=1, **options
    )
    asked = comparison_messages(
        "Write a toast.", candidate, reference, "A", criteria=format_criteria(["Be warm", "Be brief"]),
        system="You are the referee.", output="scores",
    )  # fmt: skip
    assert [c.messages for c in sample.calls] == [asked]
    assert results[texts.index(candidate)]["score"] == 0.0  # 7 against 6 is within the tie margin of 1


def test_a_criteria_string_reaches_the_judge_as_written():
    truth = {"prompt": "Write a toast.", "criteria": "Mention the couple by name"}
    _, sample = run(members("good toast", "bad toast", ground_truth=truth))
    assert sample.calls and all("Mention the couple by name" in c.messages[-1]["content"] for c in sample.calls)


def test_a_candidate_whose_every_call_failed_is_paid_nothing_and_flagged():
    texts = ["good toast", "bad toast", "plain toast"]
    (reference,) = reference_of(texts)
    failing = next(t for t in texts if t != reference)
    results, _ = run(members(*texts), judge=Judge(fail_on=lambda a, b: failing in (a, b)))
    mine = results[texts.index(failing)]
    assert (mine["score"], mine["judge_error"], mine["position_consistent"]) == (0.0, 1, -1)
    other = results[next(i for i, t in enumerate(texts) if t not in (reference, failing))]
    assert other["judge_error"] == 0 and other["position_consistent"] == 1


def test_one_reference_judged_inconsistently_makes_the_candidate_inconsistent():
    texts = ["good toast", "plain toast", "bad toast", "good good toast"]
    references = reference_of(texts, k=2)
    candidates = [t for t in texts if t not in references]

    def biased_against(a, b):  # slot A always wins against the first reference only
        if references[0] in (a, b):
            return "[[A]]"
        return "A: 5, B: 5"

    results, _ = run(members(*texts), judge=Judge(reply=biased_against), num_references=2, output="auto")
    for candidate in candidates:
        r = results[texts.index(candidate)]
        # against references[0]: a win and a loss (0 on average); against references[1]: two ties
        assert (r["score"], r["position_consistent"]) == (0.0, 0)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("num_references, votes", [(1, 1), (2, 1), (1, 3), (9, 2)])
def test_calls_per_rollout_counts_the_calls_a_group_makes(strategy, num_references, votes):
    texts = ["bad toast", "plain toast", "good toast", "good good toast", "good good good toast"]
    options = {"strategy": strategy, "num_references": num_references, "votes": votes}
    _, sample = run(members(*texts), **options)
    k = min(num_references, len(texts) - 1)
    assert len(sample.calls) == (len(texts) - k) * k * len(STRATEGIES[strategy]) * votes
    assert METHOD.calls_per_rollout(None, len(texts), options) == len(sample.calls) / len(texts)
    assert METHOD.calls_per_rollout(None, 1, options) == 0.0  # one answer: its own reference


def test_the_preflight_measures_one_comparison_of_two_responses_to_the_rows_prompt():
    row = SimpleNamespace(prompt="Write a toast.", ground_truth={"criteria": ["Be warm", "Be brief"]})
    assert METHOD.judge_messages(row, "some text", 8, {}) == pairwise_messages(
        "Write a toast.", "some text", "some text", criteria=format_criteria(["Be warm", "Be brief"]),
        system=PAIRWISE_SYSTEM,
    )  # fmt: skip
    row = SimpleNamespace(prompt="Write a toast.", ground_truth={"criteria": "Be warm"})
    assert METHOD.judge_messages(row, "x", 8, {"system_prompt": None}) == pairwise_messages(
        "Write a toast.", "x", "x", criteria="Be warm", system=None
    )
    assert METHOD.judge_messages(SimpleNamespace(prompt="P", ground_truth="label"), "x", 8, {}) == pairwise_messages(
        "P", "x", "x", criteria=None, system=PAIRWISE_SYSTEM
    )
