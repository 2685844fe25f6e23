"""Checks of the composed config. ``writing-rl check-config`` (``run_check``) catches config mistakes on a
laptop before a cluster job does: it runs verl's own ``validate_config`` on the composed overlay, then
loads the reward manager and reward fn the way verl's reward workers will and validates
``reward.reward_kwargs``. ``writing-rl preflight`` runs that too, and checks the paths the config names
(``check_paths``).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Sequence

from writing_rl.tools.preflight.report import Report

# (config key, the scripts' variable that fills it)
MODEL_KEY, GENRM_KEY = "actor_rollout_ref.model.path", "reward.reward_model.model_path"
PATH_KEYS = {
    MODEL_KEY: "MODEL_PATH",
    "data.train_files": "TRAIN_FILES",
    "data.val_files": "VAL_FILES",
    GENRM_KEY: "GENRM_PATH",
}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


# The name our verl plugin is declared under (setup.py, entry point group verl.plugins).
PLUGIN = "writing_rl"
# Modules verl's trainer imports at start that plain `verl` does not install (its verl-core extra does):
# module -> the package to install. writing-rl requires them; a venv built otherwise may lack them.
TRAINER_MODULES = {"cachetools": "cachetools", "uvicorn": "uvicorn", "fastapi": "fastapi"}
V1_TRAINER_MODULES = {"transfer_queue": "TransferQueue>=0.1.10", **TRAINER_MODULES}


def check_trainer_packages(config) -> str:
    """verl's trainer dies inside Ray with a bare ModuleNotFoundError when one is missing; say it here."""
    import importlib.util

    from writing_rl.settings import ConfigError

    v1 = bool(config.trainer.get("use_v1", True))
    modules = V1_TRAINER_MODULES if v1 else TRAINER_MODULES
    missing = [package for module, package in modules.items() if importlib.util.find_spec(module) is None]
    if missing:
        which = "verl's v1 trainer (trainer.use_v1=true, verl's default)" if v1 else "verl's trainer"
        raise ConfigError(
            f"{which} imports {', '.join(missing)} at start, not installed in this environment: "
            f"pip install {' '.join(repr(p) for p in missing)} (writing-rl's own requirements include them)"
        )
    return f"trainer packages: {', '.join(modules)} importable"


def check_backend(config) -> str | None:
    """``+backend=cpu`` (trainer.device=cpu) runs only where verl chose its CPU platform at import."""
    from writing_rl.cpu_backend.platform_name import PLATFORM, ROLLOUT, selected
    from writing_rl.settings import ConfigError

    on_cpu = config.trainer.get("device") == PLATFORM or config.actor_rollout_ref.rollout.get("name") == ROLLOUT
    if not on_cpu:
        return None
    if not selected(os.environ):
        raise ConfigError(
            f"trainer.device={config.trainer.get('device')}, rollout {config.actor_rollout_ref.rollout.get('name')}: "
            f"verl's CPU backend needs VERL_PLATFORM={PLATFORM} in the environment (verl picks its platform "
            "when imported, before Hydra runs); scripts/tiny_train.sh sets it"
        )
    return f"CPU backend: VERL_PLATFORM={PLATFORM}, rollout {ROLLOUT}"


def check_estimator_plugin(config) -> str | None:
    """A method's advantage estimator (``algorithm.adv_estimator``, ``RewardMethod.advantage_estimators``) is known
    to verl through our verl plugin (writing_rl/plugin.py): the process that computes advantages (fully-async's
    trainer actor) may never load our reward code."""
    from importlib.metadata import entry_points

    from writing_rl.reward_loop.registry import advantage_estimators
    from writing_rl.settings import ConfigError

    estimator = config.algorithm.get("adv_estimator")
    if estimator not in advantage_estimators():
        return None
    policy = os.environ.get("VERL_USE_EXTERNAL_PLUGINS", "auto").strip().lower()
    loaded = policy == "auto" or PLUGIN in {name.strip() for name in policy.split(",")}
    if not loaded:
        raise ConfigError(
            f"algorithm.adv_estimator={estimator} is registered in verl by the plugin {PLUGIN!r}, which "
            f"VERL_USE_EXTERNAL_PLUGINS={policy} keeps verl from loading: add {PLUGIN} to it or unset it"
        )
    if PLUGIN not in {point.name for point in entry_points(group="verl.plugins")}:
        raise ConfigError(
            f"algorithm.adv_estimator={estimator} needs writing-rl's verl plugin {PLUGIN!r}, not in this "
            "environment's package metadata: reinstall writing-rl (pip install -e .)"
        )
    return f"advantage estimator {estimator}: verl plugin {PLUGIN} installed"


# actor_rollout_ref.rollout.name / reward.reward_model.rollout.name -> what the preflight calls the engine
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


def _engine(rollout) -> tuple[str, str]:
    """The rollout engine configured, and what one replica of it runs on."""
    from writing_rl.cpu_backend.platform_name import ROLLOUT

    name = str(rollout.get("name") or "vllm")
    if name == ROLLOUT:
        return f"{ROLLOUT} (CPU rollout)", "device(s)"
    return ENGINE_NAMES.get(name, name), "GPU(s)"


def _replica_gpus(rollout) -> int:
    """GPUs one rollout replica takes, as verl counts them (workers/rollout/llm_server.py)."""
    sizes = ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    return math.prod(int(rollout.get(size) or 1) for size in sizes)


def check_gpu_layout(config) -> list[str]:
    """Each rollout replica fits the GPUs it is given. With fewer, verl starts no policy replica (the run
    hangs at its first rollout) or stops at a GenRM's start, both on the cluster."""
    from writing_rl.settings import ConfigError
    from writing_rl.tools.shared.trainers import trainer_of

    trainer, rollout, genrm = config.trainer, config.actor_rollout_ref.rollout, config.reward.reward_model
    if trainer_of(config) in ("fully-async", "one-step-off"):  # the rollout's own GPUs, a top-level section
        pool = (config.rollout.n_gpus_per_node, config.rollout.nnodes, "rollout.n_gpus_per_node x rollout.nnodes")
    elif trainer_of(config) == "v1-separate-async":
        pool = (rollout.n_gpus_per_node, rollout.nnodes, "actor_rollout_ref.rollout.n_gpus_per_node x nnodes")
    else:
        pool = (trainer.n_gpus_per_node, trainer.nnodes, "trainer.n_gpus_per_node x trainer.nnodes")
    pools = [("the policy", "actor_rollout_ref.rollout", int(pool[0]) * int(pool[1]), pool[2], rollout)]
    if genrm.get("enable"):
        if genrm.get("enable_resource_pool"):
            pool = (genrm.n_gpus_per_node, genrm.nnodes, "its pool, reward.reward_model.n_gpus_per_node x nnodes")
        else:
            pool = (trainer.n_gpus_per_node, trainer.nnodes, "the policy's, colocated")
        pools.append(("the GenRM", "reward.reward_model.rollout", int(pool[0]) * int(pool[1]), pool[2], genrm.rollout))
    lines = []
    for who, key, gpus, source, engine in pools:
        size = _replica_gpus(engine)
        if gpus == 0:
            raise ConfigError(f"{key}: {who} has no GPUs ({source} = 0): no replica could start; set them")
        if gpus < size:
            raise ConfigError(
                f"{key}: a replica takes {size} GPUs (tensor x data x pipeline parallel sizes) but {who} has "
                f"{gpus} ({source}): no replica could start. Set {key}.tensor_model_parallel_size to at most {gpus}"
            )
        spare = gpus % size
        if spare:
            lines.append(f"WARNING {spare} of {who}'s {gpus} GPUs serve no replica ({key}: {size} GPUs each)")
        else:
            name, unit = _engine(engine)
            lines.append(f"{who}: {gpus // size} {name} replica(s) of {size} {unit} on {gpus} {unit}")
    return lines


def check_config(config) -> list[str]:
    """Raise on the first problem; return what was checked."""
    verl, environment, reward = (stage(config) for stage in CONFIG_STAGES)
    return verl + reward + environment


def check_verl_settings(config) -> list[str]:
    """The trainer's own settings: what verl can run, its ``validate_config``, the GPU layout."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from writing_rl.settings import ConfigError
    from writing_rl.tools.shared.trainers import trainer_of, unmet, unsupported

    refused = unsupported(config)
    if refused:
        raise ConfigError(refused)
    problems = unmet(config)
    if problems:
        raise ConfigError("; ".join(problems))
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    return [f"trainer {trainer_of(config)}", "verl validate_config", *check_gpu_layout(config)]


def check_environment(config) -> list[str]:
    """What this environment must offer the trainer: its packages, the CPU platform, our verl plugin."""
    checked = [check_trainer_packages(config), check_backend(config), check_estimator_plugin(config)]
    return [line for line in checked if line]


def check_reward_settings(config) -> list[str]:
    """The reward manager and reward fn as verl's reward workers load them, and ``reward.reward_kwargs``."""
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    from writing_rl.reward_loop.config import ManagerConfig, worker_concurrency
    from writing_rl.reward_loop.group_manager import GroupRewardManager, check_streaming_capacity
    from writing_rl.reward_loop.reward_fn import load_reward_fn
    from writing_rl.settings import ConfigError
    from writing_rl.tools.shared.trainers import judge_health_route

    checked = []
    manager_cls = resolve_reward_manager_cls(config)
    checked.append(f"reward manager {manager_cls.__module__}.{manager_cls.__name__}")
    reward_fn = load_reward_fn(config) if get_custom_reward_fn(config) is not None else None
    if reward_fn is not None:
        checked.append(f"reward fn {reward_fn.where}")
        on_parse_error = (config.reward.get("reward_kwargs") or {}).get("on_parse_error") or "loss"
        checked.append(reward_fn.check_options(on_parse_error))
    if runs_our_manager(config):
        hosted = bool(config.reward.reward_model.enable)
        if hosted and not config.reward.reward_model.get("model_path"):
            raise ConfigError(
                "reward.reward_model.enable=true: set reward.reward_model.model_path to the GenRM to host"
            )
        # When verl hosts the GenRM its router address is only known at run time; any address will do here.
        settings = ManagerConfig.from_verl(config, "verl-reward-router:0" if hosted else None)
        if reward_fn is None:
            raise ConfigError(
                "writing-rl's reward managers score with a judge-based reward fn: set "
                "reward.custom_reward_function.path to a method's fn (docs/methods/)"
            )
        paid = reward_fn.failure_score(settings.failure_score)
        source = "reward.reward_kwargs.failure_score" if settings.failure_score is not None else "the method's loss"
        checked.append(f"a failed sample is paid {paid:g} ({source})")
        share = worker_concurrency(settings.judge.max_concurrency, int(config.reward.num_workers))
        explicit_url = (config.reward.get("reward_kwargs") or {}).get("judge", {}).get("base_url")
        judge = ", ".join(settings.judge.endpoints)
        judge = judge if explicit_url or not hosted else "verl's reward router (GenRM hosted by verl)"
        if hosted and explicit_url:
            checked.append(
                f"WARNING judge.base_url={explicit_url} is set: rewards go there, not to the GenRM verl hosts "
                "(leave it null to use verl's reward router)"
            )
        checked.append(
            f"judge {judge} model {settings.judge.model}: {share} requests in flight per reward worker "
            f"x {config.reward.num_workers} workers"
        )
        if issubclass(manager_cls, GroupRewardManager):
            groups = settings.groups
            check_streaming_capacity(config)
            checked.append(
                f"group rewards: reward workers have room for every waiting rollout of a step "
                f"(groups.timeout_s={groups.timeout_s:g})"
            )
        for extra in reward_fn.method.extras if reward_fn.method else ():
            check = getattr(extra, "preflight", None)
            line = check(settings.extras[extra.name]) if check and extra.name in settings.extras else None
            if line:
                checked.append(line)
        checked.append(judge_health_route(config))
        if settings.judge.api_key_env:
            name = settings.judge.api_key_env
            if os.environ.get(name):
                checked.append(f"API key env var ${name}: set (reward workers need it)")
            else:
                checked.append(f"WARNING API key env var ${name}: not set in this shell (reward workers need it)")
    return checked


# Independent of each other: the preflight reports a problem in each, check_config stops at the first.
CONFIG_STAGES = (check_verl_settings, check_environment, check_reward_settings)


def runs_our_manager(config) -> bool:
    """Whether verl will score with one of our reward managers (which hand the fn a judge)."""
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    from writing_rl.reward_loop.manager import JudgeRewardManager

    return issubclass(resolve_reward_manager_cls(config), JudgeRewardManager)


def run_check(config_name: str, overrides: Sequence[str], config_dir: str | None = None) -> list[str]:
    from writing_rl.offline.compose import compose

    return check_config(compose(config_name, overrides, config_dir))


# ---------------------------------------------------------------- the paths the run reads


def _name(key: str) -> str:
    return f"{key} ({PATH_KEYS[key]})" if key in PATH_KEYS else key


def _is_remote(value: str, key: str, remote: set[str]) -> bool:
    return "://" in value or "all" in remote or key in remote or PATH_KEYS.get(key) in remote


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def check_paths(config, remote: set[str], report: Report) -> dict[str, list[Path]]:
    """Local paths that exist, by key; missing ones are problems unless hub ids or marked remote."""
    keys = [MODEL_KEY, "data.train_files", "data.val_files"]
    if config.reward.reward_model.get("enable"):
        keys.append(GENRM_KEY)
    found: dict[str, list[Path]] = {}
    for key in keys:
        values = _as_list(_select(config, key))
        if not values:
            report.problem(f"{_name(key)} is not set")
            continue
        for value in values:
            path = Path(value).expanduser()
            if path.exists():
                found.setdefault(key, []).append(path)
            elif _is_remote(value, key, remote):
                report.note(f"{_name(key)}={value}: remote, not checked here")
            elif key in (MODEL_KEY, GENRM_KEY) and HUB_ID.match(value):
                report.note(f"{_name(key)}={value}: not a local path; taken as a hub id the nodes download")
            else:
                report.problem(
                    f"{_name(key)}={value}: no such file or directory here (a path only the cluster sees: "
                    f"REMOTE_PATHS={PATH_KEYS.get(key, key)})"
                )
    return found


def _select(config, key: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(config, key, default=None)
