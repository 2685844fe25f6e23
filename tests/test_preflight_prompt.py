"""The preflight measures the judge prompt training sends: for every registered method whose judge can end with
a verdict or with scores (its ``output`` option), the preflight's judge call follows the run's ``output``,
system prompt and template, as the method's own judge calls do."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from writing_rl.reward_loop.registry import methods


def with_output() -> list[str]:
    found = []
    for name, known in methods().items():
        options = known.method.options
        fields = {f.name for f in dataclasses.fields(options)} if options else set()
        if known.method.judge_messages is not None and {"output", "system_prompt", "template"} <= fields:
            found.append(name)
    return found


def row(criteria=None):
    truth = {"prompt": "Write a haiku about rain.", "target": ["Rain on the tin roof."], "criteria": criteria}
    return SimpleNamespace(prompt=truth["prompt"], ground_truth=truth, extra_info={}, data_source="d")


def test_every_pairwise_method_is_covered():
    assert {"writing_rl", "brpo", "tournament"} <= set(with_output())


@pytest.mark.parametrize("name", with_output())
def test_the_preflight_prompt_follows_the_runs_output_and_system_prompt(name, tmp_path):
    messages = methods()[name].method.judge_messages
    verdict = messages(row(), "Drops drum softly.", 4, {"output": "verdict"})
    scores = messages(row(), "Drops drum softly.", 4, {"output": "scores"})
    assert "[[A]]" in verdict[-1]["content"] and "[[A]]" not in scores[-1]["content"]
    assert "A: 7, B: 4" in scores[-1]["content"] and "A: 7, B: 4" not in verdict[-1]["content"]
    assert messages(row(), "x", 4, {"system_prompt": None})[0]["role"] == "user"  # no system message
    assert messages(row(), "x", 4, {"system_prompt": "Be fair."})[0] == {"role": "system", "content": "Be fair."}
    assert "Count the syllables." in messages(row("Count the syllables."), "x", 4, {})[-1]["content"]
    if name != "writing_rl":  # (its rows must hold a reference: a ground truth that is a dict)
        bare = SimpleNamespace(prompt="Write a haiku about rain.", ground_truth=None, extra_info={}, data_source="d")
        assert "[Evaluation criteria]" not in messages(bare, "x", 4, {})[-1]["content"]
    template = tmp_path / "judge.txt"
    template.write_text("Compare {response_a} with {response_b} for: {prompt}")
    (user,) = messages(row(), "Drops drum softly.", 4, {"template": str(template), "system_prompt": None})
    assert user["content"].startswith("Compare ") and "Write a haiku about rain." in user["content"]
