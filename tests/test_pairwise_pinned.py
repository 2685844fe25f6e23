"""reward_fns.pairwise, pinned where tests/test_pairwise.py is silent: the curriculum's calls from both entries
(which level, which key, who reports and who advances), what reaches the judge under each option, the
curriculum key of a row, and the preflight's view of a row and of its judge call."""

from __future__ import annotations

import asyncio
import hashlib
from types import SimpleNamespace

import pytest

from reward_fns.pairwise import (
    calls_per_rollout,
    compute_group_score,
    compute_score,
    curriculum_key,
    preflight_judge_messages,
    preflight_row,
)
from writing_rl.judge import JudgeReply, SampleJudge
from writing_rl.protocols.comparison import comparison_messages
from writing_rl.protocols.pairwise_task import read_writing_rl_task
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, format_criteria, pairwise_messages, read_pairwise_request
from writing_rl.reward_loop.contract import Member

REFS = ["ref easy", "ref medium", "ref hard"]
GT = {"prompt": "Write a haiku.", "target": REFS, "criteria": None, "id": 7}


class Judge:
    """Plays the outcome scripted for the answer it is shown, in whichever slot: "win", "tie", "loss" or
    "garbled" (a reply with no verdict); ``reply``: that text for every call. Keeps every call's messages."""

    def __init__(self, outcomes: dict[str, str] | None = None, reply: str | None = None):
        self.outcomes, self.reply, self.asked = outcomes or {}, reply, []

    async def complete(self, messages):
        self.asked.append(messages)
        if self.reply is not None:
            return JudgeReply(self.reply, "stop", 0.01)
        _, a, b = read_pairwise_request(messages[-1]["content"])
        slot, answer = ("A", a) if a in self.outcomes else ("B", b)
        outcome = self.outcomes[answer]
        if outcome == "garbled":
            return JudgeReply("Both have merits; I cannot choose.", "stop", 0.01)
        verdict = {"win": slot, "loss": "B" if slot == "A" else "A", "tie": "C"}[outcome]
        return JudgeReply(f"Reasons.\n[[{verdict}]]", "stop", 0.01)

    def shown(self) -> list[tuple[str, str]]:
        """(Response A, Response B) of each call."""
        return [read_pairwise_request(m[-1]["content"])[1:] for m in self.asked]


class Curriculum:
    """The curriculum handle as a double: every prompt at ``level``; each call kept, in order."""

    def __init__(self, level: int = 0):
        self.level, self.calls = level, []

    async def pin(self, key, references):
        self.calls.append(("pin", key, references))
        return self.level

    async def advance(self, key, pinned, uid):
        self.calls.append(("advance", key, pinned, uid))
        return True

    async def pin_group(self, key, references, uid, expected):
        self.calls.append(("pin_group", key, references, uid, expected))
        return self.level

    async def report(self, uid, won, threshold):
        self.calls.append(("report", uid, won, threshold))
        return False


def members(*texts, truth=None, split="train", uid="uid-7"):
    truth = GT if truth is None else truth
    return [Member(uid, t, len(t), "Write a haiku.", "writing", truth, {"split": split}) for t in texts]


def group_score(group, judge, curriculum=None, **options):
    sample = SampleJudge(judge, keep_transcripts=True)
    return asyncio.run(compute_group_score(group, judge=sample, curriculum=curriculum, **options)), sample


def sample_score(text, judge, truth=None, extra_info=None, **kwargs):
    truth = GT if truth is None else truth
    extra_info = {"split": "train", "index": 7} if extra_info is None else extra_info
    sample = SampleJudge(judge)
    return asyncio.run(compute_score("writing", text, truth, extra_info, judge=sample, **kwargs))


# ---------------------------------------------------------------- compute_group_score: the group entry


def test_a_group_is_judged_against_its_pinned_reference_and_moves_it_up_one():
    judge, curriculum = Judge({"a win": "win", "a loss": "loss", "a tie": "tie"}), Curriculum(level=1)
    results, sample = group_score(members("a win", "a loss", "a tie"), judge, curriculum)
    assert [r["score"] for r in results] == [1.0, 0.0, 0.5]
    assert [r["curriculum/level"] for r in results] == [1, 1, 1]
    # the default strategy shows the reference first, the member's answer second
    assert sorted(judge.shown()) == sorted([("ref medium", t) for t in ("a win", "a loss", "a tie")])
    assert curriculum.calls == [("pin", "7", 3), ("advance", "7", 1, "uid-7")]
    # each member's call is recorded as its own
    assert {c.member: read_pairwise_request(c.messages[-1]["content"])[2] for c in sample.calls} == {
        0: "a win",
        1: "a loss",
        2: "a tie",
    }


def test_the_group_options_and_the_parse_error_policy_reach_every_member():
    judge = Judge({"a win": "win", "a tie": "tie", "garbled": "garbled"})
    options = {"win_score": 2.0, "tie_score": 0.25, "loss_score": -1.0}
    results, _ = group_score(members("a win", "a tie", "garbled"), judge, **options)
    assert [r["score"] for r in results] == [2.0, 0.25, -1.0]  # an unreadable reply pays a loss by default
    assert results[2]["parse_error"] == 1 and results[2]["loss"] == 1.0
    results, _ = group_score(members("garbled"), judge, on_parse_error="tie", **options)
    assert (results[0]["score"], results[0]["tie"], results[0]["parse_error"]) == (0.25, 1.0, 1)


def test_a_group_judged_in_both_orders_shows_each_answer_in_both_slots():
    judge = Judge({"mine": "win"})
    results, sample = group_score(members("mine"), judge, strategy="both")
    assert judge.shown() == [("mine", "ref easy"), ("ref easy", "mine")]
    assert (results[0]["score"], results[0]["position_consistent"]) == (1.0, 1)
    assert [c.member for c in sample.calls] == [0, 0]


def test_without_the_curriculum_a_group_is_judged_against_its_first_reference():
    judge = Judge({"mine": "win", "other": "win"})
    results, _ = group_score(members("mine", "other"), judge, None)
    assert [r["curriculum/level"] for r in results] == [0, 0]
    assert {a for a, _ in judge.shown()} == {"ref easy"}


def test_a_single_reference_needs_no_curriculum_call():
    truth = {**GT, "target": "the only ref"}
    judge, curriculum = Judge({"mine": "win"}), Curriculum(level=0)
    results, _ = group_score(members("mine", truth=truth), judge, curriculum)
    assert results[0]["curriculum/level"] == 0 and judge.shown() == [("the only ref", "mine")]
    assert curriculum.calls == []


def test_two_references_are_scheduled():
    truth = {**GT, "target": ["ref easy", "ref hard"]}
    curriculum = Curriculum(level=0)
    results, _ = group_score(members("mine", truth=truth), Judge({"mine": "win"}), curriculum)
    assert curriculum.calls == [("pin", "7", 2), ("advance", "7", 0, "uid-7")]
    assert results[0]["curriculum/level"] == 0


@pytest.mark.parametrize("split", ["test", "val", "validation"])
def test_a_validation_group_is_judged_against_its_first_reference_and_moves_nothing(split):
    judge, curriculum = Judge({"mine": "win"}), Curriculum(level=2)
    results, _ = group_score(members("mine", split=split), judge, curriculum)
    assert results[0]["curriculum/level"] == 0 and judge.shown() == [("ref easy", "mine")]
    assert curriculum.calls == []


def test_the_last_reference_is_never_moved_past():
    curriculum, judge = Curriculum(level=2), Judge({"mine": "win"})
    results, _ = group_score(members("mine", "mine"), judge, curriculum)
    assert [r["curriculum/level"] for r in results] == [2, 2] and {a for a, _ in judge.shown()} == {"ref hard"}
    assert curriculum.calls == [("pin", "7", 3)]


@pytest.mark.parametrize(
    "wins, threshold, moves",
    [
        (1, 0.0, True),  # any win, as in Writing-RL
        (0, 0.0, False),  # no win never moves a level, whatever the threshold
        (1, 0.25, True),  # the win rate reaches the threshold
        (1, 0.26, False),
        (3, 0.75, True),
        (3, 0.8, False),
        (4, 1.0, True),
    ],
)
def test_a_group_advances_when_some_rollout_won_and_the_win_rate_reaches_the_threshold(wins, threshold, moves):
    texts = [f"winner {i}" for i in range(wins)] + [f"loser {i}" for i in range(4 - wins)]
    judge = Judge({t: "win" if t.startswith("winner") else "loss" for t in texts})
    curriculum = Curriculum(level=0)
    group_score(members(*texts), judge, curriculum, advance_threshold=threshold)
    assert curriculum.calls == [("pin", "7", 3)] + ([("advance", "7", 0, "uid-7")] if moves else [])


def test_a_win_in_one_order_only_is_not_a_win_for_the_advance():
    first_slot = Judge(reply="Response A reads better.\n[[A]]")  # a position-biased judge
    curriculum = Curriculum(level=0)
    results, _ = group_score(members("mine", "other"), first_slot, curriculum, strategy="both")
    assert [r["win"] for r in results] == [0.5, 0.5]
    assert curriculum.calls == [("pin", "7", 3)]


def test_a_row_without_id_is_tracked_under_its_prompts_key():
    truth = {"prompt": "Write a haiku.", "target": REFS}
    curriculum = Curriculum(level=0)
    group_score(members("mine", truth=truth), Judge({"mine": "win"}), curriculum)
    key = curriculum_key(read_writing_rl_task(truth))
    assert key.startswith("prompt:")
    assert curriculum.calls == [("pin", key, 3), ("advance", key, 0, "uid-7")]


def test_a_bad_group_row_is_named_by_its_index():
    truth = {"prompt": "Write.", "target": []}
    group = [Member("uid-3", "mine", 4, "Write.", "writing", truth, {"index": 3})]
    with pytest.raises(ValueError, match=r"sample index=3: reward_model.ground_truth.target"):
        group_score(group, Judge())


# ---------------------------------------------------------------- compute_score: one rollout at a time


def test_a_rollout_judged_at_its_groups_pinned_level_reports_its_win():
    curriculum, judge = Curriculum(level=2), Judge({"mine": "win"})
    result = sample_score("mine", judge, curriculum=curriculum, uid="uid-7", group_size=4, advance_threshold=0.5)
    assert result["curriculum/level"] == 2 and result["score"] == 1.0
    assert [m[-1]["content"] for m in judge.asked] == [
        comparison_messages("Write a haiku.", "mine", "ref hard", "B")[-1]["content"]
    ]
    assert curriculum.calls == [("pin_group", "7", 3, "uid-7", 4), ("report", "uid-7", True, 0.5)]


@pytest.mark.parametrize(
    "outcome, strategy, won",
    [("win", "position-disadvantage", True), ("tie", "position-disadvantage", False), ("loss", "both", False)],
)
def test_a_rollout_reports_a_win_only_when_it_won_every_order(outcome, strategy, won):
    curriculum = Curriculum(level=0)
    sample_score("mine", Judge({"mine": outcome}), curriculum=curriculum, uid="u", strategy=strategy)
    assert curriculum.calls == [("pin_group", "7", 3, "u", 1), ("report", "u", won, 0.0)]


def test_a_rollout_half_won_in_both_orders_reports_no_win():
    first_slot = Judge(reply="Response A reads better.\n[[A]]")  # a position-biased judge
    curriculum = Curriculum(level=1)
    result = sample_score("mine", first_slot, curriculum=curriculum, uid="u", strategy="both")
    assert result["win"] == 0.5 and result["curriculum/level"] == 1
    assert curriculum.calls == [("pin_group", "7", 3, "u", 1), ("report", "u", False, 0.0)]


@pytest.mark.parametrize(
    "truth, extra_info, uid, with_curriculum",
    [
        pytest.param(GT, {"split": "train"}, None, True, id="no-uid"),
        pytest.param(GT, {"split": "train"}, "u", False, id="no-curriculum"),
        pytest.param({**GT, "target": ["only ref"]}, {"split": "train"}, "u", True, id="one-reference"),
        pytest.param(GT, {"split": "test"}, "u", True, id="validation"),
        pytest.param(GT, {"split": "val"}, "u", True, id="val"),
    ],
)
def test_a_rollout_not_scheduled_is_judged_against_the_first_reference(truth, extra_info, uid, with_curriculum):
    curriculum = Curriculum(level=2) if with_curriculum else None
    judge = Judge({"mine": "win"})
    result = sample_score("mine", judge, truth=truth, extra_info=extra_info, curriculum=curriculum, uid=uid)
    assert result["curriculum/level"] == 0 and result["score"] == 1.0
    assert judge.shown() == [(read_writing_rl_task(truth).references[0], "mine")]
    assert curriculum is None or curriculum.calls == []


def test_a_rollout_of_two_references_is_scheduled():
    curriculum = Curriculum(level=1)
    truth = {**GT, "target": ["ref easy", "ref hard"]}
    result = sample_score("mine", Judge({"mine": "loss"}), truth=truth, curriculum=curriculum, uid="u", group_size=2)
    assert result["curriculum/level"] == 1 and result["score"] == 0.0
    assert curriculum.calls == [("pin_group", "7", 2, "u", 2), ("report", "u", False, 0.0)]


def test_a_rollout_without_id_is_scheduled_under_its_prompts_key():
    truth = {"prompt": "Write a haiku.", "target": REFS}
    curriculum = Curriculum(level=0)
    sample_score("mine", Judge({"mine": "win"}), truth=truth, curriculum=curriculum, uid="u")
    key = curriculum_key(read_writing_rl_task(truth))
    assert curriculum.calls == [("pin_group", key, 3, "u", 1), ("report", "u", True, 0.0)]


def test_a_bad_row_is_named_by_its_index():
    with pytest.raises(ValueError, match=r"sample index=5: reward_model.ground_truth.target"):
        sample_score("mine", Judge(), truth={"prompt": "Write.", "target": 5}, extra_info={"index": 5})


# ---------------------------------------------------------------- what reaches the judge


@pytest.mark.parametrize(
    "options, slots",
    [
        ({}, ["B"]),
        ({"strategy": "position-advantage", "system_prompt": "Be fair."}, ["A"]),
        ({"strategy": "both", "system_prompt": None}, ["A", "B"]),
        ({"output": "scores"}, ["B"]),
        ({"output": "auto", "tie_margin": 1.0}, ["B"]),
        ({"template": "TEMPLATE"}, ["B"]),
    ],
)
def test_the_judge_is_asked_the_comparison_with_the_rows_criteria_and_the_prompt_options(options, slots, tmp_path):
    if options.get("template"):
        path = tmp_path / "pairwise.txt"
        path.write_text("Q: {prompt}\nC: {criteria}\n1) {response_a}\n2) {response_b}\nSay [[A]] or [[B]].")
        options = {**options, "template": str(path)}
    truth = {**GT, "criteria": ["Use a kigo", "5-7-5"]}
    judge = Judge(reply="A: 5, B: 5\n[[C]]" if options.get("output") != "scores" else "A: 5, B: 5")
    result = sample_score("<think>plan</think>my haiku", judge, truth=truth, **options)
    expected = [
        comparison_messages(
            "Write a haiku.",
            "my haiku",
            "ref easy",
            slot,
            criteria=format_criteria(["Use a kigo", "5-7-5"]),
            template=options.get("template"),
            system=options.get("system_prompt", PAIRWISE_SYSTEM),
            output=options.get("output", "verdict"),
        )
        for slot in slots
    ]
    assert judge.asked == expected
    assert result["score"] == 0.5 and result["tie"] == 1.0


def test_the_default_judge_call_has_the_pairwise_system_message():
    judge = Judge({"mine": "win"})
    sample_score("mine", judge)
    assert judge.asked[0][0] == {"role": "system", "content": PAIRWISE_SYSTEM}
    assert "[Request]\nWrite a haiku." in judge.asked[0][-1]["content"]


# ---------------------------------------------------------------- curriculum_key


def test_the_curriculum_key_is_the_rows_id():
    assert curriculum_key(read_writing_rl_task({**GT, "id": 7})) == "7"
    assert curriculum_key(read_writing_rl_task({**GT, "id": 0})) == "0"
    assert curriculum_key(read_writing_rl_task({**GT, "id": "essay-17"})) == "essay-17"


def test_a_row_without_id_is_keyed_by_a_stable_hash_of_its_prompt():
    # The curriculum's state (levels, write-ahead log) stores this key: a restarted or resumed run must
    # compute the same one in another process, so it is a fixed digest of the prompt, not Python's hash().
    def key(prompt, target=REFS):
        return curriculum_key(read_writing_rl_task({"prompt": prompt, "target": target}))

    prompt = "Écris un haïku sur l'été."
    assert key(prompt) == "prompt:" + hashlib.sha1(prompt.encode("utf-8")).hexdigest()[:16]
    assert key(prompt) == key(prompt, ["another ref"])  # the prompt's key, whatever its references
    assert key(prompt) != key("Write a haiku.")


# ---------------------------------------------------------------- the preflight (writing_rl/tools/preflight/)


def row(ground_truth, extra_info=None):
    return SimpleNamespace(prompt="Write a haiku.", ground_truth=ground_truth, extra_info=extra_info or {})


def test_the_preflight_accepts_a_row_the_reward_can_score_and_names_one_it_cannot():
    assert preflight_row(GT, {"index": 7}) is None
    assert preflight_row({"prompt": "p", "target": "one ref"}) is None
    with pytest.raises(ValueError, match=r"sample index=5: reward_model.ground_truth.target"):
        preflight_row({"prompt": "p", "target": []}, {"index": 5})


def test_the_preflights_judge_call_is_the_response_against_the_longest_reference():
    # (the longest is not the last, nor the greatest string)
    truth = {**GT, "target": ["zz", "a much longer reference", "b"], "criteria": ["Use a kigo", "5-7-5"]}
    criteria = format_criteria(["Use a kigo", "5-7-5"])
    assert preflight_judge_messages(row(truth), "RESPONSE", 8, {}) == pairwise_messages(
        "Write a haiku.", "RESPONSE", "a much longer reference", criteria, system=PAIRWISE_SYSTEM
    )
    assert preflight_judge_messages(row(GT), "RESPONSE", 8, {"system_prompt": None}) == pairwise_messages(
        "Write a haiku.", "RESPONSE", "ref medium", None, system=None
    )
    assert preflight_judge_messages(row(GT), "RESPONSE", 8, {"system_prompt": "Be fair."})[0] == {
        "role": "system",
        "content": "Be fair.",
    }


def test_the_preflights_judge_call_uses_the_template(tmp_path):
    path = tmp_path / "pairwise.txt"
    path.write_text("Q: {prompt}\nC: {criteria}\n1) {response_a}\n2) {response_b}\nSay [[A]] or [[B]].")
    truth = {**GT, "criteria": "Use a kigo"}
    messages = preflight_judge_messages(row(truth), "RESPONSE", 8, {"template": str(path)})
    assert messages == pairwise_messages(
        "Write a haiku.", "RESPONSE", "ref medium", "Use a kigo", template=str(path), system=PAIRWISE_SYSTEM
    )
    assert messages[-1]["content"].startswith("Q: Write a haiku.\nC: Use a kigo\n1) ")


def test_the_preflight_names_a_row_it_cannot_build_a_call_for():
    with pytest.raises(ValueError, match=r"sample index=5: reward_model.ground_truth.target"):
        preflight_judge_messages(row({"prompt": "p", "target": []}, {"index": 5}), "RESPONSE", 8, {})


@pytest.mark.parametrize(
    "options, calls",
    [({}, 1.0), ({"strategy": "position-advantage"}, 1.0), ({"strategy": "both"}, 2.0)],
)
def test_calls_per_rollout_is_one_call_per_judged_order(options, calls):
    judge = Judge({"mine": "win"})
    sample_score("mine", judge, **options)
    assert calls_per_rollout(row(GT), 8, options) == calls == len(judge.asked)
    assert isinstance(calls_per_rollout(row(GT), 8, options), float)
