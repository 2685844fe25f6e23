"""Group rewards offline: `writing-rl score` with brpo / grrm_mt_grpo through verl's RewardLoopWorker,
GroupRewardManager and the Ray group collector (each row's responses form one group)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from writing_rl.tools.cli import main as cli

from judge_server import quality

TOKENS_PER_REPLY = 2  # the scripted judge reports usage.total_tokens=2 per reply


def write_rows(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_responses(path, pairs):
    path.write_text("".join(json.dumps({"index": i, "response": r}) + "\n" for i, r in pairs))
    return path


def scores(out):
    return [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]


def test_group_ranking_scores_mt_groups(ray_cluster, judge_server, tokenizer_dir, tmp_path):
    server = judge_server()
    rows = [
        {
            "data_source": "wmt",
            "prompt": [{"role": "user", "content": f"Translate into English: Satz {i}"}],
            "reward_model": {"ground_truth": "", "style": "model"},
            "extra_info": {"index": i, "src_text": f"Satz {i}", "lang_pair": "de-en", "split": "train"},
        }
        for i in range(2)
    ]
    responses = [(0, "good sentence"), (0, "bad sentence"), (0, "good sentence"), (1, "plain"), (1, "good good")]
    out = tmp_path / "out"
    rc = cli(
        [
            "score",
            "--config-name",
            "grrm_mt_grpo",
            "--data",
            str(write_rows(tmp_path / "rows.parquet", rows)),
            "--responses",
            str(write_responses(tmp_path / "r.jsonl", responses)),
            "--out",
            str(out),
            "--tokenizer",
            str(tokenizer_dir),
            "--judge-url",
            server.base_url,
            "--judge-model",
            "grrm",
        ]
    )
    assert rc == 0
    records = scores(out)
    assert [r["rank_score"] for r in records] == [6, 4, 6, 5, 7]
    assert [r["reward"] for r in records] == pytest.approx([0.6, 0.4, 0.6, 0.5, 0.7])
    assert [r["group_size"] for r in records] == [3, 3, 3, 2, 2]
    assert [r["num_candidates"] for r in records] == [2, 2, 2, 2, 2]
    assert len(server.requests) == 2  # one ranking call per group
    # Each group's one call is counted once (on its first member): the sums are what the judge served.
    assert [r["judge_calls"] for r in records] == [1, 0, 0, 1, 0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge_calls"] == len(server.requests) == 2
    assert sum(r["judge_tokens"] for r in records) == server.count * TOKENS_PER_REPLY
    assert "from German into English" in server.requests[0]["messages"][-1]["content"]


def test_brpo_scores_each_group_against_one_reference(ray_cluster, judge_server, tokenizer_dir, tmp_path):
    server = judge_server()
    rows = [
        {
            "data_source": "writing",
            "prompt": [{"role": "user", "content": "Write a toast."}],
            "reward_model": {"ground_truth": {"prompt": "Write a toast."}, "style": "model"},
            "extra_info": {"index": 0},
        }
    ]
    texts = ["good toast", "bad toast", "plain toast", "good good toast"]
    out = tmp_path / "out"
    rc = cli(
        [
            "score",
            "--config-name",
            "brpo",
            "--data",
            str(write_rows(tmp_path / "rows.parquet", rows)),
            "--responses",
            str(write_responses(tmp_path / "r.jsonl", [(0, t) for t in texts])),
            "--out",
            str(out),
            "--tokenizer",
            str(tokenizer_dir),
            "--judge-url",
            server.base_url,
            "--judge-model",
            "pairwise-genrm",
        ]
    )
    assert rc == 0
    records = scores(out)
    (reference,) = [t for t, r in zip(texts, records) if r["is_reference"]]
    for text, record in zip(texts, records):
        diff = quality(text) - quality(reference)
        assert record["reward"] == (0.0 if text == reference else float((diff > 0) - (diff < 0)))
    assert len(server.requests) == 2 * (len(texts) - 1)
    assert [r["judge_calls"] for r in records] == [0 if r["is_reference"] else 2 for r in records]
    assert json.loads((out / "summary.json").read_text())["judge_calls"] == len(server.requests)
    assert sum(r["judge_tokens"] for r in records) == server.count * TOKENS_PER_REPLY
    transcripts = [json.loads(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]
    assert [len(t["calls"]) for t in transcripts] == [r["judge_calls"] for r in records]
