"""The judge an offline tool uses, read from the same Hydra config as training (``reward.reward_kwargs.judge``
and the pairwise ``template``), so that a tool judges exactly as the reward does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from writing_rl.judge.config import JudgeConfig
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.settings import ConfigError


@dataclass(frozen=True)
class JudgeSettings:
    judge: JudgeConfig
    template: str | None = None  # pairwise template file; None = the built-in one


def judge_overrides(
    judge_url: str | None = None,
    judge_model: str | None = None,
    api_key_env: str | None = None,
    max_concurrency: int | None = None,
    timeout_s: float | None = None,
    max_retries: int | None = None,
) -> list[str]:
    """Hydra overrides for the command-line shortcuts (the same keys as in training)."""
    values = {
        "base_url": judge_url,
        "model": judge_model,
        "api_key_env": api_key_env,
        "max_concurrency": max_concurrency,
        "timeout_s": timeout_s,
        "max_retries": max_retries,
    }
    return [f"reward.reward_kwargs.judge.{key}={value}" for key, value in values.items() if value is not None]


def load_judge_settings(
    config_name: str = "writing_rl", overrides: Sequence[str] = (), config_dir: str | None = None
) -> JudgeSettings:
    """The judge of a training config (composed as ``main_ppo`` would), for use outside training."""
    from writing_rl.tools.shared.verl_config import compose

    config = compose(config_name, overrides, config_dir)
    judge_raw = config.reward.reward_kwargs.get("judge") or {}
    if not judge_raw.get("base_url"):
        raise ConfigError(
            "no judge endpoint: pass --judge-url URL (or reward.reward_kwargs.judge.base_url=URL). Offline tools "
            "do not start verl's GenRM; serve one with `writing-rl serve-judge` or `vllm serve`"
        )
    judge = ManagerConfig.from_verl(config).judge
    fn_kwargs = config.reward.get("custom_reward_function", {}).get("reward_kwargs") or {}
    return JudgeSettings(judge=judge, template=fn_kwargs.get("template"))
