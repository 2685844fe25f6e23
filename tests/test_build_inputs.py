"""What builders do with the input files themselves: bad records are rejected rows named by their line
(JSONL, CSV) or 0-based row (JSON, parquet), one clear error line without --skip-bad and nothing
written; outputs get the user's umask; --help lists every subcommand with an example."""

from __future__ import annotations

import json
import os
import stat

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import build_parser
from data_prep.build_parquet import main as build
from data_prep.commands.options import BuilderHelpFormatter
from writing_rl.data.readers import iter_located

BAD_LINES = [
    b'{"prompt": "fine one", "references": ["r"]}\n',
    b"[1, 2]\n",
    b'{"prompt": "cut off\n',
    b"\n",
    b'{"prompt": "caf\xe9 latin-1", "references": ["r"]}\n',
    b'"just a string"\n',
    b"3\n",
    b'{"prompt": "fine two", "references": ["r"]}\n',
]


def args_for(source, out, *flags) -> list[str]:
    return ["writing-rl", "--quiet", "--input", str(source), "--output", str(out), *flags]


def prompts_of(out) -> list[str]:
    rows = sorted(pq.read_table(out / "train.parquet").to_pylist(), key=lambda r: r["extra_info"]["index"])
    return [r["prompt"][0]["content"] for r in rows]


def read_rejects(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_bad_jsonl_lines_are_rejected_rows_with_their_line_numbers(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(BAD_LINES))
    rejects, out = tmp_path / "rejects.jsonl", tmp_path / "out"
    assert build(args_for(source, out, "--skip-bad", "--rejects", str(rejects))) == 0
    assert prompts_of(out) == ["fine one", "fine two"]
    reported = read_rejects(rejects)
    assert [r["line"] for r in reported] == [2, 3, 5, 6, 7]  # line 4 is blank
    assert [r["where"] for r in reported] == ["line 2", "line 3", "line 5", "line 6", "line 7"]
    assert [r["row"] for r in reported] == [1, 2, 3, 4, 5]  # 0-based position among the records
    reasons = [r["reason"] for r in reported]
    assert reasons[0] == "a JSON array, not an object; expected one JSON object per line"
    assert reasons[1].startswith("not valid JSON (") and reasons[1].endswith("expected one JSON object per line")
    assert reasons[2] == "not UTF-8 (at byte 16 of the line: b'\\xe9 la'); expected one JSON object per line"
    assert reasons[3] == "a JSON string, not an object; expected one JSON object per line"
    assert reasons[4] == "a JSON number, not an object; expected one JSON object per line"
    assert [r["text"] for r in reported] == ["[1, 2]", '{"prompt": "cut off', '{"prompt": "caf\\xe9 latin-1", '
                                             '"references": ["r"]}', '"just a string"', "3"]  # fmt: skip
    assert all(r["data"] is None and r["field"] == "" for r in reported)


def test_without_skip_bad_the_first_bad_line_is_one_error_line_and_nothing_is_written(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(BAD_LINES))
    rejects, out = tmp_path / "rejects.jsonl", tmp_path / "out"
    assert build(args_for(source, out, "--rejects", str(rejects))) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"build_parquet writing-rl: error: {source}: line 2 rejected: a JSON array, not an object; expected one "
        "JSON object per line (pass --skip-bad to skip bad rows and report them in --rejects)"
    )
    assert not (out / "train.parquet").exists() and not [p for p in out.iterdir()]  # no temp file left either
    assert [r["line"] for r in read_rejects(rejects)] == [2]


@pytest.mark.parametrize(
    "raw, expected",
    [
        (
            b'{"prompt": "ok"}\n\xff\xfe{"prompt": "x"}\n',
            "line 2 rejected: not UTF-8 (at byte 1 of the line: b'\\xff\\xfe{\"')",
        ),
        (b'{"prompt": "ok"}\n\n{"prompt": \n', "line 3 rejected: not valid JSON (Expecting value at column 12)"),
        (b"null\n", "line 1 rejected: a JSON null, not an object"),
    ],
)
def test_each_kind_of_bad_line_names_its_line(tmp_path, capsys, raw, expected):
    source = tmp_path / "in.jsonl"
    source.write_bytes(raw)
    assert build(args_for(source, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert expected in err and "expected one JSON object per line" in err


def test_json_and_parquet_rows_are_named_by_their_0_based_index(tmp_path, capsys):
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"prompt": "a"}, ["not", "an", "object"], {"prompt": ""}]), encoding="utf-8")
    rejects = tmp_path / "rejects.jsonl"
    assert build(args_for(source, tmp_path / "out", "--skip-bad", "--rejects", str(rejects))) == 0
    reported = read_rejects(rejects)
    assert [(r["where"], r["row"]) for r in reported] == [("row 1 (0-based)", 1), ("row 2 (0-based)", 2)]
    assert "line" not in reported[0] and reported[0]["reason"].startswith("a JSON array, not an object")
    assert reported[1]["field"] == "prompt" and reported[1]["data"] == {"prompt": ""}

    pq.write_table(pa.table({"prompt": ["a", "b", None]}), tmp_path / "in.parquet")
    assert build(args_for(tmp_path / "in.parquet", tmp_path / "out2", "--chunk-size", "2")) == 2
    assert "in.parquet: row 2 (0-based) rejected: field 'prompt'" in capsys.readouterr().err


def test_a_json_file_that_is_not_json_is_one_clear_error(tmp_path, capsys):
    source = tmp_path / "in.json"
    source.write_text('[{"prompt": "a"},', encoding="utf-8")
    assert build(args_for(source, tmp_path / "out")) == 2
    assert f"{source}: not valid JSON (" in capsys.readouterr().err


def test_csv_records_are_named_by_their_first_line(tmp_path):
    source = tmp_path / "in.csv"
    long_cell = "word " * 40_000  # past csv's default limit of 128 KiB per cell
    lines = [
        b"prompt,references\n",
        b'"a prompt\nover two lines","[""r""]"\n',  # lines 2-3
        b'"",x\n',  # line 4: empty prompt
        b"caf\xe9,x\n",  # line 5: not UTF-8
        b"one,two,three\n",  # line 6: more cells than the header
        f"{long_cell},x\n".encode(),  # line 7
    ]
    source.write_bytes(b"".join(lines))
    rejects, out = tmp_path / "rejects.jsonl", tmp_path / "out"
    assert build(args_for(source, out, "--skip-bad", "--rejects", str(rejects))) == 0
    assert prompts_of(out) == ["a prompt\nover two lines", long_cell]
    reported = read_rejects(rejects)
    assert [(r["line"], r["field"]) for r in reported] == [(4, "prompt"), (5, ""), (6, "")]
    assert reported[1]["reason"] == "not UTF-8; expected a UTF-8 CSV file"
    assert reported[2]["reason"] == "3 cells, the header names 2; expected one cell per column"


def test_iter_located_places_records():
    records = [r for chunk in iter_located("examples/writing_prompts.jsonl", chunk_size=2) for r in chunk]
    assert records[0].where == "line 1" and records[0].row is not None and records[-1].number == len(records)


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_outputs_follow_the_users_umask(tmp_path, umask, mode):
    source = tmp_path / "in.jsonl"
    source.write_text('{"prompt": "p", "chosen": "good", "rejected": "bad"}\n' * 2, encoding="utf-8")
    out = tmp_path / "out"
    previous = os.umask(umask)
    try:
        args = ["pref-sft", "--quiet", "--input", str(source), "--output", str(out), "--test-size", "1",
                "--rejects", str(out / "rejects.jsonl")]  # fmt: skip
        assert build(args) == 0
    finally:
        os.umask(previous)
    for name in ("train.parquet", "test.parquet", "rejects.jsonl", "dataset_info.json"):
        assert stat.S_IMODE((out / name).stat().st_mode) == mode, name


# ---------------------------------------------------------------- --help

SUBCOMMANDS = ("writing-rl", "gqm-sft", "gqm-rl", "pref-sft", "pref-rl", "prompts", "rubric")


def test_help_lists_every_subcommand_with_its_help_and_an_example(capsys):
    with pytest.raises(SystemExit):
        build(["--help"])
    text = capsys.readouterr().out
    choices = build_parser()._subparsers._group_actions[0]
    helps = {action.dest: action.help for action in choices._choices_actions}
    assert sorted(helps) == sorted(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        assert f"  {name}: {helps[name]}\n    python data_prep/build_parquet.py {name} --input " in text


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_option_has_help_with_its_default_and_the_help_ends_with_an_example(capsys, name):
    with pytest.raises(SystemExit):
        build([name, "--help"])
    text = capsys.readouterr().out
    last = text.rstrip().splitlines()[-2:]
    assert last[0] == "example:" and last[1].startswith(f"  python data_prep/build_parquet.py {name} --input ")
    parser = build_parser()._subparsers._group_actions[0].choices[name]
    formatter = BuilderHelpFormatter(name)
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            shown = formatter._get_help_string(action)
            assert action.help and ("default" in shown or shown.endswith("(required)")), (name, action.dest)
