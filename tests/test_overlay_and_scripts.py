"""The Hydra overlay as verl composes it, `writing-rl check-config`, and scripts/train_writing_rl.sh."""

import dataclasses
import os
import subprocess
import sys

import pytest
import yaml

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.judge.config import JudgeConfig
from writing_rl.reward_loop.config import GroupConfig, ManagerConfig, ShadowConfig
from writing_rl.terms import BUILTIN
from writing_rl.tools.cli import main as cli

from conftest import REPO_DIR

SCRIPT = REPO_DIR / "scripts/train_writing_rl.sh"
REQUIRED = {
    "MODEL_PATH": "/models/policy",
    "TRAIN_FILES": "/data/train.parquet",
    "VAL_FILES": "/data/val.parquet",
    "JUDGE_BASE_URL": "http://judge:8000/v1",
    "JUDGE_MODEL": "judge-model",
}


def test_yaml_lists_the_code_defaults():
    """Defaults live in writing_rl/judge/config.py and reward_loop/config.py; the overlay lists every key so Hydra can override it without '+'."""
    overlay = yaml.safe_load((REPO_DIR / "hydra_configs/judge_base.yaml").read_text())
    kwargs = dict(overlay["reward"]["reward_kwargs"])
    assert kwargs.pop("judge") == defaults_of(JudgeConfig)
    assert kwargs.pop("groups") == defaults_of(GroupConfig)
    assert kwargs.pop("curriculum") == defaults_of(CurriculumConfig)
    assert kwargs.pop("terms") == {name: defaults_of(term) for name, term in BUILTIN.items()}
    assert kwargs.pop("shadow") == defaults_of(ShadowConfig)
    assert kwargs.pop("watch") == {} and not ManagerConfig().watch  # none by default
    manager_defaults = defaults_of(ManagerConfig)
    for section in ("judge", "groups", "extras", "terms", "shadow", "watch"):
        manager_defaults.pop(section)
    assert kwargs == manager_defaults


def defaults_of(cls) -> dict:
    """The settings of ``cls`` (fields filled from elsewhere, metadata "from", are not)."""
    values = {f.name: getattr(cls(), f.name) for f in dataclasses.fields(cls) if "from" not in f.metadata}
    return {k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for k, v in values.items()}


def test_main_ppo_composes_the_overlay():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "verl.trainer.main_ppo",
            "--config-path",
            str(REPO_DIR / "hydra_configs"),
            "--config-name",
            "writing_rl",
            "--cfg",
            "job",
            "reward.reward_kwargs.judge.max_concurrency=32",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    config = yaml.safe_load(result.stdout)
    # named as verl's own managers are, from verl's registry (our plugin adds ours)
    assert config["reward"]["reward_manager"] == {
        "_target_": "verl.workers.config.reward.RewardManagerConfig",
        "source": "register",
        "name": "ParallelRewardManager",
        "module": {
            "_target_": "verl.trainer.config.config.ModuleConfig",
            "path": None,
            "name": "custom_reward_manager",
        },
    }
    assert config["reward"]["custom_reward_function"]["path"] == "pkg://reward_fns.pairwise"
    assert config["reward"]["custom_reward_function"]["name"] == "compute_score"
    assert config["reward"]["reward_kwargs"]["judge"]["max_concurrency"] == 32
    assert config["algorithm"]["adv_estimator"] == "grpo"


def test_check_config_passes_and_fails_clearly(capsys, tokenizer_dir):
    ok = cli(
        [
            "check-config",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            "reward.reward_kwargs.judge.base_url=http://judge:8000/v1",
            "reward.reward_kwargs.judge.model=m",
        ]
    )
    out = capsys.readouterr().out
    assert ok == 0
    assert "ok  verl validate_config" in out and "writing_rl.reward_loop.manager.ParallelRewardManager" in out
    assert "8 requests in flight per reward worker x 8 workers" in out
    assert "ok  curriculum: levels in " in out and "keep 5 step snapshots" in out
    bad = cli(
        [
            "check-config",
            "reward.reward_kwargs.judge.base_url=http://judge:8000/v1",
            "reward.reward_kwargs.judge.model=m",
            "reward.reward_kwargs.on_judge_error=ignore",
        ]
    )
    assert bad == 2 and "on_judge_error='ignore': expected one of" in capsys.readouterr().err


@pytest.mark.parametrize(
    "overlay, override, error",
    [
        ("writing_rl", "reward.reward_kwargs.curriculum.keep_steps=0", "keep_steps=0: expected a number >= 1"),
        ("writing_rl", "reward.reward_kwargs.groups.timeout_s=0", "groups.timeout_s=0: expected a number > 0"),
        # a typo fails even where the section is unused (BRPO schedules no references)
        (
            "brpo",
            "+reward.reward_kwargs.curriculum.keepsteps=3",
            "unknown key(s) under reward.reward_kwargs.curriculum",
        ),
        (
            "brpo",
            "+reward.reward_kwargs.groups.timeout=60",
            "unknown key(s) under reward.reward_kwargs.groups: timeout",
        ),
        # filled from reward.reward_kwargs.on_group_incomplete: set here it would be overwritten, so refused
        (
            "brpo",
            "+reward.reward_kwargs.groups.on_incomplete=score",
            "groups.on_incomplete is not a setting: set reward.reward_kwargs.on_group_incomplete",
        ),
    ],
)
def test_check_config_checks_the_groups_and_curriculum_sections(capsys, overlay, override, error):
    judge = ["reward.reward_kwargs.judge.base_url=http://judge:8000/v1", "reward.reward_kwargs.judge.model=m"]
    assert cli(["check-config", "--config-name", overlay, *judge, override]) == 2
    assert error in capsys.readouterr().err


def fn_parameters(fn: str) -> list[str]:
    import importlib
    import inspect

    module, _, name = fn.removeprefix("pkg://").partition(":")
    return list(inspect.signature(getattr(importlib.import_module(module), name)).parameters)


def judged_overlays() -> dict[str, str]:
    """Each installed method's own overlay (the one it declares, ``RewardMethod.probe.overlay``) -> its fn."""
    from writing_rl.reward_loop.registry import methods

    return {m.method.probe.overlay: f"{m.path}:compute_score" for m in methods().values() if m.method.probe}


def test_every_judged_method_has_an_overlay_and_a_script():
    assert {"writing_rl", "brpo", "tournament", "grrm_mt_grpo", "rubric", "pointwise"} <= set(judged_overlays())
    for overlay in judged_overlays():
        assert (REPO_DIR / "hydra_configs" / f"{overlay}.yaml").is_file()
        assert (REPO_DIR / "scripts" / f"train_{overlay}.sh").is_file()


@pytest.mark.parametrize("overlay, fn", sorted(judged_overlays().items()))
def test_every_judge_overlay_passes_verls_validate_config(overlay, fn, tokenizer_dir):
    from writing_rl.tools.preflight.config_checks import run_check

    checked = run_check(
        overlay,
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            "reward.reward_kwargs.judge.base_url=http://judge:8000/v1",
            "reward.reward_kwargs.judge.model=m",
        ],
    )
    assert checked[:2] == ["trainer v1-sync", "verl validate_config"]
    manager = "GroupRewardManager" if "members" in fn_parameters(fn) else "ParallelRewardManager"
    assert any(line.endswith(manager) for line in checked) and f"reward fn {fn}" in checked


def run_script(env_extra, *args, path_prefix=None, script=SCRIPT):
    env = {k: v for k, v in os.environ.items() if k not in REQUIRED and k != "RAY_ADDRESS"}
    env.update(env_extra, PYTHON=sys.executable)
    if path_prefix:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", [f"train_{overlay}.sh" for overlay in sorted(judged_overlays())])
def test_script_names_every_missing_variable(name):
    result = run_script({"MODEL_PATH": "/m", "JUDGE_MODEL": "j"}, script=REPO_DIR / "scripts" / name)
    assert result.returncode == 2
    for name in ("TRAIN_FILES", "VAL_FILES", "JUDGE_BASE_URL"):
        assert name in result.stderr
    assert "MODEL_PATH" not in result.stderr


def test_script_with_a_verl_hosted_genrm_needs_its_path_not_an_endpoint():
    base = {k: v for k, v in REQUIRED.items() if not k.startswith("JUDGE_")}
    result = run_script({**base, "GENRM": "colocated"})
    assert result.returncode == 2 and "GENRM_PATH" in result.stderr and "JUDGE_BASE_URL" not in result.stderr
    result = run_script({**base, "GENRM": "sideways", "GENRM_PATH": "/g"})
    assert result.returncode == 2 and "GENRM must be colocated or standalone" in result.stderr


def test_script_dry_run_writes_the_config_and_ends_with_the_preflights_verdict(judge_server, tmp_path):
    server = judge_server(models={"judge-model": None})
    result = run_script(
        {
            **REQUIRED, "DRY_RUN": "1", "DRY_RUN_OUT": str(tmp_path), "REMOTE_PATHS": "all",
            "JUDGE_BASE_URL": server.base_url, "JUDGE_API_KEY_ENV": "WRL_TEST_KEY", "WRL_TEST_KEY": "k",
        },
        "reward.custom_reward_function.reward_kwargs.strategy=both",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[-1] == "preflight: ok" and len(lines) < 60  # the verdict, not buried under the config
    assert "ok       verl validate_config" in result.stdout
    assert f"judge {server.base_url} serves 'judge-model'" in result.stdout
    assert "/models/policy: remote, not checked here" in result.stdout
    composed = tmp_path / "writing_rl.yaml"
    assert f"== the composed config, as verl.trainer.main_ppo reads it: {composed} (" in result.stdout
    config_text = composed.read_text()
    assert "strategy: both" in config_text and "path: /models/policy" in config_text


def test_script_dry_run_answers_a_misspelt_key_with_the_key_meant_and_checks_the_rest(judge_server, tmp_path):
    server = judge_server(models={"judge-model": None})
    result = run_script(
        {
            **REQUIRED,
            "DRY_RUN": "1",
            "DRY_RUN_OUT": str(tmp_path),
            "REMOTE_PATHS": "all",
            "JUDGE_BASE_URL": server.base_url,
        },
        "reward.custom_reward_function.reward_kwargs.stratgy=both",  # no '+': Hydra refuses it before verl starts
    )
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert (
        "PROBLEM  config: unknown config key 'reward.custom_reward_function.reward_kwargs.stratgy': "
        "did you mean 'reward.custom_reward_function.reward_kwargs.strategy'?"
    ) in lines
    assert f"ok       judge {server.base_url} serves 'judge-model'" in "\n".join(lines)  # the rest was checked
    assert lines[-1] == "preflight: 1 problem(s); nothing was started"
    assert "Traceback" not in result.stderr and "Could not override" not in result.stdout
    assert not list(tmp_path.glob("writing_rl.yaml*"))  # no config written for a config that does not compose


def test_with_ray_address_the_script_submits_through_our_job_client_and_names_a_wrong_address(tmp_path):
    """The submission itself runs against a real cluster in tests/test_ray_job.py; here, no job server."""
    from ray_cluster import free_ports

    (port,) = free_ports(1)
    address = f"http://127.0.0.1:{port}"
    result = run_script({**REQUIRED, "RAY_ADDRESS": address, "PREFLIGHT": "0"}, "trainer.total_epochs=3")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "== working directory upload: " in result.stdout
    assert f"error: no Ray job server at RAY_ADDRESS={address} " in result.stderr
    assert "http://HEAD:8265 by default" in result.stderr
