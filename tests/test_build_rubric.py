"""`build_parquet.py rubric`: prompts with rubrics (ours, Rubrics as Rewards', WritingBench's) -> rows the
rubric reward reads."""

import json
import re

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from writing_rl.protocols.rubric import read_rubric


def run(tmp_path, rows, *flags):
    source = tmp_path / "rubrics.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    return build(["rubric", "--quiet", "--input", str(source), "--output", str(out), *flags]), out


def test_the_three_rubric_shapes_become_one(tmp_path):
    rows = [
        {
            "prompt": "Write a toast.",
            "rubric": [{"criterion": "Is warm", "weight": 2}, {"criterion": "Rambles", "weight": -1}],
        },
        {
            "question": "Explain anaemia.",
            "rubrics": [{"title": "Essential", "description": "Names iron deficiency", "weight": 5}],
        },
        {
            "index": 7,
            "query": "Write a product launch email.",
            "checklist": json.dumps([{"name": "Clarity", "criteria_description": "Clear offer", "1-2": "vague"}]),
        },
    ]
    rc, out = run(tmp_path, rows)
    assert rc == 0
    toast, anaemia, email = sorted(
        pq.read_table(out / "train.parquet").to_pylist(), key=lambda r: r["extra_info"]["index"]
    )
    assert toast["reward_model"]["ground_truth"] == {
        "prompt": "Write a toast.",
        "rubric": [{"criterion": "Is warm", "weight": 2.0}, {"criterion": "Rambles", "weight": -1.0}],
    }
    assert anaemia["reward_model"]["ground_truth"]["rubric"] == [
        {"criterion": "Essential: Names iron deficiency", "weight": 5.0}
    ]
    assert email["prompt"] == [{"role": "user", "content": "Write a product launch email."}]
    assert email["reward_model"]["ground_truth"]["rubric"] == [{"criterion": "Clarity: Clear offer", "weight": 1.0}]
    assert [c.text for c in read_rubric(email["reward_model"]["ground_truth"])] == ["Clarity: Clear offer"]


@pytest.mark.parametrize(
    "row, message",
    [
        ({"prompt": "x", "rubric": []}, "field 'rubric': expected a non-empty list"),
        (
            {"prompt": "x", "rubric": [{"criterion": "a", "weight": 0}]},
            r"field 'rubric\[0\].weight': expected a non-zero",
        ),
        ({"prompt": "x", "rubric": [{"criterion": "a", "weight": -2}]}, "no criterion has a positive weight"),
        ({"prompt": "x", "rubric": [{"text": "a"}]}, r"field 'rubric\[0\]': expected \{criterion, weight\}"),
        ({"prompt": "x", "rubric": "not json"}, "a JSON list of criteria"),
    ],
)
def test_a_bad_rubric_is_reported_with_its_line_and_field(tmp_path, capsys, row, message):
    rc, out = run(tmp_path, [row])
    err = capsys.readouterr().err
    assert rc != 0 and "line 1" in err and re.search(message, err)
    assert not (out / "train.parquet").exists()
