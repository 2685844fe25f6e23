"""``writing-rl score``: judge saved responses offline, through the same manager and judge as training.

The samples go through verl's own ``RewardLoopWorker`` (run in this process, no Ray needed), which
loads ``ParallelRewardManager`` and the reward fn from the composed config exactly as a training
run does. Outputs, each written to a temp file and renamed when complete:

- ``scores.jsonl``: one line per sample: its key, reward and every extra-info value;
- ``transcripts.jsonl``: the judge requests and replies of each sample;
- ``summary.json``: counts, means, error rates, latency percentiles and throughput.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import ray

from .io import atomic_write_text, read_jsonl

RESPONSE_KEYS = ("id", "index")


@dataclass(frozen=True)
class Sample:
    row: int  # position in the data file
    key: str  # "id=3" or "index=3": what the response line named
    response: str


def load_rows(path: str | Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    for number, row in enumerate(rows):
        for field in ("prompt", "reward_model"):
            if row.get(field) is None:
                raise ValueError(f"{path}: row {number} has no '{field}' field; expected verl RL rows")
    return rows


def match_responses(rows: list[dict], responses_path: str | Path) -> list[Sample]:
    """Pair each response line with its row: by ``id`` (ground_truth.id) or ``index`` (extra_info.index,
    else the row's position)."""
    by_id, by_index = {}, {}
    for position, row in enumerate(rows):
        truth = (row.get("reward_model") or {}).get("ground_truth")
        if isinstance(truth, dict) and truth.get("id") is not None:
            by_id[str(truth["id"])] = position
        index = (row.get("extra_info") or {}).get("index")
        by_index[str(position if index is None else index)] = position

    samples = []
    for line_number, record in read_jsonl(responses_path):
        where = f"{responses_path}:{line_number}"
        if not isinstance(record.get("response"), str):
            raise ValueError(f"{where}: expected a string field 'response'")
        field = next((k for k in RESPONSE_KEYS if record.get(k) is not None), None)
        if field is None:
            raise ValueError(f"{where}: name the row with 'id' (ground_truth.id) or 'index' (extra_info.index)")
        lookup = by_id if field == "id" else by_index
        value = str(record[field])
        if value not in lookup:
            raise ValueError(f"{where}: no row in the data has {field}={value}")
        samples.append(Sample(row=lookup[value], key=f"{field}={value}", response=record["response"]))
    if not samples:
        raise ValueError(f"{responses_path}: no responses")
    return samples


def with_group_sizes(rows: list[dict], samples: list[Sample]) -> list[dict]:
    """Rows whose ``extra_info.group_size`` is the number of responses given for them: group rewards
    (BRPO, group ranking) treat the responses to one row as one group."""
    counts = Counter(s.row for s in samples)
    return [
        {**row, "extra_info": {**(row.get("extra_info") or {}), "group_size": counts[i]}} for i, row in enumerate(rows)
    ]


def score_config(config_name: str, overrides: Sequence[str], tokenizer: str | None, config_dir: str | None = None):
    from omegaconf import open_dict

    from .verl_config import compose

    config = compose(config_name, overrides, config_dir)
    with open_dict(config):
        if tokenizer:
            config.actor_rollout_ref.model.path = tokenizer
        if not config.actor_rollout_ref.model.get("path") or config.actor_rollout_ref.model.path.startswith("~"):
            raise ValueError("pass --tokenizer DIR (the policy's tokenizer: responses are tokenized as in training)")
        config.reward.num_workers = 1  # one in-process worker holds the whole judge concurrency budget
        config.reward.reward_kwargs.keep_transcripts = True
        if "curriculum" in config.reward.reward_kwargs:
            # Offline scoring judges against each row's first reference and never moves a training run's levels.
            config.reward.reward_kwargs.curriculum.enable = False
    return config


def row_chunks(samples: list[Sample], batch_size: int) -> list[list[int]]:
    """Sample indices in chunks of about ``batch_size`` that never split the samples of one row (a
    group reward needs the whole group in flight at once)."""
    by_row: dict[int, list[int]] = {}
    for index, sample in enumerate(samples):
        by_row.setdefault(sample.row, []).append(index)
    chunks: list[list[int]] = [[]]
    for indices in by_row.values():
        if chunks[-1] and len(chunks[-1]) + len(indices) > batch_size:
            chunks.append([])
        chunks[-1].extend(indices)
    return chunks


async def _score_all(worker, rows: list[dict], samples: list[Sample], batch_size: int, progress) -> list[dict]:
    from .batch import build_reward_batch

    run = uuid.uuid4().hex[:8]  # group ids unique to this run, so no group meets one of an earlier run
    outputs: list[dict | None] = [None] * len(samples)
    done = 0
    for chunk in row_chunks(samples, batch_size):
        batch = build_reward_batch(
            worker.input_tokenizer,
            [rows[samples[i].row] for i in chunk],
            [samples[i].response for i in chunk],
            uids=[f"{run}:{samples[i].key}" for i in chunk],
        )
        for index, output in zip(chunk, await worker.compute_score_batch(batch)):
            outputs[index] = output
        done += len(chunk)
        progress(done, len(samples))
    await worker.reward_manager.judge.close()
    return outputs


def summarize(records: list[dict], wall_s: float) -> dict[str, Any]:
    rewards = np.array([r["reward"] for r in records], dtype=float)
    summary: dict[str, Any] = {
        "samples": len(records),
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std()),
        "wall_s": round(wall_s, 3),
        "samples_per_s": round(len(records) / wall_s, 2) if wall_s > 0 else None,
    }
    for key in ("win", "tie", "loss"):
        if key in records[0]:
            summary[f"{key}_rate"] = float(np.mean([r[key] for r in records]))
    for key in ("judge_error", "parse_error", "format_error"):
        summary[f"{key}_rate"] = float(np.mean([r.get(key, 0) for r in records]))
    judged_both = [r["position_consistent"] for r in records if r.get("position_consistent", -1) >= 0]
    if judged_both:
        summary["position_consistency"] = float(np.mean(judged_both))
    latencies = [r["judge_latency_s"] for r in records if r.get("judge_calls")]
    if latencies:
        p50, p95 = np.percentile(latencies, [50, 95])
        summary["judge_latency_p50_s"], summary["judge_latency_p95_s"] = round(p50, 4), round(p95, 4)
    summary["judge_calls"] = int(sum(r.get("judge_calls", 0) for r in records))
    return summary


def run_score(
    data: str,
    responses: str,
    out: str,
    tokenizer: str | None = None,
    config_name: str = "writing_rl",
    overrides: Sequence[str] = (),
    config_dir: str | None = None,
    batch_size: int = 256,
    progress=lambda done, total: None,
) -> dict[str, Any]:
    from verl.experimental.reward_loop import RewardLoopWorker

    config = score_config(config_name, overrides, tokenizer, config_dir)
    rows = load_rows(data)
    samples = match_responses(rows, responses)
    rows = with_group_sizes(rows, samples)
    # Group rewards meet in a Ray actor (writing_rl/groups.py): start a local Ray if none is running.
    own_ray = config.reward.reward_manager.name == "GroupRewardManager" and not ray.is_initialized()
    if own_ray:
        ray.init(include_dashboard=False, log_to_driver=False)
    try:
        worker = RewardLoopWorker(config)  # verl's worker: loads our manager, reward fn and the tokenizer
        start = time.perf_counter()
        outputs = asyncio.run(_score_all(worker, rows, samples, batch_size, progress))
        wall_s = time.perf_counter() - start
    finally:
        if own_ray:
            ray.shutdown()

    records, transcripts = [], []
    for sample, output in zip(samples, outputs):
        head = {"key": sample.key, "row": sample.row}
        records.append({**head, "reward": output["reward_score"], **output["reward_extra_info"]})
        transcripts.append({**head, "calls": output.get("judge_transcripts", [])})
    summary = summarize(records, wall_s)

    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    atomic_write_text(
        out_dir / "transcripts.jsonl", "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in transcripts)
    )
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return {"summary": summary, "records": records}
