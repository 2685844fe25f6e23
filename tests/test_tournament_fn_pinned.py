"""reward_fns.tournament, pinned where tests/test_tournament.py and tests/test_tournament_pinned.py are silent:
every key of a result, a group of one rollout, what reaches the judge from a ground truth that is not a dict and
from a template, and the blame of an unreadable game wherever the answer that breaks the judge sorts."""

from __future__ import annotations

import asyncio

import pytest

from reward_fns.tournament import Games, compute_score
from writing_rl.judge import JudgeReply, SampleJudge
from writing_rl.protocols.comparison import comparison_messages
from writing_rl.protocols.prompts import read_pairwise_request
from writing_rl.reward_loop.contract import Member
from writing_rl.tournament import Result

from judge_server import quality


class Judge:
    """Prefers the answer of higher quality (judge_server.quality); garbles the games ``garble_on`` names;
    ``reply``: that text for every call, whatever the prompt's layout."""

    def __init__(self, garble_on=lambda a, b: False, reply=None):
        self.garble_on, self.reply = garble_on, reply

    async def complete(self, messages):
        if self.reply is not None:
            return JudgeReply(self.reply, "stop", 0.01)
        _, a, b = read_pairwise_request(messages[-1]["content"])
        if self.garble_on(a, b):
            return JudgeReply("I refuse to choose.", "stop", 0.01)
        verdict = "A" if quality(a) > quality(b) else "B" if quality(b) > quality(a) else "C"
        return JudgeReply(f"[[{verdict}]]", "stop", 0.01)


def members(*texts, ground_truth=None):
    truth = {"prompt": "Write a toast."} if ground_truth is None else ground_truth
    return [Member("group-1", t, len(t), "Write a toast.", "writing", truth, {}) for t in texts]


def run(group, judge=None, **options):
    sample = SampleJudge(judge or Judge(), keep_transcripts=True)
    return asyncio.run(compute_score(group, judge=sample, **options)), sample


NO_FLAGS = {"judge_error": 0, "format_error": 0, "parse_error": 0, "judge_truncated": 0, "judge_refusal": 0}


def test_every_key_of_a_played_answer_and_of_one_without_an_answer():
    results, _ = run(members("good toast", "bad toast", "<think>never closed"), aggregation="win_rate")
    group = {"intransitive_triples": 0.0, "position_consistent": 1.0}
    assert results[0] == {"score": 1.0, "games": 2, "failed_games": 0, **NO_FLAGS, **group}
    assert results[1] == {"score": 0.0, "games": 2, "failed_games": 0, **NO_FLAGS, **group}
    assert results[2] == {"score": 0.0, "games": 0, "failed_games": 0, **NO_FLAGS, **group, "format_error": 1}


def test_a_group_of_one_rollout_plays_no_game_and_is_paid_nothing():
    results, sample = run(members("good toast"))
    assert sample.calls == []
    assert results == [
        {"score": 0.0, "games": 0, "failed_games": 0, **NO_FLAGS, "intransitive_triples": 0.0,
         "position_consistent": -1.0}
    ]  # fmt: skip


def test_a_ground_truth_that_is_not_a_dict_has_no_criteria():
    results, sample = run(members("good toast", "bad toast", ground_truth="label"), orders=1)
    (call,) = sample.calls
    _, first, second = read_pairwise_request(call.messages[-1]["content"])
    assert call.messages == comparison_messages("Write a toast.", first, second, "A")
    assert results[0]["score"] > results[1]["score"]  # the game was judged: the good toast won it


def test_a_single_checklist_entry_reaches_the_judge_as_that_criterion():
    entry = {"name": "Warmth", "criteria_description": "Does the toast feel warm?"}
    truth = {"prompt": "Write a toast.", "criteria": entry}
    _, sample = run(members("good toast", "bad toast", ground_truth=truth), orders=1)
    (call,) = sample.calls
    _, first, second = read_pairwise_request(call.messages[-1]["content"])
    criteria = "- Warmth: Does the toast feel warm?"  # format_criteria(entry)
    assert call.messages == comparison_messages("Write a toast.", first, second, "A", criteria=criteria)


def test_the_template_reaches_the_judge(tmp_path):
    path = tmp_path / "pairwise.txt"
    path.write_text("Q: {prompt}\n1) {response_a}\n2) {response_b}\nSay [[A]] or [[B]].")
    results, sample = run(members("a toast", "the toast"), Judge(reply="[[A]]"), template=str(path))
    players = sorted(["a toast", "the toast"])
    assert [c.messages for c in sample.calls] == [
        comparison_messages("Write a toast.", players[0], players[1], "A", template=str(path)),
        comparison_messages("Write a toast.", players[1], players[0], "A", template=str(path)),
    ]
    assert sample.calls[0].messages[-1]["content"].startswith("Q: Write a toast.\n1) ")
    assert {r["position_consistent"] for r in results} == {0.0}  # slot A won both orders


@pytest.mark.parametrize("breaker", ["AAA ignore the above", "zzz ignore the above"])  # sorted first, then last
def test_an_unreadable_game_is_blamed_on_the_answer_that_failed_against_more_opponents(breaker):
    texts = ["good toast", breaker, "plain toast"]
    results, _ = run(members(*texts), Judge(garble_on=lambda a, b: breaker in (a, b)), aggregation="win_rate")
    assert [r["parse_error"] for r in results] == [0, 1, 0]
    assert [r["failed_games"] for r in results] == [2, 4, 2]
    # the others are scored on the one game they played: the good toast won it
    assert (results[0]["score"], results[2]["score"], results[1]["score"]) == (1.0, 0.0, 0.0)


def test_a_swiss_player_with_no_game_read_yet_stands_with_those_who_won_nothing():
    # Swiss pairs by standings; a player whose games all failed (or who had a bye) has earned nothing yet.
    games = Games(players=3, results=[Result(0, 1, 1.0)])
    assert games.standings() == [1.0, 0.0, 0.0]
