"""The judge options of the commands that call a judge themselves (``select``, ``order-references``,
``eval``): the training config's judge with the same shortcuts as ``score``, read into the judge settings
(``writing_rl.offline.judge``). Failed judge calls (``JudgeFailures``) end such a command with
one line through ``writing_rl.tools.cli``."""

from __future__ import annotations

from hydra_configs import DEFAULT_OVERLAY


def add_judge_options(p) -> None:
    """Judge settings of the offline tools: the training config's, with the same shortcuts as `score`."""
    g = p.add_argument_group("judge (default: reward.reward_kwargs.judge of --config-name)")
    g.add_argument("--judge-url", help="shortcut for reward.reward_kwargs.judge.base_url=... (default: the config's)")
    g.add_argument("--judge-model", help="shortcut for reward.reward_kwargs.judge.model=... (default: the config's)")
    g.add_argument(
        "--api-key-env",
        help="env var holding the API key (reward.reward_kwargs.judge.api_key_env; default: the config's)",
    )
    g.add_argument(
        "--max-concurrency",
        type=int,
        help="judge requests in flight (reward.reward_kwargs.judge.max_concurrency; default: the config's)",
    )
    g.add_argument(
        "--timeout-s",
        type=float,
        help="seconds per attempt (reward.reward_kwargs.judge.timeout_s; default: the config's)",
    )
    g.add_argument(
        "--max-retries",
        type=int,
        help="retries per call (reward.reward_kwargs.judge.max_retries; default: the config's)",
    )
    g.add_argument(
        "--config-name", default=DEFAULT_OVERLAY, help=f"overlay in hydra_configs/ (default: {DEFAULT_OVERLAY})"
    )
    g.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    g.add_argument(
        "--cache", help="judge cache file (default: OUT/judge_cache.sqlite); a rerun repeats no answered call"
    )
    g.add_argument(
        "--allow-judge-errors", action="store_true",
        help="accept failed judge calls (counted, never scored): select and order-references write their results, eval exits 0",
    )  # fmt: skip
    g.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. reward.reward_kwargs.judge.temperature=0")


def judge_settings_from(args):
    from writing_rl.offline.judge import load_judge_settings

    shortcuts = judge_overrides(
        args.judge_url, args.judge_model, args.api_key_env, args.max_concurrency, args.timeout_s, args.max_retries
    )
    return load_judge_settings(args.config_name, [*args.overrides, *shortcuts], args.config_dir)


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
