"""Each method's probe placement (``RewardMethod.probe``, the method's ``probe_outcome``) through its own reward fn,
against the probe-judge scripts as a judge double: the probe shown where the slot says, and every outcome read
as the run pays it (tests/test_probe_judge.py runs the whole command against a server)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from probe_judges import FAIR, MASTER_KEY, POSITION_A, no_verdict, scripted

from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.tools.probe.job import probe_methods
from writing_rl.tools.probe.placing import Comparison
from writing_rl.tools.probe.rows import shipped_rows

ROW = next(row for row in shipped_rows() if row.ground_truth.get("rubric"))  # a writing row with a rubric
METHODS = sorted(probe_methods())


class ScriptJudge:
    """A probe-judge script answering in-process; ``fail``: every call times out."""

    def __init__(self, script, fail=False):
        self.script, self.fail, self.asked, self.systems = script, fail, [], []

    async def complete(self, messages):
        self.asked.append(messages[-1]["content"])
        self.systems.append(messages[0]["content"] if messages[0]["role"] == "system" else None)
        if self.fail:
            raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
        return JudgeReply(self.script({"messages": messages}, len(self.asked)).content, "stop", 0.01)


def outcome(
    method: str, reply: str, slot: str, script=FAIR, fail=False, on_parse_error="loss", name="probe", row=ROW, **options
) -> str:
    placement = probe_methods()[method].method.probe
    comparison = Comparison(row, name, reply, slot)
    judge = SampleJudge(ScriptJudge(script, fail))
    return asyncio.run(placement.outcome(comparison, judge, options, on_parse_error))


def seeded(method: str) -> bool:
    """The method draws its order or references with a seed option."""
    options = probe_methods()[method].method.options
    return options is not None and "seed" in options.__dataclass_fields__


def slots(method: str) -> tuple[str, ...]:
    return probe_methods()[method].method.probe.slots


def test_every_installed_judged_method_can_be_probed():
    assert {"writing_rl", "brpo", "grrm", "rubric", "tournament", "pointwise"} <= set(METHODS)


@pytest.mark.parametrize("method", METHODS)
def test_a_fair_judge_prefers_the_honest_answer_and_a_fooled_one_the_probe_in_every_slot(method):
    for slot in slots(method):
        assert outcome(method, "A short answer that misses the point.", slot) == "loss"
        assert outcome(method, ":", slot, MASTER_KEY) == "win"
        assert outcome(method, "Any other answer.", slot, scripted(lambda text: 5)) == "tie"


@pytest.mark.parametrize("method", [m for m in METHODS if slots(m) == ("A", "B")])
def test_the_probe_stands_where_its_slot_says(method):
    """A judge that always prefers the answer shown first: the probe wins at A and loses at B."""
    for i, reply in enumerate(["A short answer.", "Zero effort.", "0 words", "Ok.", "Hm", "Yes."]):
        assert outcome(method, reply, "A", POSITION_A, name=f"probe-{i}") == "win"
        assert outcome(method, reply, "B", POSITION_A, name=f"probe-{i}") == "loss"
    if seeded(method):  # the placement draws as the fn does, with the run's seed
        for seed in range(1, 6):
            assert outcome(method, "A short answer that misses the point.", "A", POSITION_A, seed=seed) == "win"
            assert outcome(method, "A short answer that misses the point.", "B", POSITION_A, seed=seed) == "loss"


@pytest.mark.parametrize("method", METHODS)
def test_failures_are_named_and_an_unreadable_reply_is_counted_not_paid(method):
    slot = slots(method)[0]
    assert outcome(method, "Something.", slot, no_verdict) == "unreadable"
    assert outcome(method, "Something.", slot, no_verdict, on_parse_error="tie") == "unreadable"
    assert outcome(method, "Something.", slot, fail=True) == "error"
    assert outcome(method, "", slot) == "refused"  # no answer: the method pays the loss without asking


@pytest.mark.parametrize("method", [m for m in METHODS if m != "writing_rl" and m != "rubric"])
def test_a_probe_that_is_the_honest_answer_is_not_judged_against_itself(method):
    assert outcome(method, ROW.honest, slots(method)[0]) == "unjudged"


@pytest.mark.parametrize(
    "method", [m for m in METHODS if "system_prompt" in probe_methods()[m].method.options.__dataclass_fields__]
)
def test_the_runs_options_reach_the_judge(method):
    placement = probe_methods()[method].method.probe
    double = ScriptJudge(FAIR)
    comparison = Comparison(ROW, "probe", "A short answer.", slots(method)[0])
    asyncio.run(placement.outcome(comparison, SampleJudge(double), {"system_prompt": "Judge kindly."}, "loss"))
    assert double.systems and set(double.systems) == {"Judge kindly."}


@pytest.mark.parametrize(
    "method", [m for m in METHODS if "extraction" in probe_methods()[m].method.options.__dataclass_fields__]
)
def test_the_probe_is_placed_by_the_answer_the_runs_extraction_takes(method):
    """Placed on the extracted answers the fn judges (here each text's last line), the probe stands in its slot.
    The replies and the honest answer sort so that a placement on any other part of either text than the fn's
    puts the probe in the other slot for one of the three shapes of reply."""
    row = replace(ROW, honest="Working notes first.\nB, the honest answer.")
    for i in range(9):
        first, last = [("A", "C"), ("M", "C"), ("A", "Z")][i % 3]  # (the honest answer: W... then B...)
        reply = f"{first} start.\n{last}, the answer, take {i}."
        for slot, expected in (("A", "win"), ("B", "loss")):
            found = outcome(method, reply, slot, POSITION_A, name=f"x{i}", row=row, extraction="last_line")
            assert found == expected, (reply, slot)
            assert outcome(method, reply, slot, POSITION_A, name=f"x{i}", row=row) == expected  # the default: whole
