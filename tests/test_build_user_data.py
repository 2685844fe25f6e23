"""Builders keep what the user gave them: their id and extra columns in extra_info, WritingBench
checklists as criteria, rejected records named by their line, outputs with the user's umask."""

from __future__ import annotations

import json
import os
import stat

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import build_parser
from data_prep.build_parquet import main as build
from writing_rl.prompts import format_criteria

CHECKLIST = [
    {
        "name": "Structure",
        "criteria_description": "Is the introduction organised from context to thesis scope?",
        "1-2": "No discernible structure.",
        "9-10": "Every paragraph leads to the next.",
    },
    {"name": "Length", "description": "Meets the 2000-2500 word requirement.", "5-6": "Within 20% of it."},
]


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def built_rows(out) -> list[dict]:
    return sorted(pq.read_table(out / "train.parquet").to_pylist(), key=lambda r: r["extra_info"]["index"])


def test_the_users_id_and_extra_columns_are_kept_in_extra_info(tmp_path, capsys):
    rows = [
        {"id": "wb-16", "prompt": "Write an introduction.", "references": ["r"], "domain1": "Academic", "index": 7},
        {"id": "wb-17", "prompt": "Write a toast.", "references": ["r"], "domain1": "Life", "index": 8},
        {"id": "wb-18", "prompt": "Write a poem.", "references": ["r"], "source": {"site": "x", "year": 2024}},
        {"id": 19, "prompt": "Write a note.", "references": ["r"], "domain1": None},
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    args = ["writing-rl", "--quiet", "--input", source, "--output", str(tmp_path / "out"), "--chunk-size", "2"]
    assert build(args) == 0
    assert "kept in extra_info: id, domain1, source_index, source" in capsys.readouterr().out
    extra = [r["extra_info"] for r in built_rows(tmp_path / "out")]
    assert [e["index"] for e in extra] == [0, 1, 2, 3]  # ours: dense ids the reward path relies on
    assert [e["source_index"] for e in extra] == [7, 8, None, None]  # the user's 'index', renamed
    assert [e["id"] for e in extra] == ["wb-16", "wb-17", "wb-18", "19"]  # mixed str/int: kept as text
    assert [e["domain1"] for e in extra] == ["Academic", "Life", None, None]  # only in some rows
    assert extra[2]["source"] == {"site": "x", "year": 2024} and extra[0]["source"] is None


def test_augmented_rows_carry_their_input_rows_columns(tmp_path):
    rows = [
        {"src_text": f"Bonjour {i}", "src_lang": "fr", "trg_lang": "en", "mt_texts": ["a", "b", "c"],
         "scores": [9, 5, 1], "domain": f"d{i}"}
        for i in range(3)
    ]  # fmt: skip
    source = write_jsonl(tmp_path / "groups.jsonl", rows)
    out = tmp_path / "out"
    assert build(["gqm-rl", "--quiet", "--input", source, "--output", str(out), "--shuffle-augment", "2"]) == 0
    table = pq.read_table(out / "train.parquet").to_pylist()
    assert len(table) == 9  # each group and two shuffles
    by_group = {}
    for row in table:
        by_group.setdefault(row["extra_info"]["index"], set()).add(row["extra_info"]["domain"])
    assert by_group == {i: {f"d{i}"} for i in range(3)}


def test_writingbench_checklists_are_rendered_for_the_judge(tmp_path):
    rows = [
        {"prompt": "Write an introduction.", "references": ["r"], "criteria": CHECKLIST},
        {"prompt": "Write a toast.", "references": ["r"], "criteria": json.dumps(CHECKLIST)},  # as in a CSV cell
    ]
    out = tmp_path / "out"
    assert (
        build(["writing-rl", "--quiet", "--input", write_jsonl(tmp_path / "in.jsonl", rows), "--output", str(out)]) == 0
    )
    criteria = [r["reward_model"]["ground_truth"]["criteria"] for r in built_rows(out)]
    assert criteria[0] == criteria[1] == format_criteria(CHECKLIST)
    assert criteria[0].splitlines() == [
        "- Structure: Is the introduction organised from context to thesis scope?",
        "    1-2: No discernible structure.",
        "    9-10: Every paragraph leads to the next.",
        "- Length: Meets the 2000-2500 word requirement.",
        "    5-6: Within 20% of it.",
    ]


def test_a_malformed_criterion_is_a_rejected_row(tmp_path, capsys):
    rows = [{"prompt": "p", "references": ["r"], "criteria": [{"title": "no name", "criteria_description": "d"}]}]
    args = [
        "writing-rl",
        "--quiet",
        "--input",
        write_jsonl(tmp_path / "in.jsonl", rows),
        "--output",
        str(tmp_path / "o"),
    ]
    assert build(args) == 2
    err = capsys.readouterr().err
    assert "line 1 rejected: field 'criteria': criterion 0 must have a string 'name'" in err


BAD_LINES = [
    b'{"prompt": "fine one", "references": ["r"]}\n',
    b"[1, 2]\n",
    b'{"prompt": "cut off\n',
    b"\n",
    b'{"prompt": "caf\xe9 latin-1", "references": ["r"]}\n',
    b'"just a string"\n',
    b'{"prompt": "fine two", "references": ["r"]}\n',
]


def test_bad_jsonl_lines_are_rejected_with_their_line_numbers(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(BAD_LINES))
    rejects = tmp_path / "rejects.jsonl"
    out = tmp_path / "out"
    args = ["writing-rl", "--quiet", "--input", str(source), "--output", str(out), "--rejects", str(rejects)]
    assert build([*args, "--skip-bad"]) == 0
    assert [r["prompt"][0]["content"] for r in built_rows(out)] == ["fine one", "fine two"]
    reported = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [r["where"] for r in reported] == ["line 2", "line 3", "line 5", "line 6"]  # line 4 is blank
    assert "a JSON list, not an object" in reported[0]["reason"]
    assert "not valid JSON" in reported[1]["reason"] and "not UTF-8" in reported[2]["reason"]
    assert "a JSON str, not an object" in reported[3]["reason"]

    capsys.readouterr()
    assert build(args) == 2  # without --skip-bad: the first bad line, one clear line
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{source}: line 2 rejected: a JSON list, not an object; expected one JSON object per line" in line


def test_csv_records_are_placed_by_their_first_line(tmp_path, capsys):
    source = tmp_path / "in.csv"
    source.write_text('prompt,references\n"a prompt\nover two lines","[""r""]"\n"",x\n', encoding="utf-8")
    args = ["writing-rl", "--quiet", "--input", str(source), "--output", str(tmp_path / "out")]
    assert build(args) == 2
    assert "line 4 rejected: field 'prompt'" in capsys.readouterr().err


def test_outputs_follow_the_users_umask(tmp_path):
    rows = [{"prompt": "p", "references": ["r"]}, {"prompt": "q", "references": ["r"]}]
    out = tmp_path / "out"
    previous = os.umask(0o022)
    try:
        args = ["writing-rl", "--quiet", "--input", write_jsonl(tmp_path / "in.jsonl", rows), "--output", str(out),
                "--test-size", "1", "--rejects", str(out / "rejects.jsonl")]  # fmt: skip
        assert build(args) == 0
    finally:
        os.umask(previous)
    for name in ("train.parquet", "test.parquet", "rejects.jsonl"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644, name


def test_help_lists_every_subcommand_with_an_example(capsys):
    with pytest.raises(SystemExit):
        build(["--help"])
    text = capsys.readouterr().out
    for name in ("writing-rl", "gqm-sft", "gqm-rl", "pref-sft", "pref-rl", "prompts"):
        assert f"  {name}: " in text and f"python data_prep/build_parquet.py {name} --input" in text
    for action in build_parser()._subparsers._group_actions[0].choices.values():
        for option in action._actions:
            if option.option_strings and option.dest != "help":
                assert option.help, (action.prog, option.option_strings)
