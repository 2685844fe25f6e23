"""`build_parquet.py pref-sft` / `pref-rl`: preference pairs -> pairwise GenRM SFT conversations and RL rows."""

import json

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from reward_fns.preference import compute_score
from writing_rl.protocols import gqm, verdict_or_none


def pair(i, **extra):
    return {
        "prompt": f"Write a two-line poem about rain, take {i}.",
        "chosen": f"Rain hums {i}.\nRoofs reply.",
        "rejected": f"It rained {i}.",
        **extra,
    }


def run(tmp_path, command, rows, *flags):
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    return build([command, "--quiet", "--input", str(source), "--output", str(out), *flags]), out


def read(out, split="train"):
    return pq.read_table(out / f"{split}.parquet").to_pylist()


def test_rl_rows_are_order_swapped_and_the_label_follows_the_chosen_response(tmp_path):
    rows = [pair(i) for i in range(3)]
    rc, out = run(tmp_path, "pref-rl", rows)
    assert rc == 0
    written = read(out)
    assert len(written) == 6
    for row in written:
        request = row["prompt"][-1]["content"]
        label = row["reward_model"]["ground_truth"]
        source = rows[row["extra_info"]["index"]]
        a = request.index("[Response A]")
        b = request.index("[Response B]")
        chosen_at = request.index(source["chosen"])
        assert label == ("A" if a < chosen_at < b else "B") == row["extra_info"]["chosen_slot"]
        assert row["extra_info"]["swapped"] == (label == "B")
        assert row["prompt"][0]["role"] == "system" and row["ability"] == "preference"
        # the reward reads the row as is: the right verdict earns 1, the wrong one 0
        assert compute_score(row["data_source"], f"Reasoning.\n[[{label}]]", label, row["extra_info"])["score"] == 1.0
        other = "B" if label == "A" else "A"
        assert compute_score(row["data_source"], f"Reasoning.\n[[{other}]]", label, row["extra_info"])["score"] == 0.0
    assert sorted(r["reward_model"]["ground_truth"] for r in written) == ["A", "A", "A", "B", "B", "B"]


def test_no_swap_writes_one_row_per_pair_with_a_seeded_balanced_slot(tmp_path):
    rows = [pair(i) for i in range(40)]
    rc, out = run(tmp_path, "pref-rl", rows, "--no-swap", "--seed", "3")
    assert rc == 0
    labels = [r["reward_model"]["ground_truth"] for r in read(out)]
    assert len(labels) == 40 and 10 < labels.count("A") < 30
    _, out = run(tmp_path, "pref-rl", rows, "--no-swap", "--seed", "3")
    assert [r["reward_model"]["ground_truth"] for r in read(out)] == labels
    _, out = run(tmp_path, "pref-rl", rows, "--no-swap", "--seed", "4")
    assert [r["reward_model"]["ground_truth"] for r in read(out)] != labels


def test_rewardbench_and_chat_style_columns_and_ties(tmp_path):
    rows = [
        {"question": "Q1?", "chosen_response": "good answer", "rejected_response": "bad answer"},
        {
            "chosen": [{"role": "user", "content": "Q2?"}, {"role": "assistant", "content": "fine"}],
            "rejected": [{"role": "user", "content": "Q2?"}, {"role": "assistant", "content": "worse"}],
        },
        {"prompt": "Q3?", "chosen": "same quality", "rejected": "same quality!", "tie": "true"},
    ]
    rc, out = run(tmp_path, "pref-rl", rows, "--tie-key", "tie", "--no-swap")
    assert rc == 0
    q1, q2, q3 = read(out)
    assert "Q1?" in q1["prompt"][-1]["content"] and "good answer" in q1["prompt"][-1]["content"]
    assert "[Request]\nQ2?" in q2["prompt"][-1]["content"] and "fine" in q2["prompt"][-1]["content"]
    assert q3["reward_model"]["ground_truth"] == "C"


def test_scores_output_format_uses_the_gqm_score_line(tmp_path):
    rows = [pair(0, cs=8, rs=3)]
    rc, out = run(tmp_path, "pref-rl", rows, "--output-format", "scores")
    assert rc == 0
    first = read(out)[0]
    assert "Response A:" in first["prompt"][-1]["content"] and gqm.SCORES_HEADER in first["prompt"][-1]["content"]
    assert first["extra_info"]["output_format"] == "scores"
    label = first["reward_model"]["ground_truth"]
    line = "A: 8, B: 3" if label == "A" else "A: 3, B: 8"
    assert compute_score("preference", f"analysis\n### Scores:\n{line}", label, first["extra_info"])["score"] == 1.0

    rc, out = run(
        tmp_path,
        "pref-sft",
        rows,
        "--output-format",
        "scores",
        "--chosen-score-key",
        "cs",
        "--rejected-score-key",
        "rs",
    )
    assert rc == 0
    answers = sorted(r["messages"][-1]["content"] for r in read(out))
    assert answers == ["A: 3, B: 8\n", "A: 8, B: 3\n"]


BAD = [
    ({"chosen": "", "rejected": "x"}, "chosen", "empty response"),
    ({"chosen": "same", "rejected": "same "}, "rejected", "identical to the chosen response"),
    ({"prompt": None, "question": None, "instruction": None, "input": None}, "prompt", "no column among"),
    ({"chosen": [{"role": "robot", "content": "x"}]}, "chosen", "role in"),
    ({"chosen": 42}, "chosen", "expected a response text or a chat"),
]


@pytest.mark.parametrize("change,field,reason", BAD)
def test_bad_pairs_name_row_field_and_reason(tmp_path, capsys, change, field, reason):
    rc, out = run(tmp_path, "pref-rl", [pair(0), {**pair(1), **change}])
    assert rc == 2
    err = capsys.readouterr().err
    assert "line 2 rejected" in err and f"field '{field}'" in err and reason in err
    assert not (out / "train.parquet").exists()


def test_sft_answers_are_critique_then_label_and_critiques_keep_their_order(tmp_path, capsys):
    rows = [
        pair(0),  # no critique: both orders, label only
        pair(1, critique="Response A has imagery; B is flat.\n[[A]]"),  # written with chosen as A: one order
        pair(2, critique="A sings, B does not.", critique_swapped="B sings, A does not."),  # both orders
        pair(3, critique="B is better.\n[[B]]"),  # contradicts --critique-chosen-slot A
    ]
    rc, _ = run(tmp_path, "pref-sft", rows)
    assert rc == 2 and "ends with [[B]] but the chosen response is A here" in capsys.readouterr().err
    rc, out = run(tmp_path, "pref-sft", rows[:3])
    assert rc == 0
    conversations = read(out)
    assert len(conversations) == 2 + 1 + 2
    for row in conversations:
        system, user, assistant = row["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        verdict = verdict_or_none(assistant["content"])
        chosen = next(p["chosen"] for p in rows if p["prompt"] in user["content"])
        request = user["content"]
        expected = "A" if request.index(chosen) < request.index("[Response B]") else "B"
        assert verdict == expected and assistant["content"].count("[[") == 1
    critique_answers = [r["messages"][-1]["content"] for r in conversations if "sings" in r["messages"][-1]["content"]]
    assert sorted(critique_answers) == ["A sings, B does not.\n\n[[A]]", "B sings, A does not.\n\n[[B]]"]
    text = capsys.readouterr().out
    assert "1 pairs written in one order only" in text
    assert (out / "dataset_info.json").exists()
