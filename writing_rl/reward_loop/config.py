"""The reward workers' settings, read once from verl's config, with their defaults.

Infrastructure settings sit under ``reward.reward_kwargs`` (the judge under ``reward.reward_kwargs.judge``,
``JudgeConfig`` in writing_rl/judge/config.py); algorithm settings sit under
``reward.custom_reward_function.reward_kwargs`` and are plain keyword arguments of the reward fns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from writing_rl.judge.config import JudgeConfig
from writing_rl.reward_loop import registry
from writing_rl.reward_loop.failures import ON_PARSE_ERROR
from writing_rl.settings import ConfigError, build, check_bounds, get, option, plain, require
from writing_rl.terms import RewardTerms, Watches

ON_JUDGE_ERROR = ("loss", "neutral", "raise")
ON_GROUP_INCOMPLETE = ("fail", "score")
FROM_TRAINER = {"from": "trainer"}  # a field filled from verl's trainer section, not a setting of ours
# A field filled from reward.reward_kwargs.on_group_incomplete, not a setting of this section.
FROM_FAILURE_SETTINGS = {"from": "reward.reward_kwargs"}


@dataclass(frozen=True)
class GroupConfig:
    """``reward.reward_kwargs.groups``: how the rollouts of one prompt meet: GroupRewardManager's rendezvous,
    and the curriculum's group tallies (which use ``timeout_s``)."""

    # A group whose rollouts have not all arrived this long after its first one (verl aborted a rollout,
    # a worker died, a filter dropped one) is incomplete: see reward.reward_kwargs.on_group_incomplete.
    # Must exceed the spread of rollout finish times within a group.
    timeout_s: float = option(1800.0, above=0)
    on_incomplete: str = field(default="fail", metadata=FROM_FAILURE_SETTINGS)
    # When a complete group holds identical responses, wait this long for more arrivals before sealing
    # it: verl pads batches by repeating samples, and a padded copy must not take a real member's place.
    settle_s: float = option(0.2, minimum=0)
    # A reward worker gathers the members and results it sends to a collector for this long before a
    # call (one call in flight at a time), and a collector gathers a worker's results this long before
    # answering its poll: fewer, larger calls in verl's streaming mode, at the cost of this much latency.
    # (The curriculum's scheduler calls wait for no window: one in flight carries what arrived meanwhile.)
    batch_window_s: float = option(0.02, minimum=0)
    # How long members wait for the group's leader to publish the results.
    result_timeout_s: float = option(3600.0, above=0)
    # Finished groups whose results are kept for late duplicates (padded copies); older ones are evicted.
    finished_cache: int = option(4096, minimum=1)
    # Collector actors; groups are spread over them by uid. One serves thousands of joins per second;
    # raise it for streaming runs with many reward workers.
    collector_shards: int = option(1, minimum=1)
    # Ray resources each collector actor asks for, to pin the collectors to the nodes that offer them:
    # {"node:__internal_head__": 0.01} is the head node, or a custom resource of your nodes. Held for the
    # actor's life, so ask for a small share. {} = wherever Ray puts them (usually the node of the first
    # reward worker that needs one).
    actor_resources: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_verl(cls, config: Any) -> GroupConfig:
        kwargs = get(get(config, "reward", {}) or {}, "reward_kwargs", {}) or {}
        prefix = "reward.reward_kwargs.groups"
        raw = plain(get(kwargs, "groups", {}) or {})
        if "on_incomplete" in raw:  # filled from on_group_incomplete below: set here, it would be overwritten
            raise ConfigError(f"{prefix}.on_incomplete is not a setting: set reward.reward_kwargs.on_group_incomplete")
        on_incomplete = get(kwargs, "on_group_incomplete", "fail")
        declared = ManagerConfig.__dataclass_fields__["on_group_incomplete"]
        check_bounds("reward.reward_kwargs.on_group_incomplete", on_incomplete, declared)
        settings = build(cls, {**raw, "on_incomplete": on_incomplete}, prefix)
        check_actor_resources(settings.actor_resources, f"{prefix}.actor_resources")
        return settings


ON_DRIFT = ("warn", "stop")
# Where the shadow's judge differs from reward.reward_kwargs.judge's defaults: it scores a share of the samples.
SHADOW_JUDGE_DEFAULTS = {"max_concurrency": 16}


@dataclass(frozen=True)
class ShadowConfig:
    """``reward.reward_kwargs.shadow``: a second judge scoring a random share of the training rollouts with the
    same reward fn, prompts and readers, in the background: its rewards never change a reward. It tells whether
    the training judge's reward is confirmed, and watches for drift (reward_loop/shadow/, docs/trust-your-judge.md)."""

    # Share of training rollouts (of groups, under GroupRewardManager) the shadow judge scores too; 0 = off.
    # Validation rows and samples whose training call failed are never shadowed.
    fraction: float = option(0.0, minimum=0, maximum=1)
    # How to reach the shadow judge: the keys of reward.reward_kwargs.judge (base_url, model, api_key_env,
    # max_concurrency, timeout_s, price, budget, ...). Its failures are counted (shadow_failed), never paid.
    judge: JudgeConfig = field(default_factory=lambda: JudgeConfig(**SHADOW_JUDGE_DEFAULTS))
    # What drift does: warn (a warning in the reward worker's log, shadow_drift=1 in the metrics) or stop
    # (the step fails, as the failure guard's stop does).
    on_drift: str = option("warn", choices=ON_DRIFT)
    # Drift, per reward worker (reward_loop/shadow/watch.py): its first drift_window shadowed samples are the
    # baseline; each later drift_window of them is a look. A look sees drift when the training judge's mean
    # reward rose by drift_min_gain or more, the shadow's by at most half that (flat or falling), and the gap's
    # growth is drift_z standard errors or more; drift_looks looks in a row make drift. In reward units: BRPO's
    # rewards span -1..1, so 0.2 there is what 0.1 is to Writing-RL's 0..1.
    drift_window: int = option(100, minimum=2)
    drift_min_gain: float = option(0.1, minimum=0)
    drift_z: float = option(3.0, minimum=0)
    drift_looks: int = option(3, minimum=1)
    # A shadowed sample agrees when its two rewards differ by this much or less (0: the same reward; a
    # rubric's graded scores may want a margin).
    agree_within: float = option(0.0, minimum=0)
    # Shadow scorings in flight per reward worker at most; a sample chosen beyond that is skipped (counted:
    # shadow_skipped): a slow shadow judge never holds up training nor piles up work.
    max_pending: int = option(64, minimum=1)
    # Seeds the choice of the shadowed samples.
    seed: int = 0

    @classmethod
    def from_verl(cls, config: Any) -> ShadowConfig:
        kwargs = get(get(config, "reward", {}) or {}, "reward_kwargs", {}) or {}
        prefix = "reward.reward_kwargs.shadow"
        raw = plain(get(kwargs, "shadow", {}) or {})
        judge_raw = dict(raw.pop("judge", None) or {})
        settings = build(cls, raw, prefix)
        judge = build(JudgeConfig, {**SHADOW_JUDGE_DEFAULTS, **judge_raw}, f"{prefix}.judge")
        if settings.on:
            for key in ("base_url", "model"):
                require(
                    bool(getattr(judge, key)),
                    f"{prefix}.judge.{key} is not set: a shadow (fraction={settings.fraction:g}) scores with a judge of "
                    "its own; name its endpoint and model (e.g. a stronger API judge than the training one)",
                )
            try:
                judge.validate()
            except ConfigError as err:
                raise ConfigError(str(err).replace("reward.reward_kwargs.judge", f"{prefix}.judge")) from None
        return replace(settings, judge=judge)

    @property
    def on(self) -> bool:
        return self.fraction > 0


# Ray takes these as num_cpus / num_gpus, not as resources; the shared actors hold none.
NOT_RESOURCES = ("CPU", "GPU")
# Ray's finest resource amount (ray._raylet.RESOURCE_UNIT_SCALING).
MIN_RESOURCE_AMOUNT = 0.0001


def check_actor_resources(resources: Any, key: str) -> None:
    """``resources`` is a mapping of Ray resource names to amounts Ray accepts for an actor."""
    require(
        isinstance(resources, dict),
        f"{key} must be a mapping of Ray resource names to amounts, like {{'node:__internal_head__': 0.01}}, "
        f"got {resources!r}",
    )
    for name, amount in resources.items():
        require(isinstance(name, str) and bool(name), f"{key}: resource names must be non-empty strings, got {name!r}")
        require(
            name not in NOT_RESOURCES,
            f"{key}.{name}: the shared actors take no {name}; pin them with a custom resource or "
            "node:__internal_head__ (the head node) instead",
        )
        number = isinstance(amount, (int, float)) and not isinstance(amount, bool)
        require(
            number and math.isfinite(amount) and amount >= MIN_RESOURCE_AMOUNT,
            f"{key}.{name} must be a number >= {MIN_RESOURCE_AMOUNT} (Ray's finest amount), got {amount!r}",
        )


@dataclass(frozen=True)
class ManagerConfig:
    """``reward.reward_kwargs``: what a reward worker needs besides the reward fn (both managers)."""

    judge: JudgeConfig = field(default_factory=JudgeConfig)
    # What a judge call that failed after all its retries does to its sample: "loss" pays the reward fn's
    # failure score (no more than a loss) with judge_error=1 and the run goes on; "neutral" pays the reward
    # fn's neutral reward (pairwise: a tie) with judge_error=1; "raise" fails the step.
    on_judge_error: str = option("loss", choices=ON_JUDGE_ERROR)
    # What a judge reply the reward cannot read (no or conflicting verdicts, cut at max_tokens, a refusal)
    # counts as, with parse_error=1: "loss" (never more), "tie" (pairwise and BRPO), or "raise" (fail the step).
    on_parse_error: str = option("loss", choices=ON_PARSE_ERROR)
    # A group whose rollouts never all arrived (groups.timeout_s): "fail" pays each member that arrived the
    # failure score with group_incomplete=1; "score" scores the members that arrived (partial_group=1).
    on_group_incomplete: str = option("fail", choices=ON_GROUP_INCOMPLETE)
    # What a failed sample is paid (judge errors under on_judge_error=loss, incomplete groups); null = the
    # reward method's METHOD.failure_score (ours: a loss); a fn whose module declares no METHOD needs it set.
    failure_score: float | None = None
    # Log one summary line per batch (win/tie/loss, errors, latency percentiles).
    log_summary: bool = True
    # A batch ends when a worker has had no sample in flight for this long.
    summary_idle_s: float = option(1.0, minimum=0)
    # Return the judge transcripts with each sample (used by `writing-rl score`; verl ignores them).
    keep_transcripts: bool = False
    # A directory where each reward worker appends every reward it returns (one JSON line per rollout:
    # reward, extra info, prompt, response); null = none. For reading a reward config sample by sample.
    sample_log_dir: str | None = None
    # Stop the run when, among a reward worker's last failure_window samples, more than this share had a
    # judge call fail after its retries (judge_error) / a judge reply the reward could not read
    # (parse_error: no or conflicting verdicts, truncated, refused) / a group that never completed
    # (group_incomplete). 1.0 turns a check off.
    max_judge_error_rate: float = option(0.1, minimum=0, maximum=1)
    max_parse_error_rate: float = option(0.2, minimum=0, maximum=1)
    max_group_incomplete_rate: float = option(0.1, minimum=0, maximum=1)
    # ... and more than this share had a reward term fail (term_error: it raised or gave no finite number).
    max_term_error_rate: float = option(0.1, minimum=0, maximum=1)
    # The window: a worker's last samples (verl sends each rollout to a random worker, so they are a
    # random sample of the run's), checked once it holds failure_min_samples.
    failure_window: int = option(500, minimum=1)
    failure_min_samples: int = option(100, minimum=1)
    # reward.reward_kwargs.groups, read with the rest so a typo fails at start even in a run that never uses it.
    groups: GroupConfig = field(default_factory=GroupConfig)
    # The sections of the installed methods' extras (reward.reward_kwargs.<extra's name>: Writing-RL's curriculum),
    # each read by its extra's settings class, by the extra's name; read in every run, as groups is.
    extras: dict[str, Any] = field(default_factory=dict)
    # reward.reward_kwargs.terms: rule-based terms added to the method's reward (writing_rl/terms/).
    terms: RewardTerms = field(default_factory=RewardTerms)
    # reward.reward_kwargs.watch: measures of the policy's text, logged per sample and step, never paid.
    watch: Watches = field(default_factory=Watches)
    # reward.reward_kwargs.shadow: a second judge checking a share of the rewards (off by default).
    shadow: ShadowConfig = field(default_factory=ShadowConfig)

    @classmethod
    def from_verl(
        cls,
        config: Any,
        reward_router_address: str | None = None,
    ) -> ManagerConfig:
        """Read ``config.reward.reward_kwargs`` from verl's full config, filling GenRM defaults."""
        reward = get(config, "reward", {}) or {}
        raw = plain(get(reward, "reward_kwargs", {}) or {})
        judge_raw = dict(raw.pop("judge", None) or {})
        raw_terms = raw.pop("terms", None)
        raw_watch = raw.pop("watch", None)
        raw["groups"] = GroupConfig.from_verl(config)
        raw["extras"] = {}
        for name, extra in registry.extras().items():
            if getattr(extra, "settings", None) is not None:  # (an extra without settings has no section)
                raw.pop(name, None)
                raw["extras"][name] = extra.settings.from_verl(config)
        raw["shadow"] = ShadowConfig.from_verl(config)
        if reward_router_address:
            judge_raw.setdefault("base_url", None)
            judge_raw["base_url"] = judge_raw["base_url"] or f"http://{reward_router_address}/v1"
            genrm_path = get(get(reward, "reward_model", {}) or {}, "model_path", None)
            judge_raw["model"] = judge_raw.get("model") or genrm_path
        judge = build(JudgeConfig, judge_raw, "reward.reward_kwargs.judge").validate()
        settings = build(cls, {**raw, "judge": judge}, "reward.reward_kwargs")
        rollout = get(get(get(config, "actor_rollout_ref", {}) or {}, "rollout", {}) or {}, "response_length", None)
        terms, watch = RewardTerms.from_config(raw_terms, rollout), Watches.from_config(raw_watch)
        settings = replace(settings, terms=terms, watch=watch)
        require(
            settings.failure_min_samples <= settings.failure_window,
            f"reward.reward_kwargs.failure_min_samples={settings.failure_min_samples}: expected at most "
            f"reward.reward_kwargs.failure_window ({settings.failure_window})",
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
