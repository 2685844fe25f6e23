"""GenRM training configs and scripts: grrm_rlvr.yaml / genrm_pairwise_rl.yaml pass verl's checks, the
scripts compose what they promise, and ranking_accuracy runs in verl's real reward loop (naive manager)."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from writing_rl.offline.compose import compose
from writing_rl.protocols import gqm
from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.tools.preflight.config_checks import check_config

from conftest import REPO_DIR, reward_loop

REQUIRED = {"MODEL_PATH": "/models/genrm", "TRAIN_FILES": "/data/train.parquet", "VAL_FILES": "/data/val.parquet"}


@pytest.mark.parametrize(
    "name,reward_fn", [("grrm_rlvr", "reward_fns.ranking_accuracy"), ("genrm_pairwise_rl", "reward_fns.preference")]
)
def test_overlays_pass_verl_validate_config_with_the_naive_manager(name, reward_fn):
    config = compose(name, ["actor_rollout_ref.model.path=/models/genrm"])
    checked = check_config(config)  # verl's validate_config, then loads the manager and reward fn as verl does
    assert checked[:2] == ["trainer v1-sync", "verl validate_config"]
    assert any(
        line.endswith("verl.experimental.reward_loop.reward_manager.naive.NaiveRewardManager") for line in checked
    )
    assert config.reward.custom_reward_function.path == f"pkg://{reward_fn}"
    assert not config.reward.reward_model.enable  # rule-based: no judge, rewards stream from the agent loop


def fake(tmp_path, name):
    """An executable that records its arguments, one per line, in <name>.args."""
    path = tmp_path / name
    path.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "{tmp_path}/{name}.args"\n')
    path.chmod(0o755)
    return path


def run_script(script, env_extra, *args):
    env = {k: v for k, v in os.environ.items() if k not in REQUIRED and k not in ("RAY_ADDRESS", "DRY_RUN")}
    env.update(env_extra)
    return subprocess.run(
        ["bash", str(REPO_DIR / "scripts" / script), *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "script,config_name",
    [("train_grrm_rlvr.sh", "grrm_rlvr"), ("train_genrm_pairwise_rl.sh", "genrm_pairwise_rl")],
)
def test_rl_scripts_name_missing_variables_and_launch_their_overlay(tmp_path, script, config_name):
    result = run_script(script, {"MODEL_PATH": "/m"})
    assert result.returncode == 2 and "TRAIN_FILES" in result.stderr and "VAL_FILES" in result.stderr
    assert "MODEL_PATH" not in result.stderr

    python = fake(tmp_path, "python")
    result = run_script(script, {**REQUIRED, "PYTHON": str(python), "N_GPUS": "4"}, "trainer.total_epochs=2")
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "python.args").read_text().splitlines()
    assert args[:4] == ["-m", "verl.trainer.main_ppo", "--config-path", str(REPO_DIR / "hydra_configs")]
    assert args[4:6] == ["--config-name", config_name]
    overrides = args[6:]
    assert "trainer.n_gpus_per_node=4" in overrides and overrides[-1] == "trainer.total_epochs=2"
    config = compose(config_name, overrides)  # what main_ppo would compose from those arguments
    check_config(config)
    assert config.actor_rollout_ref.model.path == "/models/genrm" and config.trainer.total_epochs == 2


def test_sft_script_runs_verl_sft_trainer_under_torchrun_and_dry_run_checks_the_data(tmp_path, tokenizer_dir):
    rows = [
        {
            "src_text": f"源文 {i}",
            "src_lang": "zh",
            "trg_lang": "en",
            "mt_texts": [f"a {i}", f"b {i}"],
            "scores": [3, 8],
            "analysis": "B is more faithful than A.",
        }
        for i in range(4)
    ]
    source = tmp_path / "groups.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert build(["gqm-sft", "--quiet", "--input", str(source), "--output", str(tmp_path / "sft")]) == 0
    train = str(tmp_path / "sft/train.parquet")

    result = run_script("train_genrm_sft.sh", {"TRAIN_FILES": train})
    assert result.returncode == 2 and "MODEL_PATH" in result.stderr

    env = {"MODEL_PATH": str(tokenizer_dir), "TRAIN_FILES": train, "N_GPUS": "2", "MAX_LENGTH": "4096"}
    torchrun = fake(tmp_path, "torchrun")
    result = run_script("train_genrm_sft.sh", {**env, "TORCHRUN": str(torchrun)}, "optim.lr=1e-5")
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "torchrun.args").read_text().splitlines()
    assert args[:3] == ["--standalone", "--nnodes=1", "--nproc_per_node=2"]
    assert args[3:5] == ["-m", "verl.trainer.sft_trainer"]
    overrides = args[5:]
    assert f"data.train_files={train}" in overrides and "data.messages_key=messages" in overrides
    assert overrides[-1] == "optim.lr=1e-5"

    python = fake(tmp_path, "python")
    result = run_script("train_genrm_sft.sh", {**env, "DRY_RUN": "1", "PYTHON": str(python)})
    assert result.returncode == 0, result.stderr
    dry = (tmp_path / "python.args").read_text().splitlines()
    assert dry[:3] == ["-m", "data_prep.check_sft", "--print"]

    from writing_rl.data.sft_check import check_sft, compose_sft

    config = compose_sft(dry[3:])  # verl's sft_trainer_engine with the script's overrides
    assert config.data.max_length == 4096 and config.optim.lr_scheduler_type == "cosine"
    checked = check_sft(config, sample=4)
    assert any(f"{train}: 4 rows of 'messages' chats" in line for line in checked)
    assert any("global batch 64 over 2 ranks" in line for line in checked)

    multi = run_script("train_genrm_sft.sh", {**env, "TORCHRUN": str(torchrun), "NNODES": "2"})
    assert multi.returncode == 2 and "NODE_RANK" in multi.stderr and "MASTER_ADDR" in multi.stderr

    # The real dry run (PYTHON unset). verl's SFT trainer imports uvicorn, which verl does not declare: the
    # dry run warns where it is missing (blocked here, so the check is the same with or without it).
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['uvicorn'] = None\n")
    dry_env = {**env, "N_GPUS": "1", "PYTHONPATH": f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = run_script("train_genrm_sft.sh", {**dry_env, "DRY_RUN": "1", "PYTHON": sys.executable})
    assert result.returncode == 0, result.stderr
    assert "ok  global batch 64 over 1 ranks" in result.stdout
    assert "warn  verl.trainer.sft_trainer cannot be imported here" in result.stdout
    assert "pip install uvicorn fastapi" in result.stdout


def test_ranking_accuracy_through_verls_reward_loop_manager(ray_cluster, tmp_path, tokenizer_dir, tokenizer):
    """gqm-rl rows and GenRM answers through verl's RewardLoopManager with its built-in naive manager, as
    hydra_configs/grrm_rlvr.yaml configures it: 5 samples over 2 workers (verl pads to 6)."""
    rows = [
        {
            "src_text": f"源文 {i}",
            "src_lang": "zh",
            "trg_lang": "en",
            "mt_texts": ["one", "two", "three"],
            "scores": [2, 9, 5],
        }
        for i in range(5)
    ]
    source = tmp_path / "groups.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert build(["gqm-rl", "--quiet", "--input", str(source), "--output", str(tmp_path / "rl")]) == 0
    data = pq.read_table(tmp_path / "rl/train.parquet").to_pylist()
    truth = json.loads(data[0]["reward_model"]["ground_truth"])
    perfect = gqm.gqm_response("B is best, C next, A last.", truth, "ranking_score")
    responses = [
        perfect,
        perfect.replace("B: 9, C: 5, A: 2", "B: 9, C: 4, A: 2"),  # right ranking, one margin off by one
        "B > C > A",  # no reasoning, no headers
        perfect.replace("B > C > A", "C > B > A"),  # disagrees with its own scores
        f"<think>{perfect}",  # never closed
    ]
    config = compose("grrm_rlvr", [f"actor_rollout_ref.model.path={tokenizer_dir}", "reward.num_workers=2"])
    batch = build_reward_batch(tokenizer, data, responses)
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    rewards = output.batch["rm_scores"].sum(dim=-1).tolist()
    assert rewards == pytest.approx([2.0, 1.0 + (1.0 + 0.6 + 0.6) / 3, 0.0, 0.0, 0.0])
    extra = output.non_tensor_batch
    assert set(output.meta_info["reward_extra_keys"]) == {"score", "valid_answer", "ranking_reward", "score_reward"}
    assert extra["valid_answer"].tolist() == [1, 1, 0, 0, 0]
    assert extra["ranking_reward"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
