"""Settings read from verl's config: the one place where their defaults live.

Judge and infrastructure settings sit under ``reward.reward_kwargs`` (the judge under
``reward.reward_kwargs.judge``); algorithm settings sit under
``reward.custom_reward_function.reward_kwargs`` and are plain keyword arguments of the reward fns.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

ON_JUDGE_ERROR = ("raise", "neutral")
# Sub-sections of reward.reward_kwargs owned by other components (GroupConfig, the curriculum).


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
    # Longest wait honoured from a 429/503's Retry-After header, whatever the server asks.
    retry_after_max_s: float = 60.0
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
        _require(
            0 <= self.retry_after_max_s < float("inf"),
            f"{prefix}.retry_after_max_s must be a finite number >= 0, got {self.retry_after_max_s}",
        )
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
    # Stop the run when more than this share of a batch's samples had a judge reply the reward could
    # not read (parse_error: no or conflicting verdicts, truncated, refused); 1.0 turns the guard off.
    max_parse_error_rate: float = 0.2
    # ... once the batch holds at least this many samples (one reward worker's share of a step).
    parse_error_min_samples: int = 32

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
        # groups / curriculum are read by the components that use them; their key names are checked
        # here too, so a typo fails at start even in a run that never uses the section.
        _build(GroupConfig, raw.pop("groups", None) or {}, "reward.reward_kwargs.groups")
        _build(CurriculumConfig, raw.pop("curriculum", None) or {}, "reward.reward_kwargs.curriculum")
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
        _require(
            0.0 <= settings.max_parse_error_rate <= 1.0,
            f"reward.reward_kwargs.max_parse_error_rate must be within 0-1, got {settings.max_parse_error_rate}",
        )
        _require(
            settings.parse_error_min_samples >= 1,
            f"reward.reward_kwargs.parse_error_min_samples must be >= 1, got {settings.parse_error_min_samples}",
        )
        return settings


@dataclass(frozen=True)
class GroupConfig:
    """``reward.reward_kwargs.groups``: how GroupRewardManager gathers the rollouts of one prompt."""

    # Score a group with the members that arrived when its first member has waited this long
    # (counted as partial_group). Must exceed the spread of rollout finish times within a group.
    timeout_s: float = 1800.0
    # When a complete group holds identical responses, wait this long for more arrivals before sealing
    # it: verl pads batches by repeating samples, and a padded copy must not take a real member's place.
    settle_s: float = 0.2
    # How long members wait for the group's leader to publish the results.
    result_timeout_s: float = 3600.0
    # Finished groups whose results are kept for late duplicates (padded copies); older ones are evicted.
    finished_cache: int = 4096

    @classmethod
    def from_verl(cls, config: Any) -> GroupConfig:
        kwargs = _get(_get(config, "reward", {}) or {}, "reward_kwargs", {}) or {}
        settings = _build(cls, _plain(_get(kwargs, "groups", {}) or {}), "reward.reward_kwargs.groups")
        prefix = "reward.reward_kwargs.groups"
        _require(settings.timeout_s > 0, f"{prefix}.timeout_s must be > 0, got {settings.timeout_s}")
        _require(settings.settle_s >= 0, f"{prefix}.settle_s must be >= 0, got {settings.settle_s}")
        _require(settings.result_timeout_s > 0, f"{prefix}.result_timeout_s must be > 0")
        _require(settings.finished_cache >= 1, f"{prefix}.finished_cache must be >= 1")
        return settings


@dataclass(frozen=True)
class CurriculumConfig:
    """``reward.reward_kwargs.curriculum``: Writing-RL's reference scheduling (writing_rl/curriculum.py)."""

    # Off: every sample is judged against its first reference.
    enable: bool = True
    # Where level snapshots go; null = {trainer.default_local_dir}/curriculum (next to verl's checkpoints).
    state_dir: str | None = None
    # Changes are written at most this often (one snapshot per burst of changes).
    snapshot_interval_s: float = 1.0
    # Snapshots kept per verl checkpoint step (for resuming from step S with the levels of step S).
    keep_steps: int = 5
    # Where verl writes checkpoints (and latest_checkpointed_iteration.txt): filled from
    # trainer.default_local_dir; resume_step: the step verl resumes from (None: fresh or no checkpoint).
    checkpoint_dir: str | None = None
    resume_step: int | None = None
    resume: bool = True

    @classmethod
    def from_verl(cls, config: Any) -> CurriculumConfig:
        kwargs = _get(_get(config, "reward", {}) or {}, "reward_kwargs", {}) or {}
        raw = _plain(_get(kwargs, "curriculum", {}) or {})
        trainer = _get(config, "trainer", {}) or {}
        checkpoint_dir = _get(trainer, "default_local_dir", None)
        checkpoint_dir = os.path.abspath(os.path.expanduser(str(checkpoint_dir))) if checkpoint_dir else None
        raw.setdefault("state_dir", None)
        if raw["state_dir"] is None and checkpoint_dir:
            raw["state_dir"] = os.path.join(checkpoint_dir, "curriculum")
        resume_mode = _get(trainer, "resume_mode", "auto")
        raw["checkpoint_dir"] = checkpoint_dir
        raw["resume"] = resume_mode != "disable"
        if resume_mode == "resume_path":
            path = str(_get(trainer, "resume_from_path", "") or "")
            raw["resume_step"] = int(path.rstrip("/").split("global_step_")[-1]) if "global_step_" in path else None
        settings = _build(cls, raw, "reward.reward_kwargs.curriculum")
        prefix = "reward.reward_kwargs.curriculum"
        _require(
            not settings.enable or bool(settings.state_dir),
            f"{prefix}.state_dir is not set and no trainer.default_local_dir",
        )
        _require(settings.snapshot_interval_s >= 0, f"{prefix}.snapshot_interval_s must be >= 0")
        _require(settings.keep_steps >= 1, f"{prefix}.keep_steps must be >= 1")
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
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        near = [difflib.get_close_matches(key, list(fields), n=1) for key in unknown]
        hints = "".join(f"; did you mean {prefix}.{m[0]}?" for m in near if m)
        raise ConfigError(
            f"unknown key(s) under {prefix}: {', '.join(unknown)}{hints} (known: {', '.join(sorted(fields))})"
        )
    for key, value in values.items():
        _check_type(f"{prefix}.{key}", value, fields[key].default)
    return cls(**values)


def _check_type(name: str, value: Any, default: Any) -> None:
    """A value of the kind the key's default has (an int does for a float; None is checked by validate)."""
    if value is None or default is None or default is dataclasses.MISSING:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and (isinstance(value, int) or isinstance(default, float))
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        return
    if not ok:
        raise ConfigError(f"{name} must be of type {type(default).__name__} (like {default!r}), got {value!r}")


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
