"""Properties of the pairwise outcomes under a swap of positions, for Writing-RL (reward_fns/pairwise.py) and BRPO
(reward_fns/brpo.py), against any judge (a verdict per order, or a reply that cannot be read, or a failed call),
drawn by hypothesis with a fixed seed."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_fns import brpo, pairwise
from writing_rl.judge import SampleJudge
from writing_rl.protocols.comparison import STRATEGIES, other_slot, outcome, shown, verdict_for
from writing_rl.reward_loop.contract import Member

from offline_helpers import TableJudge

PROPERTY = settings(
    derandomize=True, database=None, deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
)

VERDICTS = ("A", "B", "C")
REPLIES = ("A", "B", "C", "garbled", "fail")
MIRROR = {"win": "loss", "tie": "tie", "loss": "win"}


def consistent(prefers: str, x: str, y: str) -> dict:
    """A judge that reads the answers, not their places: ``prefers`` is x, y or "tie", in both orders."""
    first = {x: "A", y: "B", "tie": "C"}[prefers]
    return {(x, y): first, (y, x): {"A": "B", "B": "A", "C": "C"}[first]}


# ---------------------------------------------------------------- the comparison's rules


@pytest.mark.parametrize("verdict", VERDICTS)
@pytest.mark.parametrize("slot", ["A", "B"])
def test_swapping_the_candidates_slot_mirrors_its_outcome_and_a_tie_stays_a_tie(verdict, slot):
    assert outcome(verdict, other_slot(slot)) == MIRROR[outcome(verdict, slot)]
    assert verdict_for(outcome(verdict, slot), slot) == verdict
    assert shown(*shown("mine", "theirs", slot), slot) == ("mine", "theirs")
    assert (outcome(verdict, slot) == "tie") == (verdict == "C")


# ---------------------------------------------------------------- Writing-RL: a response against its reference

GT = {"prompt": "Write a toast.", "target": "the reference toast", "criteria": None, "id": 1}
RESPONSE, REFERENCE = "my toast", "the reference toast"


def writing_rl(table, **options):
    judge = SampleJudge(TableJudge(table))
    result = asyncio.run(pairwise.compute_score("writing", RESPONSE, GT, {"index": 0}, judge=judge, **options))
    return result, judge


PAYS = st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(-5, 5)).map(sorted).filter(lambda p: p[0] < p[2])


@PROPERTY
@given(
    st.sampled_from(REPLIES),
    st.sampled_from(REPLIES),
    st.sampled_from(sorted(STRATEGIES)),
    PAYS,
    st.sampled_from(["loss", "tie"]),
)
def test_writing_rl_pays_each_order_the_outcome_read_for_the_response_and_a_failure_no_more_than_its_rule(
    first, second, strategy, pays, on_parse_error
):
    """Each order's verdict is read for the response in its slot; an unreadable order counts as on_parse_error
    says (never a win); a failed call pays the neutral reward (the tie), flagged for the manager (which pays
    the loss under on_judge_error=loss)."""
    loss, tie, win = pays
    table = {(RESPONSE, REFERENCE): first, (REFERENCE, RESPONSE): second}
    result, judge = writing_rl(
        table, strategy=strategy, win_score=win, tie_score=tie, loss_score=loss, on_parse_error=on_parse_error
    )
    slots = STRATEGIES[strategy]
    replies = [table[shown(RESPONSE, REFERENCE, slot)] for slot in slots]
    value = {"win": win, "tie": tie, "loss": loss}
    if "fail" in replies:
        assert result["score"] == tie and judge.metrics()["judge_error"] == 1
        return
    outcomes = [on_parse_error if r == "garbled" else outcome(r, slot) for r, slot in zip(replies, slots)]
    assert result["score"] == pytest.approx(sum(value[o] for o in outcomes) / len(outcomes))
    assert result["parse_error"] == int("garbled" in replies)
    as_losses = [("loss" if r == "garbled" else o) for r, o in zip(replies, outcomes)]
    assert result["score"] >= sum(value[o] for o in as_losses) / len(as_losses) - 1e-9  # the rule's floor
    if on_parse_error == "loss":
        assert result["score"] == pytest.approx(sum(value[o] for o in as_losses) / len(as_losses))


@PROPERTY
@given(st.sampled_from([RESPONSE, REFERENCE, "tie"]), PAYS)
def test_writing_rl_gives_a_judge_that_reads_the_answers_the_same_outcome_in_either_order(prefers, pays):
    loss, tie, win = pays
    table = consistent(prefers, RESPONSE, REFERENCE)
    expected = {RESPONSE: win, REFERENCE: loss, "tie": tie}[prefers]
    for strategy in STRATEGIES:
        result, _ = writing_rl(table, strategy=strategy, win_score=win, tie_score=tie, loss_score=loss)
        assert result["score"] == pytest.approx(expected), strategy
        if strategy == "both":
            assert result["position_consistent"] == 1


@PROPERTY
@given(st.sampled_from(["A", "B"]), PAYS)
def test_writing_rl_gives_a_judge_that_follows_the_position_opposite_outcomes_in_the_two_orders(slot, pays):
    loss, tie, win = pays
    table = {(RESPONSE, REFERENCE): slot, (REFERENCE, RESPONSE): slot}
    advantage, _ = writing_rl(table, strategy="position-advantage", win_score=win, tie_score=tie, loss_score=loss)
    disadvantage, _ = writing_rl(table, strategy="position-disadvantage", win_score=win, tie_score=tie, loss_score=loss)
    both, _ = writing_rl(table, strategy="both", win_score=win, tie_score=tie, loss_score=loss)
    assert {advantage["score"], disadvantage["score"]} == {win, loss}
    assert both["score"] == pytest.approx((win + loss) / 2) and both["position_consistent"] == 0


# ---------------------------------------------------------------- BRPO: each rollout against a bootstrapped sibling


def brpo_group(texts, table, uid="group-1", **options):
    group = [Member(uid, t, len(t), "Write a toast.", "writing", {"prompt": "Write a toast."}, {}) for t in texts]
    judge = TableJudge(table)
    return asyncio.run(brpo.compute_score(group, judge=SampleJudge(judge), **options)), judge


@PROPERTY
@given(st.sampled_from(["x toast", "y toast", "tie"]), st.sampled_from(sorted(STRATEGIES)), st.data())
def test_brpo_flips_a_rollouts_outcome_when_the_roles_swap_and_keeps_a_tie(prefers, strategy, data):
    """Two answers: whichever the seed makes the reference, the other is paid the judge's preference (+1, 0, -1),
    so swapping the roles negates the outcome; the reference is paid 0."""
    texts = ["x toast", "y toast"]
    table = consistent(prefers, *texts)
    paid = {}
    for seed in range(40):
        results, _ = brpo_group(texts, table, seed=seed, strategy=strategy)
        (ref,) = [i for i, r in enumerate(results) if r["is_reference"]]
        candidate = 1 - ref
        paid.setdefault(texts[candidate], set()).add(results[candidate]["score"])
        assert results[ref]["score"] == 0.0
        if len(paid) == 2:
            break
    assert len(paid) == 2  # (some seed makes each answer the reference)
    x, y = paid["x toast"], paid["y toast"]
    assert len(x) == len(y) == 1 and x.pop() == -y.pop()
    expected = {"x toast": 1.0, "y toast": -1.0, "tie": 0.0}[prefers]
    results, _ = brpo_group(texts, table, seed=0, strategy=strategy)
    (candidate,) = [i for i, r in enumerate(results) if not r["is_reference"]]
    assert results[candidate]["score"] == (expected if candidate == 0 else -expected)


@PROPERTY
@given(st.integers(2, 5), st.sampled_from(["A", "B"]), st.sampled_from(["mean", "consistent"]))
def test_brpo_pays_a_judge_that_follows_the_position_nothing_in_both_orders(n, slot, win_rule):
    texts = [f"toast {i}" for i in range(n)]
    table = {(a, b): slot for a in texts for b in texts if a != b}
    results, _ = brpo_group(texts, table, strategy="both", win_rule=win_rule)
    for r in results:
        if not r["is_reference"]:
            assert r["score"] == (0.0 if win_rule == "mean" else -1.0)
            assert r["position_consistent"] == 0


@PROPERTY
@given(st.data(), st.integers(2, 5), st.integers(1, 3), st.sampled_from(sorted(STRATEGIES)), st.integers(0, 99))
def test_brpo_never_pays_a_rollout_that_breaks_the_judge_more_than_losing_those_comparisons(
    data, n, num_references, strategy, seed
):
    """Any judge, any references: the rollout's comparisons against a chosen set of references made unreadable
    pay what losing them pays (a culprit reference is excused only when two or more candidates fail against it,
    and here only this rollout does)."""
    texts = [f"toast {i}" for i in range(n)]
    pairs = [(a, b) for a in texts for b in texts if a != b]
    table = dict(zip(pairs, data.draw(st.lists(st.sampled_from(VERDICTS), min_size=len(pairs), max_size=len(pairs)))))
    k = min(num_references, max(1, n - 1))
    references = brpo.choose_references(texts, k, seed, "group-1")
    me = data.draw(st.sampled_from([t for t in texts if t not in references]))
    against = data.draw(st.sets(st.sampled_from(references), min_size=1))
    garbled, lost = dict(table), dict(table)
    for ref in against:
        garbled[(me, ref)] = garbled[(ref, me)] = "garbled"
        lost[(me, ref)], lost[(ref, me)] = "B", "A"
    options = {"seed": seed, "num_references": num_references, "strategy": strategy}
    failed, _ = brpo_group(texts, garbled, **options)
    losing, _ = brpo_group(texts, lost, **options)
    mine = texts.index(me)
    assert failed[mine]["score"] <= losing[mine]["score"] + 1e-9
    assert failed[mine]["parse_error"] == 1
    for i, r in enumerate(failed):
        if i != mine and texts[i] not in references:
            assert r["score"] == losing[i]["score"]  # the other rollouts are not touched
