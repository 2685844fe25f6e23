"""Builders keep what the user gave them: their row id as extra_info.source_id, their other columns in
extra_info (one type per column over every chunk, never over our own keys), and WritingBench checklists
as criteria the judge can read."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from reward_fns.pairwise import read_writing_rl_task
from writing_rl.protocols.prompts import format_criteria, pairwise_messages

CHECKLIST = [
    {
        "name": "Structure",
        "criteria_description": "Is the introduction organised from context to thesis scope?",
        "1-2": "No discernible structure.",
        "9-10": "Every paragraph leads to the next.",
    },
    {"name": "Length", "description": "Meets the 2000-2500 word requirement.", "5-6": "Within 20% of it."},
]
CHECKLIST_TEXT = [
    "- Structure: Is the introduction organised from context to thesis scope?",
    "    - 1-2: No discernible structure.",
    "    - 9-10: Every paragraph leads to the next.",
    "- Length: Meets the 2000-2500 word requirement.",
    "    - 5-6: Within 20% of it.",
]


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def built_rows(out, split="train") -> list[dict]:
    return sorted(pq.read_table(out / f"{split}.parquet").to_pylist(), key=lambda r: r["extra_info"]["index"])


def writing_rl(tmp_path, rows, *flags) -> tuple[int, object]:
    out = tmp_path / "out"
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    return build(["writing-rl", "--quiet", "--input", source, "--output", str(out), *flags]), out


# ---------------------------------------------------------------- the user's id and columns


def test_the_users_id_and_columns_are_kept_across_chunks(tmp_path, capsys):
    rows = [  # --chunk-size 2: rows 0-1, 2-3 and 4 are read and written as separate chunks
        {"id": "wb-16", "prompt": "Write an introduction.", "domain1": "Academic", "score": 3, "index": 7},
        {"id": "wb-17", "prompt": "Write a toast.", "domain1": "Life", "score": 4, "tags": ["a", "b"]},
        {"id": "wb-18", "prompt": "Write a poem.", "lang": "en", "score": 4.5, "source": {"site": "x", "year": 2024}},
        {"id": 19, "prompt": "Write a note.", "domain1": None, "lang": "zh", "source": {"site": "y"}},
        {"id": "wb-20", "prompt": "Write a limerick.", "tags": [], "mixed": [1, "one"]},
    ]
    rc, out = writing_rl(tmp_path, rows, "--chunk-size", "2")
    assert rc == 0
    assert (
        "kept in extra_info: source_id (your id), domain1, score, source_index (your index), tags, lang, source, mixed"
        in capsys.readouterr().out
    )
    extra = [r["extra_info"] for r in built_rows(out)]
    assert [e["index"] for e in extra] == [0, 1, 2, 3, 4]  # ours: the dense ids the reward path relies on
    assert [e["source_id"] for e in extra] == ["wb-16", "wb-17", "wb-18", "19", "wb-20"]  # str + int: text
    assert [e["source_index"] for e in extra] == [7, None, None, None, None]  # the user's 'index', renamed
    assert [e["domain1"] for e in extra] == ["Academic", "Life", None, None, None]  # only in the first chunk
    assert [e["lang"] for e in extra] == [None, None, "en", "zh", None]  # absent from the first chunk
    assert [e["score"] for e in extra] == [3.0, 4.0, 4.5, None, None]  # int then float: float
    assert [e["tags"] for e in extra] == [None, ["a", "b"], None, None, []]  # list<null> then list<string>
    # objects are JSON text: as structs, row 3 would read back with "year": None added
    assert [json.loads(e["source"]) if e["source"] else None for e in extra] == [
        None, None, {"site": "x", "year": 2024}, {"site": "y"}, None
    ]  # fmt: skip
    assert extra[4]["mixed"] == '[1, "one"]'

    schema = pq.read_schema(out / "train.parquet").field("extra_info").type
    types = {f.name: f.type for f in schema}
    assert types["source_id"] == pa.string() and types["score"] == pa.float64()
    assert types["tags"] == pa.list_(pa.string()) and types["source"] == pa.string()
    assert [r["reward_model"]["ground_truth"]["id"] for r in built_rows(out)] == [0, 1, 2, 3, 4]


def test_user_columns_never_take_our_keys_or_keys_the_reward_reads(tmp_path, capsys):
    rows = [
        {"prompt": "p", "references": ["r"], "split": "dev", "group_size": 99, "src_text": "Bonjour",
         "index": 5, "source_index": "mine", "source_id": "theirs", "id": "a"},
    ]  # fmt: skip
    rc, out = writing_rl(tmp_path, rows, "--test-size", "1")
    assert rc == 0
    (row,) = built_rows(out, "test")
    extra = row["extra_info"]
    assert extra["split"] == "test" and extra["index"] == 0 and extra["source_id"] == "a"
    assert "group_size" not in extra and "src_text" not in extra  # would change the group size / the task
    assert (extra["source_split"], extra["source_group_size"], extra["source_src_text"]) == ("dev", 99, "Bonjour")
    # a renamed column takes no name a user column already has
    assert (extra["source_index"], extra["source_source_index"]) == ("mine", 5)
    assert extra["source_source_id"] == "theirs"
    assert "source_source_index (your index)" in capsys.readouterr().out


def test_id_key_names_the_id_column_and_every_row_needs_one(tmp_path, capsys):
    rows = [
        {"uid": "q-1", "id": "not the id", "prompt": "p1"},
        {"uid": 2, "prompt": "p2"},
        {"prompt": "p3"},
        {"uid": {"nested": 1}, "prompt": "p4"},
    ]
    rejects = tmp_path / "rejects.jsonl"
    rc, out = writing_rl(tmp_path, rows, "--id-key", "uid", "--skip-bad", "--rejects", str(rejects))
    assert rc == 0
    extra = [r["extra_info"] for r in built_rows(out)]
    assert [e["source_id"] for e in extra] == ["q-1", "2"] and extra[0]["id"] == "not the id"
    reported = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["line"], r["field"]) for r in reported] == [(3, "uid"), (4, "uid")]
    assert "missing: expected the row's id (--id-key)" in reported[0]["reason"]
    assert "expected a row id, a string or an integer, got dict" in reported[1]["reason"]

    capsys.readouterr()
    rc, _ = writing_rl(tmp_path, rows, "--id-key", "qid")
    assert rc == 2
    assert "--id-key 'qid': no such column" in capsys.readouterr().err


def test_the_input_is_read_once_and_its_types_are_found_on_the_way(tmp_path, monkeypatch):
    from writing_rl.data import driver

    calls = {"iter_located": 0, "count_rows": 0}

    def counted(name):
        real = getattr(driver, name)

        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(driver, name, counted(name))
    rows = [  # --chunk-size 2: "n" is an integer in the first chunk built, text by the last one
        {"prompt": "p1", "n": 1, "m": 1},
        {"prompt": "p2", "n": 2, "m": 2.5},
        {"prompt": "p3", "n": "x", "m": "s"},
    ]
    rc, out = writing_rl(tmp_path, rows, "--chunk-size", "2")
    assert rc == 0 and calls == {"iter_located": 1, "count_rows": 0}
    extra = [r["extra_info"] for r in built_rows(out)]
    assert [e["n"] for e in extra] == ["1", "2", "x"]  # the earlier chunk's values as JSON text
    assert [e["m"] for e in extra] == ["1", "2.5", "s"]  # as given: 1 stays 1, not the 1.0 of a float column
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in.jsonl", "out", "train.parquet"]  # no spool left

    rc, out = writing_rl(tmp_path, rows, "--test-size", "1")
    assert rc == 0 and calls == {"iter_located": 2, "count_rows": 1}  # a split needs the count first


def test_an_id_key_no_row_has_is_the_error_even_after_a_bad_row(tmp_path, capsys):
    rows = [{"prompt": "", "uid": 9}, *({"prompt": f"p{i}", "uid": i} for i in range(3))]
    rc, out = writing_rl(tmp_path, rows, "--id-key", "qid")
    assert rc == 2 and "--id-key 'qid': no such column" in capsys.readouterr().err
    assert not out.exists()  # nothing made for a build that fails before writing
    rc, _ = writing_rl(tmp_path, rows, "--id-key", "uid")
    assert rc == 2 and "line 1 rejected: field 'prompt'" in capsys.readouterr().err


def test_an_id_column_found_by_its_name_rejects_no_row(tmp_path):
    rows = [{"id": 3.5, "prompt": "a"}, {"prompt": "b"}, {"id": {"k": 1}, "prompt": "c"}]
    rc, out = writing_rl(tmp_path, rows)
    assert rc == 0
    assert [r["extra_info"]["source_id"] for r in built_rows(out)] == ["3.5", None, '{"k": 1}']


def test_without_an_id_column_there_is_no_source_id(tmp_path):
    rc, out = writing_rl(tmp_path, [{"prompt": "p", "domain": "d"}])
    assert rc == 0
    (row,) = built_rows(out)
    assert "source_id" not in row["extra_info"] and row["extra_info"]["domain"] == "d"


def test_repeated_ids_are_reported(tmp_path, capsys):
    rc, _ = writing_rl(tmp_path, [{"id": 1, "prompt": "a"}, {"id": 2, "prompt": "b"}, {"id": 1, "prompt": "c"}])
    assert rc == 0
    assert "1 rows repeat the source_id of an earlier row (first: '1')" in capsys.readouterr().out


GROUP = {"src_text": "Bonjour", "src_lang": "fr", "trg_lang": "en", "mt_texts": ["Hello", "Hi there", "Good day"],
         "scores": [9, 5, 1], "analysis": "A is the most natural."}  # fmt: skip
PAIR = {"prompt": "Write a line about rain.", "chosen": "Rain hums on roofs.", "rejected": "It rained."}
SUBCOMMANDS = {
    "writing-rl": {"prompt": "Write a poem.", "references": ["r"]},
    "prompts": {"prompt": "Write a poem."},
    "gqm-rl": GROUP,
    "gqm-sft": GROUP,
    "pref-rl": PAIR,
    "pref-sft": PAIR,
}


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_builder_keeps_the_id_and_columns_on_every_output_row(tmp_path, command):
    rows = [{**SUBCOMMANDS[command], "id": f"u{i}", "domain": f"d{i}", "data_source": "mine"} for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    assert build([command, "--quiet", "--input", source, "--output", str(out), "--test-size", "1"]) == 0
    written = built_rows(out) + built_rows(out, "test")
    assert len(written) >= 3  # augmented builders write more than one row per input row
    for row in written:
        extra = row["extra_info"]
        assert (extra["source_id"], extra["domain"]) == (f"u{extra['index']}", f"d{extra['index']}")
        assert extra["split"] in ("train", "test")
    if command in ("writing-rl", "prompts"):  # these take the row's own data_source
        assert {r["data_source"] for r in written} == {"mine"} and "data_source" not in written[0]["extra_info"]
    else:  # the others set their own (or have none): the user's is kept
        assert {r["extra_info"]["data_source"] for r in written} == {"mine"}


def test_columns_of_a_parquet_input_keep_its_types(tmp_path):
    table = pa.table(
        {
            "prompt": ["a", "b", "c"],
            "index": pa.array([10, 11, None], pa.int64()),
            "meta": pa.array([{"k": 1}, None, {"k": 3}], pa.struct([("k", pa.int64())])),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / "out"
    args = ["writing-rl", "--quiet", "--input", str(tmp_path / "in.parquet"), "--output", str(out), "--chunk-size", "2"]
    assert build(args) == 0
    extra = [r["extra_info"] for r in built_rows(out)]
    assert [e["source_id"] for e in extra] == [10, 11, None]  # the 'index' column is the id here
    assert [e["meta"] for e in extra] == [{"k": 1}, None, {"k": 3}]


# ---------------------------------------------------------------- criteria


def test_writingbench_checklists_are_rendered_for_the_judge(tmp_path):
    rows = [
        {"prompt": "Write an introduction.", "criteria": CHECKLIST},
        {"prompt": "Write a toast.", "criteria": json.dumps(CHECKLIST)},  # JSON text, as in a CSV cell
        {"prompt": "Write a poem.", "criteria": ["Vivid", "Short"]},
        {"prompt": "Write a note.", "criteria": "Be kind."},
    ]
    rc, out = writing_rl(tmp_path, rows)
    assert rc == 0
    criteria = [r["reward_model"]["ground_truth"]["criteria"] for r in built_rows(out)]
    assert criteria[0].splitlines() == criteria[1].splitlines() == CHECKLIST_TEXT
    for entry in CHECKLIST:  # every name, description and band (key and text) is in what the judge reads
        bands = [f"{key}: {text}" for key, text in entry.items() if key[0].isdigit()]
        texts = [entry["name"], entry.get("criteria_description") or entry["description"], *bands]
        assert all(text in criteria[0] for text in texts)
    assert criteria[2:] == ["- Vivid\n- Short", "Be kind."]


def test_a_checklist_csv_cell_is_rendered(tmp_path):
    source = tmp_path / "in.csv"
    cell = json.dumps(CHECKLIST).replace('"', '""')
    source.write_text(f'id,prompt,checklist\n7,Write an introduction.,"{cell}"\n', encoding="utf-8")
    out = tmp_path / "out"
    args = ["writing-rl", "--quiet", "--input", str(source), "--output", str(out), "--criteria-key", "checklist"]
    assert build(args) == 0
    (row,) = built_rows(out)
    assert row["reward_model"]["ground_truth"]["criteria"].splitlines() == CHECKLIST_TEXT
    assert row["extra_info"]["source_id"] == "7"


def test_training_renders_checklists_that_reach_it_unrendered():
    # a published row read back from parquet: a numpy array of dicts, bands absent from an entry as None
    as_read = np.array([{**CHECKLIST[0], "5-6": None}, {**CHECKLIST[1], "1-2": None}], dtype=object)
    assert format_criteria(as_read).splitlines() == CHECKLIST_TEXT
    assert format_criteria(CHECKLIST[1]) == "\n".join(CHECKLIST_TEXT[3:])  # one entry on its own
    task = read_writing_rl_task({"prompt": "Write.", "target": ["ref"], "criteria": CHECKLIST, "id": 0})
    user = pairwise_messages(task.prompt, "a", "b", task.criteria)[-1]["content"]
    assert "[Evaluation criteria]\n" + "\n".join(CHECKLIST_TEXT) in user


@pytest.mark.parametrize(
    "criteria, expected",
    [
        ([{"title": "no name", "criteria_description": "d"}], "item 0: expected a WritingBench checklist entry"),
        ([{"name": "Tone"}], "non-empty string 'name' and 'criteria_description' (or 'description')"),
        ([{"name": "Tone", "description": 3}], "item 0: expected a WritingBench checklist entry"),
        ([CHECKLIST[0], {"name": "Tone", "description": "d", "1-2": 5}], "item 1 ('Tone'): score band '1-2' must be a string, got int"),
        (["Vivid", 3], "item 1: expected a string or a {name, criteria_description} entry, got int 3"),
        (7, "expected a string, a list of strings, or a list of {name, criteria_description, score bands}"),
    ],
)  # fmt: skip
def test_a_malformed_criterion_is_a_rejected_row(tmp_path, capsys, criteria, expected):
    rows = [{"prompt": "fine", "criteria": "ok"}, {"prompt": "p", "criteria": criteria}]
    rc, out = writing_rl(tmp_path, rows)
    assert rc == 2 and not (out / "train.parquet").exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "line 2 rejected: field 'criteria': " in line and expected in line


def test_a_writingbench_row_builds_as_it_is(tmp_path, capsys):
    row = {"index": 16, "domain1": "Academic & Engineering", "domain2": "Paper Outline", "lang": "en",
           "query": "Write the introduction of a survey.", "checklist": CHECKLIST}  # fmt: skip
    rc, out = writing_rl(tmp_path, [row], "--prompt-key", "query", "--criteria-key", "checklist")
    assert rc == 0
    assert "kept in extra_info: source_id (your index), domain1, domain2, lang" in capsys.readouterr().out
    (built,) = built_rows(out)
    assert built["prompt"] == [{"role": "user", "content": row["query"]}]
    assert built["reward_model"]["ground_truth"]["criteria"].splitlines() == CHECKLIST_TEXT
    extra = built["extra_info"]
    assert (extra["source_id"], extra["domain1"], extra["domain2"], extra["lang"]) == (16, *list(row.values())[1:4])
