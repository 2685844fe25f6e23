"""What a reward worker does around any reward fn (writing_rl/reward_loop/scoring.py), pinned piece by piece on
one ``WorkerScoring`` built from the Writing-RL overlay (no judge is called, no Ray): the request as text, a
sample as the reward terms see it, decoding, the batch log and the failure policy's bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from writing_rl.reward_loop.scoring import Sample, prompt_text
from writing_rl.terms import TermInput

# ---------------------------------------------------------------- the request as text


@pytest.mark.parametrize(
    "raw_prompt, ground_truth, text",
    [
        ([{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "last"}],
         None, "last"),  # the last user turn
        (({"role": "system", "content": "s"}, {"role": "user", "content": "in a tuple"}), None, "in a tuple"),
        (np.array([{"role": "user", "content": "in an array"}], dtype=object), None, "in an array"),
        ([{"role": "user", "content": 12}], None, "12"),  # as text
        ([{"role": "user"}], None, ""),  # a user turn without content
        ([{"role": "user", "content": "chat"}], {"prompt": "row"}, "chat"),  # the chat first
        ([{"role": "system", "content": "s"}], {"prompt": "row"}, "row"),  # no user turn: the row's prompt
        (["user", {"role": "assistant", "content": "a"}], {"prompt": "row"}, "row"),  # (a turn must be a dict)
        ("a plain string", {"prompt": "row"}, "row"),  # not a chat
        (None, {"prompt": "row"}, "row"),
        (None, {"prompt": 3}, ""),  # a prompt that is not text
        (None, "just a reference", ""),
        (None, None, ""),
    ],
)  # fmt: skip
def test_the_request_is_the_last_user_turn_of_the_chat_else_the_rows_prompt(raw_prompt, ground_truth, text):
    assert prompt_text(raw_prompt, ground_truth) == text


def test_a_sample_reaches_the_reward_terms_with_its_prompt_source_truth_and_a_copy_of_its_extra_info():
    truth = {"prompt": "Write a poem.", "target": ["a poem"]}
    extra = {"index": 4}
    fields = {"reward_model": {"ground_truth": truth}, "data_source": "writing", "extra_info": extra}
    sample = Sample("a response", 17, fields)
    terms = sample.for_terms()
    assert terms == TermInput("a response", 17, "Write a poem.", "writing", truth, {"index": 4})
    assert terms.extra_info is not extra  # a term cannot change the row
    bare = Sample("r", 1, {"reward_model": {}, "extra_info": None}).for_terms()
    assert bare == TermInput("r", 1, "", None, None, {})
