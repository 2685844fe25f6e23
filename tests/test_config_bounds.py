"""Bounds declared with the field (``option(...)``, writing_rl/settings.py): a judge or reward-loop setting
out of range stops the run at start with the key's full name and its bound, None passes where the field
admits it, and the configuration reference shows each bound."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from writing_rl.judge.config import JudgeConfig
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.settings import ConfigError, allowed, build, option

JUDGE = {"base_url": "http://judge:8000/v1", "model": "m"}
PREFIX = "reward.reward_kwargs"


def manager(**settings) -> ManagerConfig:
    """``reward.reward_kwargs`` read as a reward worker reads it, with each dotted key of ``settings`` set."""
    config = OmegaConf.create({"reward": {"reward_kwargs": {"judge": dict(JUDGE)}}})
    for key, value in settings.items():
        OmegaConf.update(config, f"{PREFIX}.{key}", value, force_add=True)
    return ManagerConfig.from_verl(config)


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("judge.timeout_s", 0, "a number > 0"),
        ("judge.max_concurrency", 0, "a number >= 1"),
        ("judge.max_retries", -1, "a number >= 0"),
        ("judge.concurrency_decrease", 1.0, "a number > 0 and < 1"),
        ("judge.top_p", 1.5, "a number > 0 and <= 1"),
        ("judge.hedge_after", 0.5, "a number >= 1, or 0 (off)"),
        ("judge.max_tokens", 0, "a number >= 1, or null"),
        ("judge.retry_after_max_s", float("inf"), "a finite number >= 0"),
        ("judge.budget.calls", 0, "a number > 0, or null"),
        ("judge.price.prompt_per_mtok", -1.0, "a number >= 0, or null"),
        ("groups.timeout_s", 0, "a number > 0"),
        ("groups.collector_shards", 0, "a number >= 1"),
        ("curriculum.keep_steps", 0, "a number >= 1"),
        ("shadow.fraction", 1.5, "a number >= 0 and <= 1"),
        ("max_parse_error_rate", 1.2, "a number >= 0 and <= 1"),
        ("failure_window", 0, "a number >= 1"),
        ("summary_idle_s", -1, "a number >= 0"),
    ],
)
def test_a_setting_out_of_range_names_its_full_key_and_its_bound(key, value, expected):
    with pytest.raises(ConfigError) as error:
        manager(**{key: value})
    assert str(error.value) == f"{PREFIX}.{key}={value!r}: expected {expected}"


def test_a_choice_of_another_section_is_checked_against_its_own_declaration():
    with pytest.raises(ConfigError, match=rf"^{PREFIX}.on_group_incomplete='skip': expected one of 'fail', 'score'"):
        manager(on_group_incomplete="skip")


def test_none_passes_where_the_field_admits_it_and_only_there():
    settings = manager(**{"judge.max_tokens": None, "judge.budget.calls": None, "judge.price.prompt_per_mtok": None})
    assert settings.judge.max_tokens is None and settings.judge.budget.calls is None
    assert manager(**{"judge.hedge_after": 0}).judge.hedge_after == 0  # off
    with pytest.raises(ConfigError, match=rf"^{PREFIX}.judge.timeout_s=None: expected a number > 0$"):
        manager(**{"judge.timeout_s": None})


def test_a_judge_config_made_in_code_is_bounded_when_validated():
    with pytest.raises(ConfigError, match=rf"^{PREFIX}.judge.min_concurrency=0: expected a number >= 1$"):
        JudgeConfig(**JUDGE, min_concurrency=0).validate()
    with pytest.raises(ConfigError, match=rf"^{PREFIX}.judge.budget.tokens=-5: expected a number > 0, or null$"):
        JudgeConfig(**JUDGE, budget={"tokens": -5}).validate()


def test_the_rules_across_fields_stay():
    with pytest.raises(ConfigError, match=r"failure_min_samples=600: expected at most .*failure_window \(500\)"):
        manager(failure_min_samples=600)
    with pytest.raises(ConfigError, match=r"judge.budget.cost=1.0 is set but reward.reward_kwargs.judge.price is not"):
        manager(**{"judge.budget.cost": 1.0})


@dataclasses.dataclass(frozen=True)
class Knobs:
    share: float = option(0.5, minimum=0, maximum=1)
    wait_s: float = option(1.0, above=0)
    limit: int | None = option(None, minimum=1)
    mode: str = option("a", choices=("a", "b"))
    free: int = 3


def test_option_bounds_read_as_the_reference_writes_them():
    fields = {f.name: f for f in dataclasses.fields(Knobs)}
    assert {name: allowed(f) for name, f in fields.items()} == {
        "share": "0–1",
        "wait_s": "> 0",
        "limit": "≥ 1, or null",
        "mode": "one of: a, b",
        "free": "",
    }
    assert build(Knobs, {"share": 1, "wait_s": 0.001, "limit": None, "free": -7}, "x") == Knobs(1, 0.001, None, "a", -7)
    with pytest.raises(ConfigError, match=r"^x.limit must be of type int \(like 1\), got 1.5$"):
        build(Knobs, {"limit": 1.5}, "x")


def test_the_reference_shows_each_bound():
    path = Path(__file__).resolve().parent.parent / "scripts" / "config_reference.py"
    spec = importlib.util.spec_from_file_location("scripts_config_reference", path)
    reference = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = reference  # dataclasses look their module up
    spec.loader.exec_module(reference)
    page = reference.render()
    assert "| key | default | allowed | |" in page
    for row in (
        "| `timeout_s` | `300.0` | > 0 |",
        "| `hedge_after` | `1.5` | ≥ 1, or 0 (off) |",
        "| `temperature`, `top_p`, `max_tokens` | `0.0`, `1.0`, `4096` | ≥ 0; > 0 and ≤ 1; ≥ 1, or null |",
        "| `max_judge_error_rate`, `max_parse_error_rate`, `max_group_incomplete_rate` | `0.1`, `0.2`, `0.1` | 0–1 |",
        "| `on_judge_error` | `loss` | one of: loss, neutral, raise |",
        "| `keep_steps` | `5` | ≥ 1 |",
        "| `tie_margin` | `0.0` | ≥ 0 |",  # a reward fn's option
    ):
        assert row in page
