"""The judge settings of an offline tool, read from the same Hydra config as training
(``reward.reward_kwargs.judge`` and the pairwise ``template``), so that a tool judges exactly as the reward
does. The command-line options that choose them: ``writing_rl.tools.commands.judge_options``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from hydra_configs import DEFAULT_OVERLAY
from writing_rl.judge.config import JudgeConfig
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.settings import ConfigError


@dataclass(frozen=True)
class JudgeSettings:
    """The judge an offline tool calls, and the pairwise template it renders."""

    judge: JudgeConfig
    template: str | None = None  # pairwise template file; None = the built-in one


def load_judge_settings(
    config_name: str = DEFAULT_OVERLAY, overrides: Sequence[str] = (), config_dir: str | None = None
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
