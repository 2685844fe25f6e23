"""verl's trainers by TRAINER name (writing_rl/tools/shared/trainers.py): each composes onto every overlay, the
experimental entry points' keys are verl's own (hydra_configs/entry/), the combinations verl cannot run are
refused by check-config, the preflight and DRY_RUN before anything starts, and docs/trainers.md shows the
same matrix the code enforces."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from writing_rl.offline.compose import compose
from writing_rl.settings import ConfigError
from writing_rl.tools.preflight.config_checks import check_config
from writing_rl.tools.shared.trainers import TRAINERS, trainer_of, unmet

from conftest import REPO_DIR

JUDGED = ("writing_rl", "brpo", "grrm_mt_grpo", "rubric")
ENDPOINT = ("reward.reward_kwargs.judge.base_url=http://judge:8000/v1", "reward.reward_kwargs.judge.model=m")
HOSTING = {
    "endpoint": ENDPOINT,
    "standalone": ("+genrm=standalone", "reward.reward_model.model_path=/models/genrm"),
    "colocated": ("+genrm=colocated", "reward.reward_model.model_path=/models/genrm"),
}
# The settings a fully-async run needs beyond verl's file: its rollouter asserts them.
FULLY_ASYNC_REQUIRED = {"data.train_batch_size": 0, "actor_rollout_ref.hybrid_engine": False}
# What one-step-off's trainer asserts and verl's file leaves at ppo_trainer's value.
ONE_STEP_OFF_REQUIRED = {"actor_rollout_ref.hybrid_engine": False}
# verl's 100 counts prompts (gen_batch_size 1): one training step with our overlays. Ours: the data's epochs.
OURS_INSTEAD = {"rollout.total_rollout_steps": None}


# v1-separate-async generates on GPUs of its own, which the user names.
ROLLOUT_GPUS = ("actor_rollout_ref.rollout.n_gpus_per_node=4", "actor_rollout_ref.rollout.nnodes=1")


def composed(overlay: str, trainer: str, hosting: str = "endpoint", *extra: str):
    gpus = ROLLOUT_GPUS if trainer == "v1-separate-async" else ()
    return compose(overlay, ["actor_rollout_ref.model.path=/models/policy", *TRAINERS[trainer].overrides,
                             *HOSTING[hosting], *gpus, *extra])  # fmt: skip


def flat(config) -> dict:
    """{dotted key: value} of a config's leaves."""
    found = {}

    def walk(node, prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                found[f"{prefix}{key}"] = value

    walk(OmegaConf.to_container(config), "")
    return found


@pytest.mark.parametrize("entry, verl_config", [("fully_async", "fully_async_policy/config/fully_async_ppo_trainer.yaml"),
                                                ("one_step_off", "one_step_off_policy/config/one_step_off_ppo_trainer.yaml")])  # fmt: skip
def test_an_entry_point_adds_what_verls_own_config_adds(entry, verl_config):
    import verl.experimental

    theirs = OmegaConf.load(Path(verl.experimental.__file__).parent / verl_config)
    theirs.pop("hydra")
    theirs.pop("defaults")
    ours = flat(OmegaConf.load(REPO_DIR / "hydra_configs" / "entry" / f"{entry}.yaml"))
    theirs = {key: value for key, value in flat(theirs).items() if key not in OURS_INSTEAD}
    assert {key: ours.get(key, "<missing>") for key in theirs} == theirs
    extra = {key: value for key, value in ours.items() if key not in theirs}
    assert extra == ({**FULLY_ASYNC_REQUIRED, **OURS_INSTEAD} if entry == "fully_async" else ONE_STEP_OFF_REQUIRED)


@pytest.mark.parametrize(
    "overlay, trainer", [*(("writing_rl", trainer) for trainer in TRAINERS), *((o, "fully-async") for o in JUDGED[1:])]
)
def test_every_trainer_composes_onto_every_judged_overlay_and_is_recognised(overlay, trainer):
    config = composed(overlay, trainer)
    assert trainer_of(config) == trainer
    assert config.reward.reward_manager.name in ("ParallelRewardManager", "GroupRewardManager")  # our overlay on top
    if trainer == "fully-async":
        assert int(config.data.train_batch_size) == 0
    if trainer in ("fully-async", "one-step-off"):
        assert not config.actor_rollout_ref.hybrid_engine


def expected_refusal(trainer: str, hosting: str) -> str | None:
    """The matrix, written out: which (trainer, hosting) verl 0.9.1 cannot run, and the first words of why."""
    if trainer == "one-step-off" and hosting != "endpoint":
        return "TRAINER=one-step-off with a GenRM verl hosts"
    if trainer in ("fully-async", "v1-separate-async") and hosting == "colocated":
        return f"TRAINER={trainer} with a colocated GenRM"
    if trainer.startswith("v1-") and hosting == "colocated":
        return (
            "a colocated GenRM (reward.reward_model.enable=true, enable_resource_pool=false) needs trainer.use_v1=false"
        )
    return None


@pytest.mark.parametrize("hosting", HOSTING)
@pytest.mark.parametrize("trainer", TRAINERS)
def test_check_config_refuses_exactly_the_combinations_verl_cannot_run(trainer, hosting):
    config = composed("brpo", trainer, hosting)
    refusal = expected_refusal(trainer, hosting)
    if refusal is None:
        check_config(config)
    else:
        with pytest.raises(ConfigError) as refused:
            check_config(config)
        assert str(refused.value).startswith(refusal) and ": " in str(refused.value)
        assert "Use " in str(refused.value) or "use " in str(refused.value)  # and says what to use instead


@pytest.mark.parametrize("trainer", ["v1-separate-async", "fully-async", "one-step-off"])
def test_on_the_cpu_backend_the_trainers_that_send_weights_want_the_gloo_engine(trainer):
    with pytest.raises(ConfigError) as refused:
        check_config(composed("writing_rl", trainer, "endpoint", "+backend=cpu"))
    assert str(refused.value).startswith(f"TRAINER={trainer} on the CPU backend sends weights to the rollout's own")
    assert "checkpoint_engine.backend=gloo" in str(refused.value)
    gloo = "actor_rollout_ref.rollout.checkpoint_engine.backend=gloo"
    assert unmet(composed("writing_rl", trainer, "endpoint", "+backend=cpu", gloo)) == []


def script(tmp_path, name: str, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("TRAINER", "GENRM", "RAY_ADDRESS")}
    base.update(MODEL_PATH="/models/policy", TRAIN_FILES="/data/t.parquet", VAL_FILES="/data/v.parquet",
                JUDGE_BASE_URL="http://127.0.0.1:9/v1", JUDGE_MODEL="m", REMOTE_PATHS="all", DRY_RUN="1",
                DRY_RUN_OUT=str(tmp_path), PYTHON=sys.executable)  # fmt: skip
    base.update(env)
    return subprocess.run(["bash", str(REPO_DIR / "scripts" / name)], env=base, capture_output=True, text=True)


def test_dry_run_refuses_one_step_off_with_a_genrm_verl_hosts_in_one_line(tmp_path):
    done = script(tmp_path, "train_brpo.sh", TRAINER="one-step-off", GENRM="colocated", GENRM_PATH="/models/genrm")
    assert done.returncode == 1
    (problem,) = [line for line in done.stdout.splitlines() if line.startswith("PROBLEM")]
    assert "TRAINER=one-step-off with a GenRM verl hosts" in problem and "KeyError" in problem
    assert done.stdout.rstrip().endswith("preflight: 1 problem(s); nothing was started")


def test_an_unknown_trainer_is_named_with_the_ones_there_are(tmp_path):
    done = script(tmp_path, "train_rubric.sh", TRAINER="async")
    assert done.returncode == 2
    assert done.stderr.strip() == f"TRAINER must be one of {', '.join(TRAINERS)}; got async"


def test_the_docs_matrix_is_what_the_code_refuses():
    """docs/trainers.md: one row per trainer, one column per hosting; a refused cell says "refused"."""
    page = (REPO_DIR / "docs" / "trainers.md").read_text(encoding="utf-8").split("## What runs where")[1]
    rows = {
        m[1]: [cell.strip() for cell in m[2].split("|")] for m in re.finditer(r"^\| `([\w-]+)` \|(.*)\|$", page, re.M)
    }
    assert set(rows) == set(TRAINERS)
    for trainer, cells in rows.items():
        for hosting, cell in zip(HOSTING, cells[:3]):
            refused = expected_refusal(trainer, hosting) is not None
            assert cell.startswith("refused") == refused, f"{trainer} x {hosting}: {cell!r}"


@pytest.mark.parametrize(
    "trainer, override, problem",
    [
        ("v1-separate-async", "actor_rollout_ref.rollout.n_gpus_per_node=0",
         "TRAINER=v1-separate-async generates on GPUs of its own: set actor_rollout_ref.rollout.n_gpus_per_node"),
        ("v1-separate-async", "data.train_batch_size=48",
         "TRAINER=v1-separate-async needs data.train_batch_size = trainer.v1.separate_async.parameter_sync_step x "
         "actor_rollout_ref.actor.ppo_mini_batch_size: 48 != 4 x 16"),
        ("one-step-off", "actor_rollout_ref.rollout.checkpoint_engine.backend=naive",
         "TRAINER=one-step-off sends weights to the rollout's own GPUs"),
        ("fully-async", "data.train_batch_size=64",
         "TRAINER=fully-async needs data.train_batch_size=0 (its rollouter asserts it"),
        ("fully-async", "actor_rollout_ref.hybrid_engine=true", "TRAINER=fully-async needs actor_rollout_ref.hybrid_engine=False"),
        ("one-step-off", "trainer.rollout_data_dir=/tmp/dumps",
         "TRAINER=one-step-off with trainer.rollout_data_dir: verl 0.9.1's one-step-off trainer stops at its first step"),
        ("one-step-off", "actor_rollout_ref.hybrid_engine=true",
         "TRAINER=one-step-off needs actor_rollout_ref.hybrid_engine=False (its trainer asserts it"),
    ],
)  # fmt: skip
def test_what_a_trainer_asserts_at_start_is_checked_before(trainer, override, problem):
    with pytest.raises(ConfigError) as refused:
        check_config(composed("writing_rl", trainer, "endpoint", override))
    assert str(refused.value).startswith(problem)


def test_dry_run_composes_for_the_entry_point_the_trainer_runs(tmp_path, judge_server):
    """fully-async's module (verl's, with judge health: reward_loop/health/entry/) and keys, and a +node preset
    under it that does not undo what it asserts."""
    judge = judge_server(models={"scripted-judge": 32_768}).base_url
    done = script(tmp_path, "train_writing_rl.sh", TRAINER="fully-async", NODE_PRESET="eight_gpus",
                  JUDGE_BASE_URL=judge, JUDGE_MODEL="scripted-judge")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "== the composed config, as writing_rl.reward_loop.health.entry.fully_async reads it" in done.stdout
    assert "ok       trainer fully-async" in done.stdout
    config = OmegaConf.load(tmp_path / "writing_rl.yaml")
    assert "async_training" in config and config.data.train_batch_size == 0
    assert config.data.max_response_length == 4096  # the node preset applied too


def test_a_misspelt_v1_mode_is_named():
    config = compose(
        "writing_rl", ["actor_rollout_ref.model.path=/m", *ENDPOINT, "trainer.v1.trainer_mode=colocate-async"]
    )
    with pytest.raises(
        ConfigError, match="trainer.v1.trainer_mode=colocate-async: expected one of sync, colocate_async"
    ):
        check_config(config)
