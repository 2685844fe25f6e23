"""writing_rl/tools/quickstart_report.py on hand-made `writing-rl score` outputs: which example it picks, how
it cuts text, how it labels A and B, and what it says about parse errors."""

from __future__ import annotations

import json

import pytest

from writing_rl.protocols.prompts import pairwise_messages
from writing_rl.tools.quickstart_report import (
    Example,
    JudgeView,
    ScoredResponses,
    choose_example,
    head,
    judge_view,
    main,
    one_line,
    parse_error_lines,
    reading_lines,
    report,
    reward_text,
    slot_labels,
)

PROMPT = "Write a poem about coffee."
REFERENCE = "Dark cup,\nwarm hands."
GOOD = "Steam curls up from the cup,\nbitter, dark and kind."
BAD = "Coffee is a drink."


def call(a: str, b: str, reply: str | None, error: str | None = None, criteria: str | None = None) -> dict:
    return {"messages": pairwise_messages(PROMPT, a, b, criteria=criteria), "reply": reply, "error": error}


def pairwise_record(reward: float, outcome: str | None, parse_error: int = 0) -> dict:
    shares = {key: float(key == outcome) for key in ("win", "tie", "loss")}
    return {"key": "id=0", "row": 0, "reward": reward, **shares, "curriculum/level": 0, "parse_error": parse_error}


def test_one_line_shows_newlines_collapses_space_and_hides_control_characters():
    assert one_line("  a\nb\t\tc\x1b[2Jd\x01  ") == "a ⏎ b c·[2Jd·"


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("one two three four", 10, "one two t…"),
        ("one two three four", 9, "one two…"),  # no space before the ellipsis
        ("line one\nline two", 40, "line one ⏎ line two"),
    ],
)
def test_head_cuts_with_an_ellipsis(text, limit, expected):
    assert head(text, limit) == expected
    assert len(head(text, limit)) <= limit


def test_choose_example_prefers_a_verdict_that_paid_the_reward():
    records = [
        {"key": "id=0", "row": 0, "parse_error": 1},  # no verdict
        {"key": "id=1", "row": 1, "parse_error": 1},  # a verdict, but the reward did not use it (truncated)
        {"key": "id=2", "row": 2, "parse_error": 0},  # not judged (a format error)
        {"key": "id=3", "row": 3, "parse_error": 1},  # both orders: the second has the verdict
        {"key": "id=4", "row": 4, "parse_error": 0},
    ]
    transcripts = [
        {"calls": [call(REFERENCE, GOOD, "noise")]},
        {"calls": [call(REFERENCE, GOOD, "[[B]]")]},
        {"calls": []},
        {"calls": [call(GOOD, REFERENCE, "noise"), call(REFERENCE, GOOD, "so [[A]]")]},
        {"calls": [call(REFERENCE, BAD, "fine. [[A]]")]},
    ]
    assert choose_example(records, transcripts) == Example(4, 0)
    assert choose_example(records[:4], transcripts[:4]) == Example(1, 0)
    assert choose_example(records[2:4], transcripts[2:4]) == Example(1, 1)  # the call with the verdict
    assert choose_example(records[:1], transcripts[:1]) == Example(0, 0)  # no verdict anywhere: first reply
    failed = [{"calls": [call(REFERENCE, GOOD, None, error="timeout")]}]
    assert choose_example(records[:1], failed) == Example(0, 0)
    assert choose_example(records[2:3], transcripts[2:3]) is None


@pytest.mark.parametrize("criteria", [None, "- vivid imagery\n- rhyme"])
def test_judge_view_reads_the_built_in_template(criteria):
    messages = pairwise_messages(PROMPT, "first\n\nanswer", "second answer", criteria=criteria)
    assert judge_view(messages) == JudgeView(PROMPT, "first\n\nanswer", "second answer")


def test_judge_view_gives_up_on_a_custom_template():
    assert judge_view([{"role": "user", "content": "Compare <a>x</a> and <b>y</b>."}]) is None


def test_slot_labels_pairwise_and_brpo():
    responses = ScoredResponses("r.jsonl", [1, 2, 4], [GOOD, BAD, None])
    view = JudgeView(PROMPT, REFERENCE, GOOD)
    pairwise = [{"row": 0, "curriculum/level": 2}, {"row": 0, "curriculum/level": 0}, {"row": 1}]
    assert slot_labels(0, view, pairwise, responses) == {
        "A": "the reference answer, curriculum level 2",
        "B": "the policy's response",
    }
    brpo = [{"row": 0, "is_reference": 0}, {"row": 0, "is_reference": 1}, {"row": 1, "is_reference": 0}]
    labels = slot_labels(0, JudgeView(PROMPT, GOOD, BAD), brpo, responses)
    assert labels == {
        "A": "the policy's response",
        "B": "the rollout on line 2, BRPO's bootstrapped reference for this prompt",
    }
    # Neither slot is this sample's answer (a custom template or a changed text): no label at all.
    assert slot_labels(1, view, pairwise, responses) == {"A": "", "B": ""}


@pytest.mark.parametrize(
    "record, calls, expected",
    [
        (pairwise_record(1.0, "win"), [{"reply": "[[B]]"}], "1: a win"),
        (pairwise_record(0.75, None) | {"win": 0.5, "tie": 0.5}, [{"reply": "[[B]]"}], "0.75: win 0.5, tie 0.5"),
        (pairwise_record(0.0, None, parse_error=1), [{"reply": "noise"}], "0: no verdict, counted as a loss"),
        ({"reward": 0.0, "format_error": 1, "win": 0, "tie": 0, "loss": 1}, [], "0: the response has no answer"),
        ({"reward": -1.0, "is_reference": 0}, [{"reply": "[[B]]"}], "-1: the reference preferred"),
        (
            {"reward": -1.0, "is_reference": 0, "parse_error": 1},
            [{"reply": "noise"}],
            "-1: no verdict, counted as a loss",
        ),
        ({"reward": 0.0, "is_reference": 1}, [], "0: the group's bootstrapped reference, not judged"),
        ({"reward": -1.0, "is_reference": 1, "parse_error": 1}, [], "-1: the group's bootstrapped reference; no comp"),
    ],
)
def test_reward_text(record, calls, expected):
    assert reward_text(record, calls).startswith(expected)


def test_parse_error_lines_explain_the_untrained_judge_and_hint_for_a_real_one():
    records = [pairwise_record(0.0, None, parse_error=1) | {"judge_calls": 1} for _ in range(3)]
    records.append({"reward": 0.0, "parse_error": 0, "judge_calls": 0, "win": 0, "tie": 0, "loss": 1})
    untrained = parse_error_lines(records, untrained=True, max_tokens=16, out_dir="runs/x")
    assert untrained[0].startswith("-- parse errors: 3 of 3 judged samples (100%")
    assert "the table's parse_error_rate divides by all 4 samples, 1 not judged" in untrained[0]
    assert "tiny untrained judge writes up to 16 random tokens" in untrained[1]
    assert "pays a loss, 0 here" in untrained[1] and "JUDGE_MODEL or JUDGE_BASE_URL" in untrained[1]

    real = parse_error_lines(records, untrained=False, max_tokens=512, out_dir="runs/x")
    assert (
        real[1].startswith("   hint:") and "JUDGE_MAX_TOKENS=512" in real[1] and "runs/x/transcripts.jsonl" in real[1]
    )

    healthy = [r | {"parse_error": 0} for r in records[:3]] * 2 + [records[0]]  # 1 of 7: under the threshold
    assert len(parse_error_lines(healthy, untrained=False, max_tokens=None, out_dir="runs/x")) == 1
    brpo = [{"reward": -1.0, "is_reference": 0, "parse_error": 1, "judge_calls": 2}]
    assert "an unreadable comparison counts as a loss (-1)" in parse_error_lines(brpo, True, None, "runs/x")[1]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_report_of_a_score_directory(tmp_path, capsys):
    write_jsonl(
        tmp_path / "rollouts.jsonl",
        [{"id": 0, "response": "<think>plan</think>" + GOOD}, {"id": 0, "response": BAD}],
    )
    write_jsonl(
        tmp_path / "scores.jsonl",
        [
            pairwise_record(0.5, None, parse_error=1) | {"judge_calls": 1},
            pairwise_record(1.0, "win") | {"judge_calls": 1},
        ],
    )
    reasoning = "Response B is vivid.\n" + "x" * 400 + "\n[[B]]"
    write_jsonl(
        tmp_path / "transcripts.jsonl",
        [
            {"key": "id=0", "row": 0, "calls": [call(REFERENCE, GOOD, "noise")]},
            {"key": "id=0", "row": 0, "calls": [call(REFERENCE, BAD, reasoning)]},
        ],
    )
    text = report(str(tmp_path), str(tmp_path / "rollouts.jsonl"))
    lines = text.splitlines()
    assert lines[0] == f"-- one judged example: line 2 of {tmp_path / 'rollouts.jsonl'} (id=0)"
    assert lines[1] == f"   prompt     {PROMPT}"
    assert lines[2] == "   A          [the reference answer, curriculum level 0] Dark cup, ⏎ warm hands."
    assert lines[3] == f"   B          [the policy's response] {BAD}"
    assert lines[4] == "   verdict    [[B]]: B is better, the policy's response"
    assert lines[5].startswith("   reasoning  Response B is vivid. ⏎ xxx") and lines[5].endswith("…")
    assert len(lines[5]) == len("   reasoning  ") + 300
    assert lines[6] == "   reward     1: a win"
    assert lines[7] == "-- readable judge replies: 1 of 2 (50%)"
    assert lines[8] == "   position bias: 0 of 1 decisions for the answer shown first (A)"
    assert lines[9] == "-- parse errors: 1 of 2 judged samples (50%)"
    assert lines[10].startswith("   hint:")

    assert main([str(tmp_path), "--responses", str(tmp_path / "rollouts.jsonl"), "--untrained"]) == 0
    assert "   why: the tiny untrained judge" in capsys.readouterr().out


def test_report_refuses_outputs_of_another_responses_file(tmp_path):
    write_jsonl(tmp_path / "rollouts.jsonl", [{"id": 0, "response": GOOD}])
    write_jsonl(tmp_path / "scores.jsonl", [pairwise_record(1.0, "win")] * 2)
    write_jsonl(tmp_path / "transcripts.jsonl", [{"calls": []}] * 2)
    with pytest.raises(ValueError, match="not the output of one `writing-rl score` run"):
        report(str(tmp_path), str(tmp_path / "rollouts.jsonl"))


def both_orders(first: str | None, second: str | None, answer: str = GOOD) -> dict:
    """A comparison judged in both orders: the answer at A, then at B."""
    return {"calls": [call(answer, REFERENCE, first), call(REFERENCE, answer, second)]}


@pytest.mark.parametrize(
    "transcripts, expected",
    [
        # a judge that keeps its choice when the answers swap places, and one that follows the position
        (
            [both_orders("[[A]]", "[[B]]"), both_orders("[[C]]", "[[C]]", BAD)],
            [
                "-- readable judge replies: 4 of 4 (100%)",
                "   position bias: 1 of 2 decisions for the answer shown first (A); kept its choice when the answers "
                "swapped places: 2 of 2",
            ],
        ),
        (
            [both_orders("[[A]]", "[[A]]"), both_orders("[[A]]", "no verdict", BAD)],
            [
                "-- readable judge replies: 3 of 4 (75%)",
                "   position bias: 3 of 3 decisions for the answer shown first (A); kept its choice when the answers "
                "swapped places: 0 of 1",
            ],
        ),
        # nothing readable: no bias to report, and it says why; a failed call is no reply
        (
            [both_orders("I like both", "Response A"), {"calls": [call(GOOD, REFERENCE, None, error="HTTP 500")]}],
            ["-- readable judge replies: 0 of 2 (0%)", "   position bias: no data (no reply could be read)"],
        ),
        ([{"calls": []}], []),
    ],
)
def test_reading_lines_count_readable_replies_and_the_position_bias(transcripts, expected):
    assert reading_lines(transcripts) == expected


def test_a_reply_cut_at_max_tokens_is_not_read_even_when_it_holds_a_verdict():
    cut = both_orders("[[A]]", "[[B]] and then", GOOD)
    cut["calls"][1]["finish_reason"] = "length"  # the reward reads a cut reply as unreadable, and so does the report
    assert reading_lines([cut]) == [
        "-- readable judge replies: 1 of 2 (50%)",
        "   position bias: 1 of 1 decisions for the answer shown first (A)",
    ]


def test_a_second_call_that_does_not_swap_the_answers_is_not_a_both_orders_pair():
    same_order = {"calls": [call(GOOD, REFERENCE, "[[A]]"), call(GOOD, REFERENCE, "[[A]]")]}
    assert reading_lines([same_order])[1] == "   position bias: 2 of 2 decisions for the answer shown first (A)"
