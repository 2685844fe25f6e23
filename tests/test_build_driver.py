"""The build driver's steps (writing_rl/data/driver.py): the split rule, and the reject rule meeting the kept
columns, whose names a build that stops at a bad row reads without taking rows from the build."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from writing_rl.data import driver


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def writing_rl(tmp_path, rows, *flags) -> tuple[int, object]:
    out = tmp_path / "out"
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    return build(["writing-rl", "--quiet", "--input", source, "--output", str(out), *flags]), out


def test_the_split_rule_goes_by_input_position():
    plan = driver.SplitPlan(4, np.array([False, True, False, False]))
    assert plan.names == ["train", "test"]
    assert [plan.split_of(i) for i in range(4)] == ["train", "test", "train", "train"]
    assert driver.SplitPlan().names == ["train"] and driver.SplitPlan().split_of(7) == "train"
    assert driver.SplitPlan(2, np.zeros(2, dtype=bool)).names == ["train"]  # a draw of 0 rows: no test file


# Rows 0 and 1 (the first chunk of 2) have no "uid": the --id-key column is seen only from the second chunk.
ID_LATE = [{"prompt": ""}, {"prompt": "p1"}, *({"prompt": f"p{i}", "uid": f"u{i}"} for i in range(2, 9))]


def test_rows_skipped_before_the_id_column_is_seen_leave_every_later_chunk_to_the_build(tmp_path, capsys):
    rejects = tmp_path / "rejects.jsonl"
    flags = ("--id-key", "uid", "--chunk-size", "2", "--skip-bad", "--rejects", str(rejects))
    rc, out = writing_rl(tmp_path, ID_LATE, *flags)
    assert rc == 0
    assert "read 9 rows: accepted 7, rejected 2" in capsys.readouterr().out
    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["extra_info"]["source_id"] for r in rows] == [f"u{i}" for i in range(2, 9)]
    assert [json.loads(line)["line"] for line in rejects.read_text().splitlines()] == [1, 2]


def test_a_build_stopped_before_the_id_column_is_seen_still_finds_it_and_reports_the_row(tmp_path, capsys):
    rejects = tmp_path / "rejects.jsonl"
    rc, _ = writing_rl(tmp_path, ID_LATE, "--id-key", "uid", "--chunk-size", "2", "--rejects", str(rejects))
    assert rc == 2
    err = capsys.readouterr().err
    assert "line 1 rejected: field 'uid': missing" in err and "no such column" not in err
    assert [json.loads(line)["line"] for line in rejects.read_text().splitlines()] == [1]


def test_a_column_whose_type_comes_back_to_the_first_chunks_keeps_every_value(tmp_path):
    # --chunk-size 2: "a" is null in the first chunk written (kept as text), integers in the second, and
    # text again once the third has strings; the second chunk was written with nulls in its place
    rows = [{"prompt": f"p{i}", "a": None if i < 2 else (i if i < 4 else f"s{i}")} for i in range(6)]
    rc, out = writing_rl(tmp_path, rows, "--chunk-size", "2")
    assert rc == 0
    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["extra_info"]["a"] for r in rows] == [None, None, "2", "3", "s4", "s5"]


@pytest.mark.parametrize(
    "name, error",
    [
        ("missing.jsonl", "No such file or directory"),
        ("notes.txt", "unknown input format; expected one of .parquet .jsonl .json .csv or a datasets dir"),
    ],
)
def test_an_input_it_cannot_read_is_one_error_line_before_any_progress_bar(tmp_path, capsys, name, error):
    (tmp_path / "notes.txt").write_text("a line\n")
    rc = build(["writing-rl", "--input", str(tmp_path / name), "--output", str(tmp_path / "out")])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("build_parquet writing-rl: error: ") and error in err[0], err
