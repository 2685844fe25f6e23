"""protocols/comparison.py pinned: the prompt a comparison sends for each reading, and outcomes read from
score replies."""

import pytest

from writing_rl.protocols import Unreadable
from writing_rl.protocols.comparison import STRATEGIES, comparison_messages, consistency, read_outcome
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, pairwise_messages


@pytest.mark.parametrize("output, asked", [("verdict", "verdict"), ("auto", "verdict"), ("scores", "scores")])
def test_a_comparison_asks_for_what_its_reply_is_read_as(output, asked):
    sent = comparison_messages("Write.", "mine", "theirs", "B", criteria="Be vivid.", output=output)
    assert sent == pairwise_messages("Write.", "theirs", "mine", criteria="Be vivid.", output=asked)
    assert sent[0] == {"role": "system", "content": PAIRWISE_SYSTEM} and "Be vivid." in sent[-1]["content"]


def test_a_comparison_can_drop_the_system_message_or_use_a_template(tmp_path):
    template = tmp_path / "judge.txt"
    template.write_text("Q: {prompt}\nFirst: {response_a}\nSecond: {response_b}\nSay [[A]] or [[B]].")
    sent = comparison_messages("Write.", "mine", "theirs", "A", system=None, template=str(template))
    assert [m["role"] for m in sent] == ["user"]
    assert sent == pairwise_messages("Write.", "mine", "theirs", template=str(template), system=None)


@pytest.mark.parametrize(
    "reply, slot, margin, result",
    [
        ("A: 8, B: 3", "A", 0, "win"),
        ("A: 8, B: 3", "B", 0, "loss"),
        ("A: 8, B: 7", "B", 1, "tie"),
        ("A: 8, B: 7", "B", 0.5, "loss"),
    ],
)
def test_an_outcome_is_read_from_a_score_pair_with_its_tie_margin(reply, slot, margin, result):
    assert read_outcome(f"Reasoning.\n{reply}", slot, "scores", margin) == result


def test_an_outcome_read_as_a_verdict_by_default_ignores_score_lines():
    assert isinstance(read_outcome("Reasoning.\nA: 8, B: 3", "A"), Unreadable)
    assert read_outcome("Reasoning.\nA: 7, B: 6", "A", "scores") == "win"  # no tie margin by default


def test_each_strategy_puts_the_candidate_in_its_slots():
    assert STRATEGIES == {"position-advantage": ("A",), "position-disadvantage": ("B",), "both": ("A", "B")}


def test_consistency_needs_every_order_judged():
    assert consistency(["win", "win"], 3) == -1
    assert consistency(["loss", "loss", "loss"], 3) == 1
    assert consistency(["win", "win", "loss"], 3) == 0
