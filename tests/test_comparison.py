"""protocols/comparison.py: the one home of the pairwise swap, read back the same way everywhere."""

import pytest

from writing_rl.protocols import Unreadable
from writing_rl.protocols.comparison import (
    SLOTS,
    STRATEGIES,
    agreed,
    comparison_messages,
    consistency,
    other_slot,
    outcome,
    read_outcome,
    shown,
    verdict_for,
)
from writing_rl.protocols.prompts import read_pairwise_request


@pytest.mark.parametrize("slot", SLOTS)
def test_the_candidate_is_shown_in_its_slot_and_read_back_from_it(slot):
    a, b = shown("candidate", "other", slot)
    assert {"A": a, "B": b}[slot] == "candidate" and {"A": a, "B": b}[other_slot(slot)] == "other"
    assert shown(a, b, slot) == ("candidate", "other")  # its own inverse
    prompt, first, second = read_pairwise_request(
        comparison_messages("Write.", "candidate", "other", slot)[-1]["content"]
    )
    assert (first, second) == (a, b) and prompt == "Write."


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize("result", ["win", "tie", "loss"])
def test_a_verdict_means_the_same_outcome_whichever_slot_the_candidate_had(slot, result):
    assert outcome(verdict_for(result, slot), slot) == result
    assert read_outcome(f"Reasoning.\n[[{verdict_for(result, slot)}]]", slot) == result


def test_an_unreadable_reply_is_never_an_outcome():
    assert isinstance(read_outcome("[[A]] or maybe [[B]]", "A"), Unreadable)
    assert isinstance(read_outcome("no verdict", "B"), Unreadable)


def test_orders_combine_into_one_outcome_and_a_consistency_flag():
    assert agreed(["win", "win"]) == "win" and agreed(["win", "loss"]) == "tie" and agreed(["loss"]) == "loss"
    assert consistency(["win", "win"], 2) == 1 and consistency(["win", "tie"], 2) == 0
    assert consistency(["win"], 2) == -1 and consistency(["win"], 1) == -1


def test_every_strategy_names_its_orders_from_the_two_slots():
    assert set(STRATEGIES) == {"position-advantage", "position-disadvantage", "both"}
    assert all(orders and set(orders) <= set(SLOTS) for orders in STRATEGIES.values())
