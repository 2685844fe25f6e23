"""Settings read from verl's config: the one place where their defaults live.

Judge and infrastructure settings sit under ``reward.reward_kwargs`` (the judge under
``reward.reward_kwargs.judge``); algorithm settings sit under
``reward.custom_reward_function.reward_kwargs`` and are plain keyword arguments of the reward fns.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

ON_JUDGE_ERROR = ("raise", "neutral")


class ConfigError(ValueError):
    """A setting is missing or has a value we cannot use; the message names the config key."""


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach the judge: ``reward.reward_kwargs.judge``."""

    # OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1. When verl hosts the GenRM
    # (reward.reward_model.enable=true) it defaults to verl's reward router.
    base_url: str | None = None
    # Model name sent in each request. Defaults to reward.reward_model.model_path when verl hosts the GenRM.
    model: str | None = None
    # Name of the environment variable holding the API key (the key itself never enters config or logs).
    api_key_env: str | None = None
    # Judge requests in flight across *all* reward workers of the run (split evenly between them).
    max_concurrency: int = 64
    # Seconds allowed for one HTTP attempt.
    timeout_s: float = 300.0
    # Extra attempts after the first, for 429/5xx, timeouts and dropped connections.
    max_retries: int = 4
    # Exponential backoff: base * 2**attempt seconds (half of it jittered), capped at backoff_max_s.
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    # Sampling of the judge.
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = 4096
    # Extra fields merged into every request body (e.g. {"seed": 0} or vendor-specific switches).
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def api_key(self) -> str | None:
        """The API key from the named environment variable; an error if the variable is unset."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"reward.reward_kwargs.judge.api_key_env names ${self.api_key_env}, but that environment "
                f"variable is not set in this process (set it on every node that runs reward workers)"
            )
        return key

    def validate(self) -> JudgeConfig:
        prefix = "reward.reward_kwargs.judge"
        if not self.base_url:
            raise ConfigError(
                f"{prefix}.base_url is not set and verl hosts no GenRM (reward.reward_model.enable=false): "
                "point it at an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{prefix}.base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ConfigError(f"{prefix}.model is not set: name the judge model the endpoint serves")
        _require(self.max_concurrency >= 1, f"{prefix}.max_concurrency must be >= 1, got {self.max_concurrency}")
        _require(self.timeout_s > 0, f"{prefix}.timeout_s must be > 0, got {self.timeout_s}")
        _require(self.max_retries >= 0, f"{prefix}.max_retries must be >= 0, got {self.max_retries}")
        _require(self.backoff_base_s >= 0, f"{prefix}.backoff_base_s must be >= 0, got {self.backoff_base_s}")
        _require(self.max_tokens is None or self.max_tokens >= 1, f"{prefix}.max_tokens must be >= 1 or null")
        return self


@dataclass(frozen=True)
class ManagerConfig:
    """``reward.reward_kwargs``: everything ParallelRewardManager needs besides the reward fn."""

    judge: JudgeConfig = field(default_factory=JudgeConfig)
    # What a judge failure (after retries) does: "raise" fails the step with the endpoint and cause;
    # "neutral" gives the sample the reward fn's neutral reward and judge_error=1.
    on_judge_error: str = "raise"
    # Log one summary line per batch (win/tie/loss, errors, latency percentiles).
    log_summary: bool = True
    # A batch ends when a worker has had no sample in flight for this long.
    summary_idle_s: float = 1.0
    # Return the judge transcripts with each sample (used by `writing-rl score`; verl ignores them).
    keep_transcripts: bool = False

    @classmethod
    def from_verl(
        cls,
        config: Any,
        reward_router_address: str | None = None,
    ) -> ManagerConfig:
        """Read ``config.reward.reward_kwargs`` from verl's full config, filling GenRM defaults."""
        reward = _get(config, "reward", {}) or {}
        raw = _plain(_get(reward, "reward_kwargs", {}) or {})
        judge_raw = dict(raw.pop("judge", None) or {})
        if reward_router_address:
            judge_raw.setdefault("base_url", None)
            judge_raw["base_url"] = judge_raw["base_url"] or f"http://{reward_router_address}/v1"
            genrm_path = _get(_get(reward, "reward_model", {}) or {}, "model_path", None)
            judge_raw["model"] = judge_raw.get("model") or genrm_path
        judge = _build(JudgeConfig, judge_raw, "reward.reward_kwargs.judge").validate()
        settings = _build(cls, {**raw, "judge": judge}, "reward.reward_kwargs")
        if settings.on_judge_error not in ON_JUDGE_ERROR:
            raise ConfigError(
                f"reward.reward_kwargs.on_judge_error must be one of {ON_JUDGE_ERROR}, got {settings.on_judge_error!r}"
            )
        return settings


def worker_concurrency(total: int, num_workers: int) -> int:
    """This worker's share of the run-wide judge concurrency; the shares never add up to more than ``total``."""
    if total < num_workers:
        raise ConfigError(
            f"reward.reward_kwargs.judge.max_concurrency ({total}) is below reward.num_workers ({num_workers}): "
            "each reward worker needs at least one judge slot; raise max_concurrency or lower num_workers"
        )
    return total // num_workers


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _build(cls, values: Mapping[str, Any], prefix: str):
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown key(s) under {prefix}: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return cls(**values)


def _get(node: Any, key: str, default: Any) -> Any:
    if node is None:
        return default
    if hasattr(node, "get"):
        value = node.get(key, default)
        return default if value is None and default is not None else value
    return getattr(node, key, default)


def _plain(node: Any) -> dict:
    """An OmegaConf node or mapping as a plain, resolved dict."""
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(node, DictConfig):
            return OmegaConf.to_container(node, resolve=True)
    except ImportError:  # omegaconf comes with verl; plain dicts work without it
        pass
    return dict(node)
