"""How to reach the judge: ``reward.reward_kwargs.judge``, read by ``ManagerConfig`` (training) and by
the offline tools."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from writing_rl.settings import ConfigError, build, require

PREFIX = "reward.reward_kwargs.judge"


@dataclass(frozen=True)
class JudgePrice:
    """What the judge's tokens cost: ``reward.reward_kwargs.judge.price`` (docs/judges/cost.md)."""

    # Money (one currency of your choice for both) per million prompt / completion tokens, as the endpoint
    # bills them; judge_cost is the sum over a sample's calls. null or 0 (both) = not priced: judge_cost is 0.
    prompt_per_mtok: float | None = None
    completion_per_mtok: float | None = None

    @property
    def priced(self) -> bool:
        return bool(self.prompt_per_mtok or self.completion_per_mtok)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        prompt, completion = self.prompt_per_mtok or 0.0, self.completion_per_mtok or 0.0
        return (prompt_tokens * prompt + completion_tokens * completion) / 1e6


@dataclass(frozen=True)
class JudgeBudget:
    """The most the run may spend on the judge: ``reward.reward_kwargs.judge.budget`` (docs/judges/cost.md)."""

    # Limits over the run, each split evenly between the reward workers (each worker's client keeps its own
    # count; a restarted run counts from 0). A call that would pass one is refused and stops the step
    # (JudgeBudgetExceeded), whatever on_judge_error says. calls: judge calls; tokens: as judge_tokens counts
    # them; cost: money, as judge.price counts it (needs a price). null = no limit.
    calls: int | None = None
    tokens: int | None = None
    cost: float | None = None

    @property
    def limits(self) -> dict[str, float]:
        """The limits that are set, by name."""
        return {name: value for name, value in vars(self).items() if value is not None}


# The nested sections of JudgeConfig, read from a mapping as ManagerConfig reads its own sections.
SECTIONS = {"price": JudgePrice, "budget": JudgeBudget}


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach the judge: ``reward.reward_kwargs.judge``."""

    # OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1, or a list of them (each request goes to the
    # least-loaded healthy one). When verl hosts the GenRM (reward.reward_model.enable=true) it defaults to
    # verl's reward router.
    base_url: str | list[str] | None = None
    # Model name sent in each request. Defaults to reward.reward_model.model_path when verl hosts the GenRM.
    model: str | None = None
    # Name of the environment variable holding the API key (the key itself never enters config or logs).
    api_key_env: str | None = None
    # Judge requests in flight across *all* reward workers of the run (split evenly between them).
    max_concurrency: int = 64
    # Shrink a worker's limit on 429/503/timeouts and grow it back while latency holds (AIMD,
    # writing_rl/judge/limiter.py); false: a fixed limit of the worker's share.
    adaptive_concurrency: bool = True
    # The adaptive limit of one reward worker never goes below this (nor above its share of max_concurrency).
    min_concurrency: int = 1
    # On a rate-limit signal the limit is multiplied by this (at most once per round of requests).
    concurrency_decrease: float = 0.9
    # The limit grows only while recent latency stays within this factor of the long-run average.
    latency_tolerance: float = 2.0
    # A 429 does not use up max_retries: the request waits (Retry-After, else backoff) and queues again,
    # for at most this many seconds in all; then the call fails (JudgeRateLimited).
    rate_limit_wait_s: float = 600.0
    # A request still unanswered after this many times the judge's 95th-percentile latency (its last 200
    # replies; and at least 0.2 s) gets a copy sent to another endpoint (the same one when alone); the first
    # reply wins. At most a tenth of the concurrency limit are copies at once. Each copy is a judge call you
    # pay for, counted (judge_hedges); a step waits for its slowest sample. 0 = never.
    hedge_after: float = 1.5
    # Seconds allowed for one HTTP attempt.
    timeout_s: float = 300.0
    # Extra attempts after the first, for 429/5xx, timeouts and dropped connections.
    max_retries: int = 4
    # Exponential backoff: base * 2**attempt seconds (half of it jittered), capped at backoff_max_s. A failed
    # attempt goes at once to another endpoint the call has not tried; the backoff applies once every
    # endpoint had its try. Short, so that one flaky reply does not stall a whole training step.
    backoff_base_s: float = 0.1
    backoff_max_s: float = 60.0
    # Longest wait honoured from a 429/503's Retry-After header, whatever the server asks.
    retry_after_max_s: float = 60.0
    # With several endpoints: one that fails this many times in a row (connection errors, timeouts, 5xx)
    # is left out, and tried again with one request after endpoint_cooldown_s.
    endpoint_max_failures: int = 3
    endpoint_cooldown_s: float = 10.0
    # With several endpoints all left out: a call waits this long for one to come back, then fails
    # (JudgeUnavailable).
    all_down_timeout_s: float = 60.0
    # Sampling of the judge.
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = 4096
    # Extra fields merged into every request body (e.g. {"seed": 0} or vendor-specific switches).
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    # A Hugging Face tokenizer (name or local path) that counts the tokens of a call whose endpoint reports no
    # usage; null: estimated from characters (about 4 a token). Such calls are counted (judge_tokens_estimated).
    usage_tokenizer: str | None = None
    # The section reward.reward_kwargs.judge.price: what a million tokens cost.
    price: JudgePrice = field(default_factory=JudgePrice)
    # The section reward.reward_kwargs.judge.budget: limits on calls, tokens and cost.
    budget: JudgeBudget = field(default_factory=JudgeBudget)

    def __post_init__(self) -> None:
        for name, section in SECTIONS.items():
            value = getattr(self, name)
            if value is None:
                value = section()
            elif isinstance(value, Mapping):
                value = build(section, dict(value), f"{PREFIX}.{name}")
            elif not isinstance(value, section):
                keys = ", ".join(f.name for f in fields(section))
                raise ConfigError(f"{PREFIX}.{name} must be a section with the keys {keys}, got {value!r}")
            object.__setattr__(self, name, value)

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

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The judge URLs: ``base_url`` as a tuple (one or more; empty when unset)."""
        if not self.base_url:
            return ()
        return (self.base_url,) if isinstance(self.base_url, str) else tuple(self.base_url)

    def validate(self) -> JudgeConfig:
        prefix = PREFIX
        if not self.base_url:
            raise ConfigError(
                f"{prefix}.base_url is not set and verl hosts no GenRM (reward.reward_model.enable=false): "
                "point it at an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
            )
        if isinstance(self.base_url, str):
            _check_url(f"{prefix}.base_url", self.base_url)
        elif isinstance(self.base_url, (list, tuple)):
            for index, url in enumerate(self.base_url):
                _check_url(f"{prefix}.base_url[{index}]", url)
            duplicates = sorted({url for url in self.base_url if self.base_url.count(url) > 1})
            require(not duplicates, f"{prefix}.base_url lists {', '.join(duplicates)} more than once")
        else:
            raise ConfigError(f"{prefix}.base_url must be a URL or a list of URLs, got {self.base_url!r}")
        if not self.model:
            raise ConfigError(f"{prefix}.model is not set: name the judge model the endpoint serves")
        require(self.max_concurrency >= 1, f"{prefix}.max_concurrency must be >= 1, got {self.max_concurrency}")
        require(self.timeout_s > 0, f"{prefix}.timeout_s must be > 0, got {self.timeout_s}")
        require(self.max_retries >= 0, f"{prefix}.max_retries must be >= 0, got {self.max_retries}")
        require(
            self.hedge_after == 0 or self.hedge_after >= 1,
            f"{prefix}.hedge_after must be 0 (off) or >= 1, got {self.hedge_after}",
        )
        require(self.backoff_base_s >= 0, f"{prefix}.backoff_base_s must be >= 0, got {self.backoff_base_s}")
        require(
            0 <= self.retry_after_max_s < float("inf"),
            f"{prefix}.retry_after_max_s must be a finite number >= 0, got {self.retry_after_max_s}",
        )
        require(self.max_tokens is None or self.max_tokens >= 1, f"{prefix}.max_tokens must be >= 1 or null")
        require(self.min_concurrency >= 1, f"{prefix}.min_concurrency must be >= 1, got {self.min_concurrency}")
        require(
            0 < self.concurrency_decrease < 1,
            f"{prefix}.concurrency_decrease must be within (0, 1), got {self.concurrency_decrease}",
        )
        require(self.latency_tolerance >= 1, f"{prefix}.latency_tolerance must be >= 1, got {self.latency_tolerance}")
        require(self.rate_limit_wait_s >= 0, f"{prefix}.rate_limit_wait_s must be >= 0, got {self.rate_limit_wait_s}")
        require(
            self.endpoint_max_failures >= 1,
            f"{prefix}.endpoint_max_failures must be >= 1, got {self.endpoint_max_failures}",
        )
        require(
            self.endpoint_cooldown_s >= 0, f"{prefix}.endpoint_cooldown_s must be >= 0, got {self.endpoint_cooldown_s}"
        )
        require(
            self.all_down_timeout_s >= 0, f"{prefix}.all_down_timeout_s must be >= 0, got {self.all_down_timeout_s}"
        )
        _check_spend_sections(self.price, self.budget)
        return self


def _check_spend_sections(price: JudgePrice, budget: JudgeBudget) -> None:
    for name, value in vars(price).items():
        require(
            value is None or (_is_number(value) and math.isfinite(value) and value >= 0),
            f"{PREFIX}.price.{name} must be a number >= 0 (money per million tokens) or null, got {value!r}",
        )
    for name, value in budget.limits.items():
        counted = "a whole number" if name in ("calls", "tokens") else "a number"
        require(
            _is_number(value) and math.isfinite(value) and value > 0 and (name == "cost" or isinstance(value, int)),
            f"{PREFIX}.budget.{name} must be {counted} > 0 or null (no limit), got {value!r}",
        )
    require(
        budget.cost is None or price.priced,
        f"{PREFIX}.budget.cost={budget.cost!r} is set but {PREFIX}.price is not: the judge's cost cannot be counted "
        f"without a price (set {PREFIX}.price.prompt_per_mtok and .completion_per_mtok, or budget.cost=null)",
    )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_url(name: str, url: object) -> None:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{name} must start with http:// or https://, got {url!r}")
