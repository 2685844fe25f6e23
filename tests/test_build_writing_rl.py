"""`build_parquet.py writing-rl`: raw prompts -> Writing-RL rows verl and our pairwise reward read."""

import json

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from reward_fns.pairwise import read_writing_rl_task


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


ROWS = [
    {
        "prompt": f"Write piece {i}.",
        "criteria": ["Vivid", "Short"] if i % 2 else "Be kind.",
        "references": [f"easy {i}", f"hard {i}"],
    }
    for i in range(10)
]


def run(tmp_path, rows, *flags, name="in.jsonl"):
    source = write_jsonl(tmp_path / name, rows)
    out = tmp_path / "out"
    return build(["writing-rl", "--quiet", "--input", str(source), "--output", str(out), *flags]), out


def test_rows_have_writing_rl_ground_truth_and_dense_ids(tmp_path):
    rc, out = run(tmp_path, ROWS, "--test-size", "3", "--seed", "1")
    assert rc == 0
    train, test = (pq.read_table(out / f"{s}.parquet").to_pylist() for s in ("train", "test"))
    assert len(train) == 7 and len(test) == 3
    rows = sorted(train + test, key=lambda r: r["extra_info"]["index"])
    assert [r["reward_model"]["ground_truth"]["id"] for r in rows] == list(range(10))
    for row in rows:
        truth = row["reward_model"]["ground_truth"]
        assert row["extra_info"]["index"] == truth["id"]
        assert row["prompt"] == [{"role": "user", "content": truth["prompt"]}]
        assert row["data_source"] == "writing" and row["reward_model"]["style"] == "model"
        task = read_writing_rl_task(truth)  # what the pairwise reward will read
        assert task.references == (f"easy {truth['id']}", f"hard {truth['id']}")
    assert rows[1]["reward_model"]["ground_truth"]["criteria"] == "- Vivid\n- Short"
    assert rows[0]["reward_model"]["ground_truth"]["criteria"] == "Be kind."
    assert {r["extra_info"]["split"] for r in test} == {"test"}


def test_split_is_deterministic_per_seed(tmp_path):
    def test_ids(seed):
        rc, out = run(tmp_path, ROWS, "--test-size", "0.3", "--seed", str(seed))
        assert rc == 0
        return sorted(r["extra_info"]["index"] for r in pq.read_table(out / "test.parquet").to_pylist())

    assert test_ids(7) == test_ids(7)
    assert len(test_ids(7)) == 3
    assert any(test_ids(7) != test_ids(s) for s in (1, 2, 3))


def test_unicode_and_optional_fields(tmp_path, capsys):
    rows = [{"prompt": "写一首关于秋天的诗", "references": "秋风起"}, {"prompt": "No refs, no criteria"}]
    rc, out = run(tmp_path, rows, "--system-prompt", "You are a poet.")
    assert rc == 0
    report = capsys.readouterr().out
    assert "references per row: none 1, one 1, several 0" in report
    assert "1 rows have no reference: fine for BRPO / group ranking, but the pairwise reward" in report
    first, second = pq.read_table(out / "train.parquet").to_pylist()
    assert first["reward_model"]["ground_truth"]["target"] == ["秋风起"]
    assert first["prompt"][0] == {"role": "system", "content": "You are a poet."}
    assert (
        second["reward_model"]["ground_truth"]["target"] == []
        and second["reward_model"]["ground_truth"]["criteria"] is None
    )


def test_bad_row_stops_the_build_naming_row_and_field_and_writes_nothing(tmp_path, capsys):
    rows = [*ROWS[:3], {"prompt": "ok", "references": ["fine", 42]}, *ROWS[3:]]
    rc, out = run(tmp_path, rows, "--rejects", str(tmp_path / "rejects.jsonl"))
    assert rc == 2
    err = capsys.readouterr().err
    assert "line 4 rejected" in err and "field 'references'" in err and "--skip-bad" in err
    assert not (out / "train.parquet").exists()
    assert list(out.glob("*.tmp")) == []
    (reject,) = [json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text().splitlines()]
    assert reject["row"] == 3 and reject["field"] == "references"


def test_skip_bad_keeps_good_rows_with_dense_ids_and_reports_rejects(tmp_path, capsys):
    rows = [ROWS[0], {"prompt": ""}, ROWS[1], {"references": ["x"]}, ROWS[2]]
    rc, out = run(tmp_path, rows, "--skip-bad", "--rejects", str(tmp_path / "rejects.jsonl"))
    assert rc == 0
    written = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["reward_model"]["ground_truth"]["id"] for r in written] == [0, 1, 2]
    assert [r["reward_model"]["ground_truth"]["prompt"] for r in written] == [ROWS[i]["prompt"] for i in range(3)]
    rejects = [json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text().splitlines()]
    assert [(r["row"], r["field"]) for r in rejects] == [(1, "prompt"), (3, "prompt")]
    assert "read 5 rows: accepted 3, rejected 2" in capsys.readouterr().out


def test_a_failed_rebuild_leaves_the_previous_output_intact(tmp_path):
    rc, out = run(tmp_path, ROWS)
    assert rc == 0
    before = (out / "train.parquet").read_bytes()
    rc, _ = run(tmp_path, [*ROWS, {"prompt": None}])
    assert rc == 2
    assert (out / "train.parquet").read_bytes() == before


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json", "hf"])
def test_other_input_formats(tmp_path, fmt):
    import pandas as pd

    rows = [{"prompt": r["prompt"], "references": r["references"]} for r in ROWS[:4]]
    if fmt == "parquet":
        path = tmp_path / "in.parquet"
        pd.DataFrame(rows).to_parquet(path)
    elif fmt == "csv":
        path = tmp_path / "in.csv"
        pd.DataFrame([{**r, "references": json.dumps(r["references"])} for r in rows]).to_csv(path, index=False)
    elif fmt == "json":
        path = tmp_path / "in.json"
        path.write_text(json.dumps(rows))
    else:
        from datasets import Dataset

        path = tmp_path / "in_hf"
        Dataset.from_list(rows).save_to_disk(str(path))
    out = tmp_path / "out"
    assert build(["writing-rl", "--quiet", "--input", str(path), "--output", str(out)]) == 0
    written = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["reward_model"]["ground_truth"]["target"] for r in written] == [r["references"] for r in rows]
