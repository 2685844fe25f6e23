"""scripts/quickstart.sh end to end, as a user runs it (minus creating .venv): build data, make SmolLM2-135M-Instruct
ready (`writing-rl model smollm2`), serve it as the judge with `writing-rl serve-judge --engine hf`, score the bundled
rollouts through verl's reward loop worker and the server (tokenized with SmolLM2's own chat template), report how
many of its replies could be read and its position bias, stop the server, then train with verl's trainer and the
stand-in judge until the policy has learned its taste: the quickstart's 20 steps in the release suite, 12 in CI
(which learn as clearly: 17 -> 62 e's per rollout, z = 65). The server joins this session's Ray (RAY_ADDRESS) instead of starting its own, which also
shows its replicas are gone afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from writing_rl.tools.quickstart_report import one_line

from conftest import RELEASE_SUITE

REPO = Path(__file__).resolve().parent.parent
TRAIN_STEPS = 20 if os.environ.get(RELEASE_SUITE) == "1" else 12


def example_blocks(stdout: str) -> list[list[str]]:
    """The lines of each judged-example block: its header, its indented lines and the parse-error line."""
    blocks: list[list[str]] = []
    inside = False
    for line in stdout.splitlines():
        if line.startswith("-- one judged example"):
            blocks.append([line])
            inside = True
        elif inside and line.startswith(("   ", "-- parse errors", "-- readable judge replies")):
            blocks[-1].append(line)
        else:
            inside = False
    return blocks


def test_quickstart_serves_smollm2_as_the_judge_and_scores_through_verl(ray_cluster, tmp_path):
    cpus_before = ray_cluster.available_resources().get("CPU", 0.0)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SKIP_VENV": "1",
        "DATA_DIR": str(tmp_path / "data"),
        "OUT_DIR": str(tmp_path / "runs"),
        "CACHE_DIR": str(tmp_path / "cache"),
        "RAY_ADDRESS": ray_cluster.get_runtime_context().gcs_address,
        "JUDGE_MAX_TOKENS": "16",
        "TRAIN_STEPS": str(TRAIN_STEPS),
    }
    for name in ("JUDGE", "JUDGE_BASE_URL", "JUDGE_MODEL", "POLICY_TOKENIZER"):
        env.pop(name, None)
    run = subprocess.run(
        ["bash", str(REPO / "scripts" / "quickstart.sh")],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = run.stdout + run.stderr
    log_path = tmp_path / "runs" / "serve-judge.log"
    log = log_path.read_text() if log_path.exists() else "(no serve-judge log)"
    context = f"--- quickstart output\n{output[-4000:]}\n--- serve-judge log\n{log[-3000:]}"
    assert run.returncode == 0, context

    assert "judge: SmolLM2-135M-Instruct, a real instruct model" in output and "UNTRAINED" not in output
    records = [json.loads(line) for line in (tmp_path / "runs" / "pairwise" / "scores.jsonl").read_text().splitlines()]
    rollouts = (REPO / "examples" / "rollouts.jsonl").read_text().splitlines()
    assert len(records) == len(rollouts)
    summary = json.loads((tmp_path / "runs" / "pairwise" / "summary.json").read_text())
    assert summary["samples"] == len(rollouts) and summary["judge_error_rate"] == 0, (summary, context)
    # Every judged sample went through serve-judge: one call per order (strategy=both), each with a reply.
    judged = [r for r in records if r["judge_calls"]]
    assert judged and all(r["judge_calls"] == 2 for r in judged)
    transcripts = [
        json.loads(line) for line in (tmp_path / "runs" / "pairwise" / "transcripts.jsonl").read_text().splitlines()
    ]
    replies = [call["reply"] for t in transcripts for call in t["calls"]]
    assert len(replies) == summary["judge_calls"] and all(isinstance(r, str) for r in replies)
    # A language model's replies: words, not the random tokens of an untrained model.
    words = " ".join(replies).split()
    assert sum(w.strip(".,;:!?[]()").isalpha() for w in words) > 0.6 * len(words), replies[:4]
    # BRPO: the rollouts of each prompt were judged against one of them through the group collector.
    brpo = [json.loads(line) for line in (tmp_path / "runs" / "brpo" / "scores.jsonl").read_text().splitlines()]
    assert len(brpo) == len(rollouts)
    by_row = {}
    for record in brpo:
        by_row.setdefault(record["row"], []).append(record)
    assert all(sum(r["is_reference"] for r in group) == 1 for group in by_row.values())
    assert all(r["group_size"] == len(by_row[r["row"]]) for r in brpo)
    # The table was printed, with the parse-failure rate and timings.
    for key in ("parse_error_rate", "judge_latency_p50_s", "samples_per_s", "reward_mean"):
        assert key in output
    # After each step's table: one judged example (what the judge saw, said and paid) and the parse errors.
    prompts = [one_line(json.loads(line)["prompt"]) for line in (REPO / "examples" / "writing_prompts.jsonl").open()]
    blocks = example_blocks(run.stdout)
    assert len(blocks) == 2, context
    for block, reference in zip(blocks, ("[the reference answer", "BRPO's bootstrapped reference")):
        fields = dict(line.strip().split(maxsplit=1) for line in block[1:] if not line.startswith("--"))
        assert set(fields) >= {"prompt", "A", "B", "verdict", "reasoning", "reward"}, block
        assert any(p.startswith(fields["prompt"].rstrip("…")) for p in prompts), block
        slots = fields["A"] + fields["B"]
        assert "[the policy's response]" in slots and reference in slots, block
        float(fields["reward"].split(":")[0])
        # How many replies could be read, and the position bias (or why there is no figure for it).
        readable = next(line for line in block if line.startswith("-- readable judge replies: "))
        read, _, calls = readable.removeprefix("-- readable judge replies: ").split(" (")[0].partition(" of ")
        assert int(calls) > 0 and int(read) <= int(calls), block
        assert any(line.startswith("   position bias: ") for line in block), block
        errors = next(line for line in block if line.startswith("-- parse errors: "))
        rate = int(errors.split("(")[1].split("%")[0])
        if rate > 20:  # replies without a verdict were counted and paid, with a hint (HIGH_PARSE_ERROR_RATE)
            assert any("SFT'd on it" in line for line in block), block
    assert run.stdout.index("wrote " + str(tmp_path / "runs" / "pairwise")) < run.stdout.index(blocks[0][0])

    # Step 5: verl's trainer ran Writing-RL steps on the CPU, with the stand-in judge with a taste (the untrained
    # one writes no verdict), verl's own metrics reported a reward for every step, and the policy learned: the
    # e's per rollout, counted on verl's dump, rose; every prompt's curriculum level rose from the easiest.
    assert f"== 5/5 verl's trainer: a tiny random policy learns what a judge prefers, {TRAIN_STEPS} steps" in output, (
        context
    )
    assert "STAND-IN judge" in output and "every step finished" in output, context
    records = [json.loads(line) for line in (tmp_path / "runs" / "train" / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in records if "critic/score/mean" in s["data"]]
    assert [s["step"] for s in steps] == list(range(1, TRAIN_STEPS + 1))
    table = output[output.index("verl's metrics per step") :]
    assert all(f"{s['data']['critic/score/mean']:.4f}" in table for s in steps), context
    summary = json.loads((tmp_path / "runs" / "train" / "summary.json").read_text())
    assert summary["taste"]["learned"] and summary["taste"]["end"] > summary["taste"]["start"] + 3, summary
    assert min(summary["curriculum_levels"]) > 0, summary
    # the taste's measure reached verl's tracker through the watch: per step, the figure of verl's own dump
    for record in steps:
        assert record["data"]["watch/taste_mean"] == pytest.approx(summary["taste"]["measure"][str(record["step"])])
    assert "taste letter:e:" in table and ": learned" in table and "curriculum: each prompt's reference level" in table

    assert "ready, serving model 'smollm2'" in log and "stopping" in log, context
    assert "Started a local Ray instance" not in log, context  # it joined this session's cluster
    # The trap stopped the server, and the server removed its replicas from the cluster.
    deadline = time.monotonic() + 30
    while ray_cluster.available_resources().get("CPU", 0.0) < cpus_before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray_cluster.available_resources().get("CPU", 0.0) >= cpus_before, (cpus_before, context)
