"""``writing-rl score``: judge saved responses offline, through the same manager and judge as training.

The samples go through verl's own ``RewardLoopWorker`` (run in this process, no Ray needed), which
loads the reward manager (``ParallelRewardManager`` or ``GroupRewardManager``) and the reward fn from the
composed config exactly as a training run does. Outputs, each written to a temp file and renamed when complete:

- ``scores.jsonl``: one line per sample: its key, reward and every extra-info value;
- ``transcripts.jsonl``: the judge requests and replies of each sample;
- ``summary.json``: counts, means, error rates, latency percentiles and throughput.

While it runs, every finished chunk of samples is appended to ``.score_progress.jsonl`` in the output
directory (flushed and fsynced): a run stopped by a judge failure, Ctrl-C or a kill keeps what it
scored, and the same command resumes it, judging only the samples not yet scored. The file starts
with a fingerprint of the inputs (data path, size and mtime; a hash of the responses; config name,
overrides and tokenizer; where the judge runs may change): progress of other inputs is refused rather
than mixed in, unless ``restart`` discards it. It is removed once the final files are written.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import ray

from hydra_configs import DEFAULT_OVERLAY
from writing_rl.files import atomic_write_text
from writing_rl.offline.files import MatchedResponse, match_responses
from writing_rl.reward_loop import registry
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.reward_loop.results import FAILURE_KEYS

PROGRESS = ".score_progress.jsonl"
_INFRASTRUCTURE = tuple(
    f"reward.reward_kwargs.judge.{key}="
    for key in (
        "base_url",
        "api_key_env",
        "max_concurrency",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "retry_after_max_s",
    )
)


class ScoreInterrupted(RuntimeError):
    """Scoring stopped part way; ``note`` says what was kept and how to resume."""

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


def load_rows(path: str | Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    for number, row in enumerate(rows):
        for field in ("prompt", "reward_model"):
            if row.get(field) is None:
                raise ValueError(f"{path}: row {number} has no '{field}' field; expected verl RL rows")
    return rows


def with_group_sizes(rows: list[dict], samples: list[MatchedResponse]) -> list[dict]:
    """Rows whose ``extra_info.group_size`` is the number of responses given for them: group rewards
    (BRPO, group ranking) treat the responses to one row as one group."""
    counts = Counter(s.row for s in samples)
    return [
        {**row, "extra_info": {**(row.get("extra_info") or {}), "group_size": counts[i]}} for i, row in enumerate(rows)
    ]


def score_config(config_name: str, overrides: Sequence[str], tokenizer: str | None, config_dir: str | None = None):
    from omegaconf import OmegaConf, open_dict

    from writing_rl.offline.compose import compose
    from writing_rl.reward_loop.reward_fn import load_reward_fn

    config = compose(config_name, overrides, config_dir)
    load_reward_fn(config)  # a method loaded from a file registers here, so its extras' sections are known
    with open_dict(config):
        if tokenizer:
            config.actor_rollout_ref.model.path = tokenizer
        if not config.actor_rollout_ref.model.get("path") or config.actor_rollout_ref.model.path.startswith("~"):
            raise ValueError("pass --tokenizer DIR (the policy's tokenizer: responses are tokenized as in training)")
        config.reward.num_workers = 1  # one in-process worker holds the whole judge concurrency budget
        config.reward.reward_kwargs.keep_transcripts = True
        # Scoring reports the parse-error rate (and why it is high) instead of stopping at it.
        config.reward.reward_kwargs.max_parse_error_rate = 1.0
        if not any("on_judge_error=" in override for override in overrides):
            # Offline scores are for reading: a judge call that failed stops the run (a rerun resumes) rather
            # than being paid a loss as in training.
            config.reward.reward_kwargs.on_judge_error = "raise"
        for name, extra in registry.extras().items():  # (never a training run's state: the curriculum's levels)
            for key, value in getattr(extra, "offline", {}).items():
                OmegaConf.update(config, f"reward.reward_kwargs.{name}.{key}", value, force_add=True)
    if not OmegaConf.select(config, "reward.reward_model.enable", default=False):
        # A bad judge setting or an unset API key variable fails here, before Ray and the worker start.
        ManagerConfig.from_verl(config).judge.api_key()
    return config


def row_chunks(samples: list[MatchedResponse], batch_size: int) -> list[list[int]]:
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


def fingerprint(data: str, responses: str, config_name: str, overrides: Sequence[str], tokenizer: str | None) -> str:
    """What a partial run must share with this one to be resumed (where the judge is may change)."""
    overrides = [o for o in overrides if not o.startswith(_INFRASTRUCTURE)]
    stat = os.stat(data)
    digest = hashlib.sha256(Path(responses).read_bytes()).hexdigest()
    what = [str(Path(data).resolve()), stat.st_size, stat.st_mtime_ns, digest, config_name, list(overrides), tokenizer]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


class ProgressFile:
    """``OUT/.score_progress.jsonl``: the fingerprint, then one line per scored sample. The file is
    written from the first finished chunk on, so a run that scored nothing leaves nothing to resume."""

    def __init__(self, out_dir: Path, key: str, restart: bool = False):
        self.path = out_dir / PROGRESS
        self.key = key
        self.done: dict[int, dict] = {}
        if restart:
            self.path.unlink(missing_ok=True)
        elif self.path.exists():
            self._load()

    def _load(self) -> None:
        head, done = self._read()
        if head.get("fingerprint") == self.key:
            self.done = done
        elif done:
            raise ValueError(
                f"{self.path.parent} holds {len(done)} samples scored from other data, responses or settings: "
                "pass --restart to discard them, or use another --out"
            )
        else:  # nothing was scored with those other inputs: nothing to keep
            self.path.unlink()

    def _read(self) -> tuple[dict, dict[int, dict]]:
        head: dict = {}
        done: dict[int, dict] = {}
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines()):
            try:
                record = json.loads(line)
            except ValueError:  # the last line of a killed run may be cut short: that sample is redone
                continue
            if number == 0:
                head = record if isinstance(record, dict) else {}
            else:
                done[record["sample"]] = record["output"]
        return head, done

    def add(self, outputs: dict[int, dict]) -> None:
        lines = [json.dumps({"sample": i, "output": o}, ensure_ascii=False) + "\n" for i, o in outputs.items()]
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lines.insert(0, json.dumps({"fingerprint": self.key}) + "\n")
        with open(self.path, "a", encoding="utf-8") as f:
            f.writelines(lines)
            f.flush()
            os.fsync(f.fileno())
        self.done.update(outputs)

    def note(self, total: int) -> str:
        return (
            f"{len(self.done)} of {total} samples were scored and kept in {self.path}: the same command resumes "
            f"and judges only the other {total - len(self.done)}"
        )


async def _score_all(
    worker, rows: list[dict], samples: list[MatchedResponse], batch_size: int, progress, kept: ProgressFile
) -> list[dict]:
    from writing_rl.reward_loop.batch import build_reward_batch

    run = uuid.uuid4().hex[:8]  # group ids unique to this run, so no group meets one of an earlier run
    chunks = [c for c in row_chunks(samples, batch_size) if not all(i in kept.done for i in c)]
    progress(len(kept.done), len(samples))
    try:
        for chunk in chunks:
            batch = build_reward_batch(
                worker.input_tokenizer,
                [rows[samples[i].row] for i in chunk],
                [samples[i].response for i in chunk],
                uids=[f"{run}:{samples[i].key}" for i in chunk],
            )
            kept.add(dict(zip(chunk, await worker.compute_score_batch(batch))))
            progress(len(kept.done), len(samples))
    finally:
        await worker.reward_manager.scoring.judge.close()
    return [kept.done[i] for i in range(len(samples))]


def summarize(records: list[dict], wall_s: float, resumed: int = 0) -> dict[str, Any]:
    """``resumed``: samples scored by an earlier, stopped run (not counted in this run's throughput)."""
    rewards = np.array([r["reward"] for r in records], dtype=float)
    scored_now = len(records) - resumed
    summary: dict[str, Any] = {
        "samples": len(records),
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std()),
        "wall_s": round(wall_s, 3),
        "samples_per_s": round(scored_now / wall_s, 2) if wall_s > 0 else None,
    }
    if resumed:
        summary["resumed_samples"] = resumed
    for key in ("win", "tie", "loss"):
        if key in records[0]:
            summary[f"{key}_rate"] = float(np.mean([r[key] for r in records]))
    for key in FAILURE_KEYS:
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
    config_name: str = DEFAULT_OVERLAY,
    overrides: Sequence[str] = (),
    config_dir: str | None = None,
    batch_size: int = 256,
    progress=lambda done, total: None,
    restart: bool = False,
) -> dict[str, Any]:
    """Score every response; ``restart`` discards the progress a stopped run left in ``out``."""
    from verl.experimental.reward_loop import RewardLoopWorker

    config = score_config(config_name, overrides, tokenizer, config_dir)
    rows = load_rows(data)
    samples = match_responses(rows, responses)
    rows = with_group_sizes(rows, samples)
    out_dir = Path(out)
    kept = ProgressFile(out_dir, fingerprint(data, responses, config_name, overrides, tokenizer), restart)
    resumed = len(kept.done)
    # Group rewards meet in a Ray actor (reward_loop/group/collector.py): start a local Ray if none is running.
    own_ray = config.reward.reward_manager.name == "GroupRewardManager" and not ray.is_initialized()
    if own_ray:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        worker = RewardLoopWorker(config)  # verl's worker: loads our manager, reward fn and the tokenizer
        start = time.perf_counter()
        outputs = asyncio.run(_score_all(worker, rows, samples, batch_size, progress, kept))
        wall_s = time.perf_counter() - start
    except (Exception, KeyboardInterrupt) as err:
        if not kept.done:
            raise
        raise ScoreInterrupted(kept.note(len(samples))) from err
    finally:
        if own_ray:
            ray.shutdown()

    records, transcripts = [], []
    for sample, output in zip(samples, outputs):
        head = {"key": sample.key, "row": sample.row}
        records.append({**head, "reward": output["reward_score"], **output["reward_extra_info"]})
        transcripts.append({**head, "calls": output.get("judge_transcripts", [])})
    summary = summarize(records, wall_s, resumed)

    atomic_write_text(out_dir / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    atomic_write_text(
        out_dir / "transcripts.jsonl", "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in transcripts)
    )
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    kept.path.unlink(missing_ok=True)
    return {"summary": summary, "records": records}
