"""verl's own SFT trainer (``torchrun -m verl.trainer.sft_trainer``, config ``sft_trainer_engine``) on the CPU
backend, through the script a user runs: ``scripts/train_genrm_sft.sh`` with ``BACKEND=cpu``, driven by
``scripts/tiny_sft.py``. GRRM's cold start (gqm-sft rows) and Writing-Zero's pairwise GenRM SFT (pref-sft rows)
of the tiny random GenRM, each about half a minute of training on 2 cores: marked ``trainer``.

What the tests read back is what verl wrote (its file tracker, its checkpoint's HF model) and what the trained
model generates on held-out rows, read by our own readers (writing_rl.protocols).
"""

from __future__ import annotations

import os
import subprocess

import pyarrow.parquet as pq
import pytest
from test_docs import load_script

from conftest import REPO_DIR

SCRIPT = REPO_DIR / "scripts" / "train_genrm_sft.sh"


@pytest.fixture(scope="module")
def tiny_sft():
    return load_script("scripts/tiny_sft.py")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny_model")


@pytest.mark.trainer
# gqm-sft in the release suite (half a minute of CI's 30): pref-sft takes the same path through verl's SFT trainer.
@pytest.mark.parametrize("kind", [pytest.param("gqm-sft", marks=pytest.mark.release), "pref-sft"])
def test_verls_sft_trainer_on_the_cpu_teaches_the_tiny_genrm_to_answer_in_its_format(tiny_sft, cache, tmp_path, kind):
    from transformers import AutoModelForCausalLM

    out = tmp_path / kind
    epochs = tiny_sft.KINDS[kind].epochs
    model_dir = tiny_sft.run_sft(kind, out, cache, epochs)  # raises with verl's output unless the script exits 0
    log = (out / "train.log").read_text(errors="replace")
    assert "Platform override from VERL_PLATFORM: cpu" in log  # verl ran on our CPU platform

    # verl's tracker: one loss per step of every epoch, falling by more than half.
    rows = pq.read_table(out / "data/train/train.parquet").num_rows
    losses = tiny_sft.losses(out / "metrics.jsonl")
    assert len(losses) == rows // tiny_sft.BATCH * epochs
    assert losses[-1] < 0.5 * losses[0], f"verl's train/loss did not fall: {losses}"

    # The checkpoint's HF model loads with transformers, and holds the trained weights, not the base model's.
    base_dir = cache / "genrm"
    trained = AutoModelForCausalLM.from_pretrained(str(model_dir))
    base = AutoModelForCausalLM.from_pretrained(str(base_dir))
    assert model_dir == out / "checkpoints" / f"global_step_{len(losses)}" / "huggingface"
    assert not trained.model.embed_tokens.weight.equal(base.model.embed_tokens.weight)

    # On held-out rows: the base model's greedy replies do not read; after SFT more of them do.
    before = tiny_sft.measure(base_dir, out / "data")
    after = tiny_sft.measure(model_dir, out / "data")
    assert before["rows"] == after["rows"] > 0
    assert after["readable"] > before["readable"], f"before {before['replies']}, after {after['replies']}"


def fake_torchrun(tmp_path):
    """A torchrun that records its arguments and the platform it was given, one per line."""
    path = tmp_path / "torchrun"
    path.write_text(
        f'#!/usr/bin/env bash\n{{ echo "VERL_PLATFORM=$VERL_PLATFORM"; printf "%s\\n" "$@"; }} > "{tmp_path}/args"\n'
    )
    path.chmod(0o755)
    return path


def run_script(env_extra, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("VERL_PLATFORM", "N_GPUS", "NNODES", "BACKEND")}
    env.update({"MODEL_PATH": "/models/genrm", "TRAIN_FILES": "/data/train.parquet", **env_extra})
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def test_backend_cpu_runs_one_process_on_verls_cpu_platform_and_the_users_overrides_come_last(tmp_path):
    torchrun = fake_torchrun(tmp_path)
    done = run_script({"BACKEND": "cpu", "TORCHRUN": str(torchrun)}, "engine.strategy=fsdp")
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:4] == ["VERL_PLATFORM=cpu", "--standalone", "--nnodes=1", "--nproc_per_node=1"]
    assert args[4:6] == ["-m", "verl.trainer.sft_trainer"]
    for override in ("trainer.device=cpu", "engine.strategy=fsdp2", "++model.override_config.attn_implementation=sdpa"):
        assert override in args
    assert args[-1] == "engine.strategy=fsdp"  # a user's override wins over the backend's

    plain = run_script({"TORCHRUN": str(torchrun)})
    assert plain.returncode == 0, plain.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[0] == "VERL_PLATFORM=" and "--nproc_per_node=8" in args
    assert not [a for a in args if a.startswith(("trainer.device", "engine.", "++model.", "data.num_workers"))]

    for env, expected in (
        ({"BACKEND": "cpu", "N_GPUS": "2"}, "N_GPUS=1 and NNODES=1 (got N_GPUS=2 NNODES=1)"),
        ({"BACKEND": "gpu"}, "BACKEND must be cpu, or unset"),
    ):
        refused = run_script({**env, "TORCHRUN": str(torchrun)})
        assert refused.returncode == 2 and expected in refused.stderr
