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
from writing_rl.reward_loop.failures import UnreadableJudgeReply

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


# ---------------------------------------------------------------- the group's edges, each key of a result

REFERENCE_RESULT = {
    "score": 0.0,
    "verdict": 0.0,
    "is_reference": 1,
    "position_consistent": -1,
    "judge_error": 0,
    "format_error": 0,
    "parse_error": 0,
    "judge_truncated": 0,
    "judge_refusal": 0,
}


def test_a_group_of_one_answer_is_its_own_reference_without_a_judge_call():
    results, sample = run(members("the only toast", "<think>x</think>the only toast"))
    assert results == [REFERENCE_RESULT, REFERENCE_RESULT] and sample.calls == []
    results, sample = run(members("the only toast"))
    assert results == [REFERENCE_RESULT] and sample.calls == []


def test_a_judged_rollouts_verdict_is_its_reward_and_every_flag_is_clear():
    texts = ["good good toast", "plain toast", "bad toast"]
    (reference,) = reference_of(texts)
    results, _ = run(members(*texts))
    for text, result in zip(texts, results):
        if text == reference:
            assert result == REFERENCE_RESULT
            continue
        expected = 1.0 if text == "good good toast" or reference == "bad toast" and text == "plain toast" else -1.0
        assert result == {**REFERENCE_RESULT, "score": expected, "verdict": expected, "is_reference": 0,
                          "position_consistent": 1}  # fmt: skip


def test_two_answers_leave_one_to_judge_whatever_num_references_asks():
    texts = ["good toast", "bad toast"]
    results, sample = run(members(*texts), num_references=2)
    assert sorted(r["is_reference"] for r in results) == [0, 1] and len(sample.calls) == 2
    assert METHOD.calls_per_rollout(None, 2, {"num_references": 2}) == len(sample.calls) / 2 == 1.0


def test_a_ground_truth_that_is_not_a_dict_has_no_criteria():
    texts = ["good toast", "bad toast"]
    (reference,) = reference_of(texts)
    (candidate,) = [t for t in texts if t != reference]
    _, sample = run(members(*texts, ground_truth="label"), strategy="position-advantage")
    assert [c.messages for c in sample.calls] == [comparison_messages("Write a toast.", candidate, reference, "A")]


ENTRY = {"name": "Warmth", "criteria_description": "Does the toast feel warm?"}


def test_a_single_checklist_entry_reaches_the_judge_as_that_criterion():
    texts = ["good toast", "bad toast"]
    (reference,) = reference_of(texts)
    (candidate,) = [t for t in texts if t != reference]
    truth = {"prompt": "Write a toast.", "criteria": ENTRY}
    _, sample = run(members(*texts, ground_truth=truth), strategy="position-advantage")
    criteria = "- Warmth: Does the toast feel warm?"  # format_criteria(ENTRY)
    asked = comparison_messages("Write a toast.", candidate, reference, "A", criteria=criteria)
    assert [c.messages for c in sample.calls] == [asked]


def test_the_preflight_shows_a_single_checklist_entry_as_that_criterion():
    row = SimpleNamespace(prompt="Write a toast.", ground_truth={"prompt": "Write a toast.", "criteria": ENTRY})
    assert METHOD.judge_messages(row, "x", 8, {}) == pairwise_messages(
        "Write a toast.", "x", "x", criteria="- Warmth: Does the toast feel warm?", system=PAIRWISE_SYSTEM
    )


class Verdict:
    """Answers every call with ``text``, whatever the prompt's layout."""

    def __init__(self, text):
        self.text = text

    async def complete(self, messages):
        return JudgeReply(self.text, "stop", 0.01)


def test_the_template_reaches_the_judge_and_the_preflight(tmp_path):
    path = tmp_path / "pairwise.txt"
    path.write_text("Q: {prompt}\n1) {response_a}\n2) {response_b}\nSay [[A]] or [[B]].")
    texts = ["good toast", "bad toast"]
    (reference,) = reference_of(texts)
    (candidate,) = [t for t in texts if t != reference]
    _, sample = run(members(*texts), Verdict("[[A]]"), strategy="position-advantage", template=str(path))
    asked = comparison_messages("Write a toast.", candidate, reference, "A", template=str(path))
    assert [c.messages for c in sample.calls] == [asked] and asked[-1]["content"].startswith("Q: Write a toast.\n1) ")
    row = SimpleNamespace(prompt="Write a toast.", ground_truth={})
    assert METHOD.judge_messages(row, "x", 8, {"template": str(path)}) == pairwise_messages(
        "Write a toast.", "x", "x", template=str(path), system=PAIRWISE_SYSTEM
    )


# ---------------------------------------------------------------- failures


class FirstVoteFails(Judge):
    """The first sample of each comparison fails; the others answer as ``Judge``."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    async def complete(self, messages):
        key = messages[-1]["content"]
        if key not in self.seen:
            self.seen.add(key)
            raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
        return await super().complete(messages)


def test_a_failed_vote_leaves_the_others_to_decide_and_is_flagged():
    texts = ["good good toast", "bad toast"]
    (reference,) = reference_of(texts)
    results, sample = run(members(*texts), FirstVoteFails(), votes=3)
    winner = 1.0 if reference == "bad toast" else -1.0
    (mine,) = [r for t, r in zip(texts, results) if t != reference]
    assert (mine["score"], mine["judge_error"], mine["position_consistent"]) == (winner, 1, 1)
    assert len(sample.errors) == 2 and len(sample.calls) == 2 * 3


def test_one_order_unreadable_cannot_tell_the_position_consistency():
    texts = ["good toast", "bad toast"]
    (reference,) = reference_of(texts)

    def garbled_when_first(a, b):  # the order with the candidate shown first cannot be read
        return "No verdict." if a != reference else ("[[B]]" if quality(b) > quality(a) else "[[A]]")

    results, _ = run(members(*texts), Judge(reply=garbled_when_first))
    (mine,) = [r for t, r in zip(texts, results) if t != reference]
    assert (mine["position_consistent"], mine["parse_error"]) == (-1, 1)


def test_a_reference_that_breaks_both_candidates_comparisons_is_the_culprit():
    texts = ["good toast", "plain toast", "bad toast"]
    (reference,) = reference_of(texts)
    results, _ = run(members(*texts), Judge(reply=lambda a, b: "No verdict." if reference in (a, b) else "[[A]]"))
    for text, result in zip(texts, results):
        if text == reference:
            assert (result["score"], result["is_reference"], result["parse_error"]) == (-1.0, 1, 1)
        else:  # two candidates failed against it: their comparisons are dropped, not paid as losses
            assert (result["score"], result["parse_error"]) == (0.0, 1)


def test_a_reference_that_breaks_one_candidates_comparisons_counts_against_it_with_the_others():
    texts = ["good toast", "plain toast", "bad toast"]
    first, second = reference_of(texts, k=2)
    (candidate,) = [t for t in texts if t not in (first, second)]

    def reply(a, b):
        if second in (a, b):
            return "No verdict."
        return "[[A]]" if a == candidate else "[[B]]"  # the candidate beats the first reference in both orders

    results, _ = run(members(*texts), Judge(reply=reply), num_references=2)
    mine = results[texts.index(candidate)]
    # against the first reference: two wins; against the second: two unreadable replies, two losses
    assert (mine["score"], mine["parse_error"], mine["position_consistent"]) == (0.0, 1, 1)
    assert results[texts.index(second)]["score"] == -1.0 and results[texts.index(first)]["score"] == 0.0


def test_on_parse_error_raise_stops_the_step():
    with pytest.raises(UnreadableJudgeReply, match=r"could not be read \(parse_error: "):
        run(members("good toast", "bad toast"), Judge(reply=lambda a, b: "No verdict."), on_parse_error="raise")


# ---------------------------------------------------------------- win rules


@pytest.mark.parametrize(
    "reply, score",
    [
        (lambda a, b: "[[A]]" if a == "good toast" else "[[B]]", 1.0),  # a win in both orders
        (lambda a, b: "[[C]]", -1.0),  # ties
        (lambda a, b: "[[A]]" if a == "good toast" else "[[C]]", -1.0),  # a win and a tie
    ],
)
def test_the_consistent_win_rule_pays_a_win_only_for_a_win_in_every_comparison(reply, score):
    texts = ["good toast", "bad toast"]
    uid = next(f"u{i}" for i in range(100) if reference_of(texts, uid=f"u{i}") == ["bad toast"])
    results, _ = run(members(*texts, uid=uid), Judge(reply=reply), win_rule="consistent")
    assert (results[0]["score"], results[0]["verdict"]) == (score, score)
