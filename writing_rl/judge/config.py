"""How to reach the judge: ``reward.reward_kwargs.judge``, read by ``ManagerConfig`` (training) and by
the offline tools."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from writing_rl.judge.ensemble_config import EnsembleConfig
from writing_rl.settings import ConfigError, build, check_fields, option, require

PREFIX = "reward.reward_kwargs.judge"


@dataclass(frozen=True)
class JudgePrice:
    """What the judge's tokens cost: ``reward.reward_kwargs.judge.price`` (docs/judges/cost.md)."""

    # Money (one currency of your choice for both) per million prompt / completion tokens, as the endpoint
    # bills them; judge_cost is the sum over a sample's calls. null or 0 (both) = not priced: judge_cost is 0.
    prompt_per_mtok: float | None = option(None, minimum=0)
    completion_per_mtok: float | None = option(None, minimum=0)

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
    calls: int | None = option(None, above=0)
    tokens: int | None = option(None, above=0)
    cost: float | None = option(None, above=0)

    @property
    def limits(self) -> dict[str, float]:
        """The limits that are set, by name."""
        return {name: value for name, value in vars(self).items() if value is not None}


# The nested sections of JudgeConfig, read from a mapping as ManagerConfig reads its own sections.
SECTIONS = {"price": JudgePrice, "budget": JudgeBudget, "ensemble": EnsembleConfig}


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
    max_concurrency: int = option(64, minimum=1)
    # Shrink a worker's limit on 429/503/timeouts and grow it back while latency holds (AIMD,
    # writing_rl/judge/limiter.py); false: a fixed limit of the worker's share.
    adaptive_concurrency: bool = True
    # The adaptive limit of one reward worker never goes below this (nor above its share of max_concurrency).
    min_concurrency: int = option(1, minimum=1)
    # On a rate-limit signal the limit is multiplied by this (at most once per round of requests).
    concurrency_decrease: float = option(0.9, above=0, below=1)
    # The limit grows only while recent latency stays within this factor of the long-run average.
    latency_tolerance: float = option(2.0, minimum=1)
    # A 429 does not use up max_retries: the request waits (Retry-After, else backoff) and queues again,
    # for at most this many seconds in all; then the call fails (JudgeRateLimited).
    rate_limit_wait_s: float = option(600.0, minimum=0)
    # A request still unanswered after this many times the judge's 95th-percentile latency (its last 200
    # replies; and at least 50 ms) gets a copy sent to another endpoint (the same one when alone); after the
    # percentile itself while no request waits for room (a step's last requests). The first reply wins. At
    # most a tenth of the concurrency limit are copies at once. Each copy is a judge call you pay for,
    # counted (judge_hedges); a step waits for its slowest sample. 0 = never.
    hedge_after: float = option(1.5, minimum=1, off=0)
    # Seconds allowed for one HTTP attempt.
    timeout_s: float = option(300.0, above=0)
    # Extra attempts after the first, for 429/5xx, timeouts and dropped connections.
    max_retries: int = option(4, minimum=0)
    # Exponential backoff: base * 2**attempt seconds (half of it jittered), capped at backoff_max_s. A failed
    # attempt goes at once to another endpoint the call has not tried; the backoff applies once every
    # endpoint had its try. Short, so that one flaky reply does not stall a whole training step.
    backoff_base_s: float = option(0.1, minimum=0)
    backoff_max_s: float = option(60.0, minimum=0)
    # Longest wait honoured from a 429/503's Retry-After header, whatever the server asks.
    retry_after_max_s: float = option(60.0, minimum=0)
    # With several endpoints: one that fails this many times in a row (connection errors, timeouts, 5xx)
    # is left out, and tried again with one request after endpoint_cooldown_s.
    endpoint_max_failures: int = option(3, minimum=1)
    endpoint_cooldown_s: float = option(10.0, minimum=0)
    # With several endpoints all left out: a call waits this long for one to come back, then fails
    # (JudgeUnavailable).
    all_down_timeout_s: float = option(60.0, minimum=0)
    # Sampling of the judge.
    temperature: float = option(0.0, minimum=0)
    top_p: float = option(1.0, above=0, maximum=1)
    max_tokens: int | None = option(4096, minimum=1)
    # Extra fields merged into every request body (e.g. {"seed": 0} or vendor-specific switches).
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    # A Hugging Face tokenizer (name or local path) that counts the tokens of a call whose endpoint reports no
    # usage; null: estimated from characters (about 4 a token). Such calls are counted (judge_tokens_estimated).
    usage_tokenizer: str | None = None
    # The section reward.reward_kwargs.judge.price: what a million tokens cost.
    price: JudgePrice = field(default_factory=JudgePrice)
    # The section reward.reward_kwargs.judge.budget: limits on calls, tokens and cost.
    budget: JudgeBudget = field(default_factory=JudgeBudget)
    # The section reward.reward_kwargs.judge.ensemble: several judges voting on each judgment.
    ensemble: EnsembleConfig = field(default_factory=EnsembleConfig)

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
        check_fields(self, prefix)
        for name in SECTIONS:
            check_fields(getattr(self, name), f"{prefix}.{name}")
        require(
            self.budget.cost is None or self.price.priced,
            f"{prefix}.budget.cost={self.budget.cost!r} is set but {prefix}.price is not: the judge's cost cannot be "
            f"counted without a price (set {prefix}.price.prompt_per_mtok and .completion_per_mtok, or budget.cost=null)",
        )
        self.ensemble.judges(self, prefix)  # each member checked as a judge of its own
        return self


def _check_url(name: str, url: object) -> None:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{name} must start with http:// or https://, got {url!r}")
