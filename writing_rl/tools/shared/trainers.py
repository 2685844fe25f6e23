"""The trainers verl 0.9.1 offers, by the name ``TRAINER`` gives them in the scripts: the module each runs
(``python -m <module>``), the overrides that select it on top of one of our overlays, and the combinations
verl cannot run, refused by the preflight before any GPU is asked for (docs/trainers.md).

    python -m writing_rl.tools.shared.trainers NAME    # the module, then one override per line (for bash)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from writing_rl.cpu_backend.platform_name import CHECKPOINT_ENGINE as CPU_CHECKPOINT_ENGINE
from writing_rl.cpu_backend.platform_name import PLATFORM as CPU_PLATFORM
from writing_rl.settings import ConfigError

MAIN_PPO = "verl.trainer.main_ppo"
# verl's entry points with judge health in the tracker, for the trainers whose metrics no configured class reaches
# (writing_rl/reward_loop/health/entry/, docs/judges/health.md). verl's own modules run them too, without it.
_ENTRY = "writing_rl.reward_loop.health.entry"
LEGACY_MAIN = f"{_ENTRY}.main_ppo"
FULLY_ASYNC_MAIN = f"{_ENTRY}.fully_async"
ONE_STEP_OFF_MAIN = f"{_ENTRY}.one_step_off"
VERL_MODULES = {
    LEGACY_MAIN: "verl.trainer.main_ppo",
    FULLY_ASYNC_MAIN: "verl.experimental.fully_async_policy.fully_async_main",
    ONE_STEP_OFF_MAIN: "verl.experimental.one_step_off_policy.main_ppo",
}
V1_MODES = ("sync", "colocate_async", "separate_async")  # trainer.v1.trainer_mode
# Rollout on devices of its own: each new version of the weights goes there through a checkpoint engine.
SENDS_WEIGHTS = ("v1-separate-async", "fully-async", "one-step-off")


@dataclass(frozen=True)
class Trainer:
    name: str
    module: str
    overrides: tuple[str, ...]
    about: str


TRAINERS = {
    t.name: t
    for t in (
        Trainer("v1-sync", MAIN_PPO, ("trainer.use_v1=true", "trainer.v1.trainer_mode=sync"),
                "verl's default: generate a step's rollouts, score, train, repeat"),
        Trainer("v1-colocate-async", MAIN_PPO, ("trainer.use_v1=true", "trainer.v1.trainer_mode=colocate_async"),
                "the next step's rollouts start before this step trains (partial rollouts), on the same GPUs"),
        Trainer("v1-separate-async", MAIN_PPO, ("trainer.use_v1=true", "trainer.v1.trainer_mode=separate_async",
                                                "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl"),
                "rollout GPUs apart from training GPUs, weights sent every parameter_sync_step mini-batches"),
        Trainer("legacy", LEGACY_MAIN, ("trainer.use_v1=false",), "verl's previous (v0) trainer"),
        Trainer("fully-async", FULLY_ASYNC_MAIN, ("+entry=fully_async",),
                "verl.experimental.fully_async_policy: rollouts stream without pause, trained as they come"),
        Trainer("one-step-off", ONE_STEP_OFF_MAIN, ("+entry=one_step_off",),
                "verl.experimental.one_step_off_policy: step n+1 is generated while step n trains"),
    )
}  # fmt: skip


def trainer_of(config) -> str:
    """The TRAINER name of a composed config."""
    if "async_training" in config:
        return "fully-async"
    if "rollout" in config:  # the top-level section one_step_off_ppo_trainer adds
        return "one-step-off"
    if not config.trainer.get("use_v1", True):
        return "legacy"
    mode = str(config.trainer.v1.trainer_mode)
    if mode not in V1_MODES:
        raise ConfigError(f"trainer.v1.trainer_mode={mode}: expected one of {', '.join(V1_MODES)}")
    return "v1-" + mode.replace("_", "-")


def unsupported(config) -> str | None:
    """Why verl 0.9.1 cannot run this trainer with this config, and what to use instead; None when it can."""
    name = trainer_of(config)
    genrm = config.reward.reward_model
    hosted = bool(genrm.get("enable"))
    colocated = hosted and not genrm.get("enable_resource_pool")
    if name == "one-step-off" and hosted:
        return (
            "TRAINER=one-step-off with a GenRM verl hosts (reward.reward_model.enable=true): verl 0.9.1's one-step-off "
            "entry point never maps Role.RewardModel and stops with a KeyError at start. Use a judge endpoint "
            "(reward.reward_kwargs.judge.base_url), or TRAINER=fully-async / v1-separate-async with GENRM=standalone"
        )
    if name in ("fully-async", "v1-separate-async") and colocated:
        return (
            f"TRAINER={name} with a colocated GenRM (reward.reward_model.enable_resource_pool=false): its rollouts "
            "never pause, so the GenRM never gets the GPUs it shares. Use GENRM=standalone "
            "(reward.reward_model.enable_resource_pool=true) or a judge endpoint"
        )
    if name.startswith("v1-") and colocated:
        # verl's v1 trainer gives a colocated reward model only prompts/responses (no ground truth, uid).
        return (
            "a colocated GenRM (reward.reward_model.enable=true, enable_resource_pool=false) needs "
            "trainer.use_v1=false: verl's v1 trainer drops reward_model/data_source/extra_info/uid in that "
            "mode. Use TRAINER=legacy (what +genrm=colocated selects), or +genrm=standalone (streaming, works with v1)"
        )
    return None


def unmet(config) -> list[str]:
    """What the chosen trainer asserts at start, on the cluster, that this config does not meet."""
    name, data = trainer_of(config), config.data
    rollout, actor = config.actor_rollout_ref.rollout, config.actor_rollout_ref.actor
    problems = []
    if name == "v1-separate-async":
        if int(rollout.n_gpus_per_node) * int(rollout.nnodes) == 0:
            problems.append(
                "TRAINER=v1-separate-async generates on GPUs of its own: set actor_rollout_ref.rollout.n_gpus_per_node "
                "and actor_rollout_ref.rollout.nnodes (verl: 0), beside trainer.n_gpus_per_node for training"
            )
        sync = int(config.trainer.v1.separate_async.parameter_sync_step)
        if int(data.train_batch_size) != sync * int(actor.ppo_mini_batch_size):
            problems.append(
                f"TRAINER=v1-separate-async needs data.train_batch_size = trainer.v1.separate_async.parameter_sync_step "
                f"x actor_rollout_ref.actor.ppo_mini_batch_size: {data.train_batch_size} != {sync} x "
                f"{actor.ppo_mini_batch_size}"
            )
    engine = str(rollout.checkpoint_engine.backend)
    on_cpu = str(config.trainer.get("device", "cuda")) == CPU_PLATFORM
    if name in SENDS_WEIGHTS and on_cpu and engine != CPU_CHECKPOINT_ENGINE:
        problems.append(
            f"TRAINER={name} on the CPU backend sends weights to the rollout's own process over gloo: set "
            f"actor_rollout_ref.rollout.checkpoint_engine.backend={CPU_CHECKPOINT_ENGINE} (scripts/tiny_train.sh does), "
            f"not {engine}"
        )
    elif name in SENDS_WEIGHTS and engine == "naive":
        problems.append(
            f"TRAINER={name} sends weights to the rollout's own GPUs: actor_rollout_ref.rollout.checkpoint_engine.backend "
            "must be nccl (or nixl, mooncake), not naive"
        )
    if name == "one-step-off" and config.trainer.get("rollout_data_dir"):
        # RayPPOTrainer.__init__ starts the dump's executor; OneStepOffRayTrainer.__init__ never calls it.
        problems.append(
            "TRAINER=one-step-off with trainer.rollout_data_dir: verl 0.9.1's one-step-off trainer stops at its "
            "first step when it dumps rollouts (AttributeError: no _dump_executor). Leave trainer.rollout_data_dir "
            "unset; reward.reward_kwargs.sample_log_dir logs every reward our workers return"
        )
    hybrid = ("actor_rollout_ref.hybrid_engine", config.actor_rollout_ref.hybrid_engine, False)
    asserted = {  # (key, value, what the entry point asserts): hydra_configs/entry/<entry>.yaml sets each
        "fully-async": [
            ("data.train_batch_size", data.train_batch_size, 0),
            ("data.gen_batch_size", data.get("gen_batch_size"), 1),
            hybrid,
            ("actor_rollout_ref.rollout.calculate_log_probs", rollout.calculate_log_probs, True),
        ],
        "one-step-off": [hybrid],
    }.get(name, [])
    who, entry = "rollouter" if name == "fully-async" else "trainer", name.replace("-", "_")
    problems += [
        f"TRAINER={name} needs {key}={want} (its {who} asserts it; hydra_configs/entry/{entry}.yaml sets it), got {got}"
        for key, got, want in asserted
        if got != want
    ]
    return problems


def judge_health_route(config) -> str:
    """The preflight's line on how the run's ``judge/...`` metrics reach its tracker (docs/judges/health.md)."""
    from writing_rl.reward_loop.health.metrics import reports_health

    name = trainer_of(config)
    if name.startswith("v1-"):
        if reports_health(config):
            return "judge health: judge/... metrics in the tracker every training step (JudgeHealthSampler)"
        return (
            "WARNING judge health: no judge/... metrics in the tracker: trainer.v1.sampler.custom_sampler is not "
            "writing-rl's JudgeHealthSampler (`writing-rl monitor` and the reward workers' log lines still show them)"
        )
    module = TRAINERS[name].module
    return (
        f"judge health: judge/... metrics in the tracker every training step when `python -m {module}` runs it "
        f"(TRAINER={name} does); verl's own `python -m {VERL_MODULES[module]}` offers no hook for them and logs none"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in TRAINERS:
        print(f"TRAINER must be one of {', '.join(TRAINERS)}; got {' '.join(argv) or 'nothing'}", file=sys.stderr)
        return 2
    trainer = TRAINERS[argv[0]]
    print("\n".join((trainer.module, *trainer.overrides)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
