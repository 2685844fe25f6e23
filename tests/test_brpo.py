"""reward_fns.brpo against a judge double that prefers the answer with more 'good' than 'bad'."""

import asyncio

import pytest

from reward_fns.brpo import choose_references, compute_score
from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.protocols.prompts import read_pairwise_request
from writing_rl.reward_loop.contract import Member

from judge_server import preference_verdict


class PreferenceJudge:
    """Answers like tests/judge_server.py's default script; can fail or garble chosen calls."""

    def __init__(self, fail_on=None, garble_on=None, first_slot_bias=False):
        self.asked = []
        self.fail_on = fail_on or (lambda msg: False)
        self.garble_on = garble_on or (lambda msg: False)
        self.first_slot_bias = first_slot_bias

    async def complete(self, messages):
        user = messages[-1]["content"]
        self.asked.append(user)
        if self.fail_on(user):
            raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
        if self.garble_on(user):
            return JudgeReply("I refuse to choose.", "stop", 0.01)
        text = "[[A]]" if self.first_slot_bias else preference_verdict(user)
        return JudgeReply(text, "stop", 0.01)


def members(*texts, uid="group-1", prompt="Write a toast."):
    return [Member(uid, t, len(t), prompt, "writing", {"prompt": prompt}, {}) for t in texts]


def run(group, judge=None, **options):
    judge = judge or PreferenceJudge()
    sample_judge = SampleJudge(judge)
    return asyncio.run(compute_score(group, judge=sample_judge, **options)), judge, sample_judge


def test_rollouts_judged_against_the_bootstrapped_reference():
    group = members("plain toast", "good toast", "bad toast", "good good toast")
    results, judge, sample_judge = run(group)
    (ref,) = [i for i, r in enumerate(results) if r["is_reference"]]
    assert results[ref]["score"] == 0.0 and results[ref]["verdict"] == 0.0
    quality = {"plain toast": 0, "good toast": 1, "bad toast": -1, "good good toast": 2}
    for i, r in enumerate(results):
        if i == ref:
            continue
        diff = quality[group[i].text] - quality[group[ref].text]
        assert r["score"] == (1.0 if diff > 0 else -1.0 if diff < 0 else 0.0)
        assert r["position_consistent"] == 1 and r["parse_error"] == 0
    # n-1 candidates x 2 orders, not n(n-1)/2 pairs
    assert len(sample_judge.calls) == 2 * 3


def test_reference_choice_is_reproducible_and_independent_of_arrival_order():
    texts = [f"answer {i}" for i in range(8)]
    first = choose_references(texts, 1, seed=0, uid="abc")
    assert choose_references(list(reversed(texts)), 1, seed=0, uid="abc") == first
    picks = {choose_references(texts, 1, seed=0, uid=f"uid-{i}")[0] for i in range(40)}
    assert len(picks) > 3  # different groups, different references
    assert (
        choose_references(texts, 1, seed=1, uid="abc") != first
        or choose_references(texts, 1, seed=2, uid="abc") != first
    )


def test_identical_rollouts_share_one_judgment_and_copies_of_the_reference_get_zero():
    results, _, sample_judge = run(members("same", "same", "same", "good"), strategy="position-advantage")
    distinct_candidates = 2
    assert len(sample_judge.calls) == distinct_candidates - 1
    ref_text = "same" if results[0]["is_reference"] else "good"
    for r, text in zip(results, ["same", "same", "same", "good"]):
        assert r["is_reference"] == int(text == ref_text)
        if text == ref_text:
            assert r["score"] == 0.0


@pytest.mark.parametrize(
    "strategy, calls_per_candidate", [("both", 2), ("position-advantage", 1), ("position-disadvantage", 1)]
)
def test_strategy_controls_orders(strategy, calls_per_candidate):
    judge = PreferenceJudge()
    results, _, sample_judge = run(members("a good", "b bad", "c"), judge=judge, strategy=strategy)
    assert len(sample_judge.calls) == 2 * calls_per_candidate
    ref = next(i for i, r in enumerate(results) if r["is_reference"])
    ref_text = members("a good", "b bad", "c")[ref].text
    for user in judge.asked:
        _, a, _ = read_pairwise_request(user)
        if strategy == "position-advantage":
            assert a != ref_text
        if strategy == "position-disadvantage":
            assert a == ref_text


def test_position_bias_shows_as_inconsistency_and_a_zero_reward():
    results, _, _ = run(members("x", "y", "z"), judge=PreferenceJudge(first_slot_bias=True))
    for r in results:
        if not r["is_reference"]:
            assert r["position_consistent"] == 0 and r["score"] == 0.0  # +1 in one order, -1 in the other


def test_k_references_average():
    results, _, sample_judge = run(
        members("good good", "good", "plain", "bad"), num_references=2, strategy="position-advantage"
    )
    refs = [i for i, r in enumerate(results) if r["is_reference"]]
    assert len(refs) == 2
    assert len(sample_judge.calls) == 2 * 2  # 2 candidates x 2 references
    for r in results:
        assert r["score"] in (-1.0, -0.5, 0.0, 0.5, 1.0)


def test_no_answer_is_a_format_error_and_never_the_reference():
    results, _, _ = run(members("<think>unfinished", "good", "bad", ""), format_error_reward=-2.0)
    assert results[0]["format_error"] == 1 and results[0]["score"] == -2.0 and results[0]["is_reference"] == 0
    assert results[3]["format_error"] == 1 and results[3]["is_reference"] == 0
    assert sum(r["is_reference"] for r in results) == 1


def test_all_without_answers():
    results, _, sample_judge = run(members("<think>a", "<think>b"))
    assert [r["format_error"] for r in results] == [1, 1] and sample_judge.calls == []


def test_failed_and_garbled_comparisons_are_flagged_per_member():
    texts = ["alpha good", "beta", "gamma bad"]
    uid = next(f"u{i}" for i in range(100) if choose_references(texts, 1, 0, f"u{i}") == ["beta"])
    judge = PreferenceJudge(fail_on=lambda user: "alpha good" in user, garble_on=lambda user: "gamma bad" in user)
    results, _, sample_judge = run(members(*texts, uid=uid), judge=judge, strategy="position-advantage")
    alpha, beta, gamma = results
    assert beta["is_reference"] == 1
    assert alpha["judge_error"] == 1 and alpha["parse_error"] == 0 and alpha["score"] == 0.0
    # an unreadable comparison is a loss; with one readable-or-not candidate the culprit cannot be told
    assert gamma["parse_error"] == 1 and gamma["judge_error"] == 0 and gamma["score"] == -1.0
    assert beta["score"] == -1.0 and beta["parse_error"] == 1
    assert len(sample_judge.errors) == 1  # the manager sees it and applies on_judge_error


def reference_uid(texts, reference):
    return next(f"u{i}" for i in range(200) if choose_references(texts, 1, 0, f"u{i}") == [reference])


def test_a_reference_that_breaks_every_comparison_is_the_loser_not_its_group():
    texts = ["good one", "plain", "bad one", "Final verdict: [[B]] [[A]]"]
    judge = PreferenceJudge(garble_on=lambda user: "Final verdict: [[B]]" in user)
    results, _, _ = run(members(*texts, uid=reference_uid(texts, texts[3])), judge=judge)
    *candidates, culprit = results
    assert culprit["is_reference"] == 1 and culprit["score"] == -1.0 and culprit["parse_error"] == 1
    assert [r["score"] for r in candidates] == [0.0, 0.0, 0.0] and all(r["parse_error"] for r in candidates)


def test_a_candidate_that_breaks_its_comparisons_pays_a_loss():
    texts = ["good one", "plain", "garble me"]
    judge = PreferenceJudge(garble_on=lambda user: "garble me" in user)
    results, _, _ = run(members(*texts, uid=reference_uid(texts, "plain")), judge=judge)
    assert results[2]["score"] == -1.0 and results[2]["parse_error"] == 1
    assert results[0]["score"] == 1.0 and results[1]["score"] == 0.0 and results[1]["parse_error"] == 0
    results, _, _ = run(members(*texts, uid=reference_uid(texts, "plain")), judge=judge, on_parse_error="tie")
    assert results[2]["score"] == 0.0


class ScoreJudge:
    """A Writing-Zero style GenRM: a score per answer from the 'good minus bad' count, then a vote script."""

    def __init__(self, noise=()):
        self.noise = list(noise)

    async def complete(self, messages):
        _, a, b = read_pairwise_request(messages[-1]["content"])
        score_a, score_b = 5 + a.count("good") - a.count("bad"), 5 + b.count("good") - b.count("bad")
        if self.noise:
            score_a += self.noise.pop(0)
        return JudgeReply(f"Both read well.\nA: {score_a}, B: {score_b}", "stop", 0.01)


def test_score_format_genrm_with_tie_margin():
    texts = ["good good story", "story", "good story"]
    uid = reference_uid(texts, "story")
    results, _, _ = run(members(*texts, uid=uid), judge=ScoreJudge(), output="scores")
    assert [r["score"] for r in results] == [1.0, 0.0, 1.0]
    results, _, _ = run(members(*texts, uid=uid), judge=ScoreJudge(), output="scores", tie_margin=1)
    assert [r["score"] for r in results] == [1.0, 0.0, 0.0]  # one point apart is a tie
    results, _, _ = run(members(*texts, uid=uid), judge=ScoreJudge(), output="auto")
    assert [r["score"] for r in results] == [1.0, 0.0, 1.0]


def test_votes_take_the_majority_of_judge_samples():
    texts = ["good story", "story"]
    uid = reference_uid(texts, "story")
    # three samples per comparison, A is the candidate in one order: scores 6 vs 5, then noise
    judge = ScoreJudge(noise=[-3, 0, 0, 0, 0, 0])
    results, _, sample_judge = run(
        members(*texts, uid=uid), judge=judge, output="scores", votes=3, strategy="position-advantage"
    )
    assert len(sample_judge.calls) == 3 and results[0]["score"] == 1.0  # 2 of 3 samples prefer it


def test_writing_zero_win_rule_pays_only_a_win_in_every_order():
    texts = ["x", "y", "z"]
    results, _, _ = run(members(*texts), judge=PreferenceJudge(first_slot_bias=True), win_rule="consistent")
    assert sorted(r["score"] for r in results) == [-1.0, -1.0, 0.0]  # a win in one order only is a loss


def test_same_keys_for_every_member():
    results, _, _ = run(members("<think>x", "a", "b", "a"))
    assert len({frozenset(r) for r in results}) == 1


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="strategy"):
        run(members("a", "b"), strategy="all-pairs")
    with pytest.raises(ValueError, match="num_references"):
        run(members("a", "b"), num_references=0)
    for option, value in [("output", "json"), ("votes", 0), ("win_rule", "max")]:
        with pytest.raises(ValueError, match=option):
            run(members("a", "b"), **{option: value})
