"""Every option of every shipped reward fn and reward term is checked before a run starts: a misspelt name or
a value out of bounds stops `writing-rl check-config` / the preflight (and a reward worker's start) with one
line naming the full key, the bad value and what is allowed. The cases are generated from the declarations
(each fn's ``RewardOptions``, each term's dataclass), not listed by hand."""

from __future__ import annotations

import copy
import dataclasses
import importlib
from functools import lru_cache

import pytest
from omegaconf import OmegaConf, open_dict

from writing_rl.offline.compose import compose
from writing_rl.settings import ConfigError
from writing_rl.terms import BUILTIN
from writing_rl.tools.cli import main as cli
from writing_rl.tools.preflight.config_checks import check_config

JUDGE = ("reward.reward_kwargs.judge.base_url=http://judge:8000/v1", "reward.reward_kwargs.judge.model=m")
FN_PREFIX = "reward.custom_reward_function.reward_kwargs"
# Each shipped overlay and the module of its reward fn.
OVERLAYS = {
    "writing_rl": "reward_fns.pairwise",
    "brpo": "reward_fns.brpo",
    "grrm_mt_grpo": "reward_fns.group_ranking",
    "rubric": "reward_fns.rubric",
    "genrm_pairwise_rl": "reward_fns.preference",
    "grrm_rlvr": "reward_fns.ranking_accuracy",
}


JUDGED = ("writing_rl", "brpo", "grrm_mt_grpo", "rubric")  # the others train a GenRM: no judge to set


@lru_cache(maxsize=None)
def composed(overlay: str):
    return compose(overlay, list(JUDGE) if overlay in JUDGED else [])


def with_setting(overlay: str, key: str, value):
    config = copy.deepcopy(composed(overlay))
    with open_dict(config):
        OmegaConf.update(config, key, value, force_add=True)
    return config


def misspelt(name: str, known: set[str]) -> str:
    """The name with its last letter dropped (or one added to a short name or another option's name)."""
    return name[:-1] if len(name) > 3 and name[:-1] not in known else name + "x"


def bad_value(field: dataclasses.Field):
    """A value the field refuses, and what the error must say of it; None when any value of the type does."""
    choices, minimum = field.metadata.get("choices"), field.metadata.get("minimum")
    if choices:
        value = f"{next(c for c in choices if c is not None)}x"
        return value, [f"={value!r}: expected one of"] + [repr(c) for c in choices]
    if minimum is not None:
        return minimum - 1, [f"={minimum - 1!r}: expected a number >= {minimum:g}"]
    default = field.default
    if isinstance(default, bool):
        return "yes", ["must be of type bool", "'yes'"]
    if isinstance(default, (int, float)):
        return "high", [f"must be of type {type(default).__name__}", "'high'"]
    return None


def fn_options(module: str) -> list[dataclasses.Field]:
    return list(dataclasses.fields(importlib.import_module(module).RewardOptions))


MISSPELT = [
    pytest.param(overlay, f.name, id=f"{overlay}-{f.name}")
    for overlay, module in OVERLAYS.items()
    for f in fn_options(module)
]
BAD_VALUES = [
    pytest.param(overlay, f, id=f"{overlay}-{f.name}")
    for overlay, module in OVERLAYS.items()
    for f in fn_options(module)
    if bad_value(f) is not None
]


@pytest.mark.parametrize("overlay, name", MISSPELT)
def test_a_misspelt_option_of_a_reward_fn_stops_check_config(overlay, name):
    known = {f.name for f in fn_options(OVERLAYS[overlay])}
    wrong = misspelt(name, known)
    with pytest.raises(ConfigError) as error:
        check_config(with_setting(overlay, f"{FN_PREFIX}.{wrong}", 1))
    message = str(error.value)
    assert f"unknown key(s) under {FN_PREFIX}: {wrong}" in message
    assert f"did you mean {FN_PREFIX}.{name}?" in message


@pytest.mark.parametrize("overlay, field", BAD_VALUES)
def test_an_option_out_of_bounds_stops_check_config(overlay, field):
    value, expected = bad_value(field)
    with pytest.raises(ConfigError) as error:
        check_config(with_setting(overlay, f"{FN_PREFIX}.{field.name}", value))
    message = str(error.value)
    assert f"{FN_PREFIX}.{field.name}" in message
    for text in expected:
        assert text in message


TERM_FIELDS = [
    pytest.param(name, f, id=f"{name}-{f.name}") for name, cls in BUILTIN.items() for f in dataclasses.fields(cls)
]


@pytest.mark.parametrize("term, field", TERM_FIELDS)
def test_a_misspelt_setting_of_a_reward_term_stops_check_config(term, field):
    known = {f.name for f in dataclasses.fields(BUILTIN[term])}
    wrong = misspelt(field.name, known)
    prefix = f"reward.reward_kwargs.terms.{term}"
    with pytest.raises(ConfigError) as error:
        check_config(with_setting("writing_rl", f"{prefix}.{wrong}", 1))
    assert f"unknown key(s) under {prefix}: {wrong}" in str(error.value)
    assert f"did you mean {prefix}.{field.name}?" in str(error.value)


def test_a_term_of_your_own_with_a_misspelt_keyword_stops_check_config(tmp_path):
    module = tmp_path / "my_terms.py"
    module.write_text(
        "def brevity(data_source, solution_str, ground_truth, extra_info=None, *, target=100):\n    return 0.0\n"
    )
    prefix = "reward.reward_kwargs.terms.brevity"
    term = {"weight": 0.1, "fn": {"path": str(module), "name": "brevity"}, "targte": 50}
    with pytest.raises(ConfigError) as error:
        check_config(with_setting("writing_rl", prefix, term))
    assert f"{prefix}.targte: {module}:brevity has no such parameter; did you mean {prefix}.target?" in str(error.value)
    term["target"] = term.pop("targte")
    assert check_config(with_setting("writing_rl", prefix, term))


def test_on_parse_error_is_checked_against_what_the_reward_supports():
    with pytest.raises(
        ConfigError, match=r"on_parse_error='raisee': expected one of 'loss', 'tie', 'raise' \(did you mean 'raise'\?\)"
    ):
        check_config(with_setting("brpo", "reward.reward_kwargs.on_parse_error", "raisee"))
    # A rubric has no tie: pkg://reward_fns.rubric says which values it takes.
    with pytest.raises(
        ConfigError, match=r"on_parse_error='tie': pkg://reward_fns.rubric:compute_score supports loss, raise"
    ):
        check_config(with_setting("rubric", "reward.reward_kwargs.on_parse_error", "tie"))


@pytest.mark.parametrize(
    "overlay, override, expected",
    [
        ("brpo", f"{FN_PREFIX}.strategy=bothh", f"{FN_PREFIX}.strategy='bothh': expected one of"),
        ("writing_rl", f"{FN_PREFIX}.win_score=high", f"{FN_PREFIX}.win_score must be of type float"),
        (
            "brpo",
            f"+{FN_PREFIX}.on_parse_error=raisee",
            "the manager passes on_parse_error to the reward fn; not an option (set reward.reward_kwargs.on_parse_error)",
        ),
    ],
)
def test_the_cases_that_used_to_fail_on_the_cluster_stop_check_config(capsys, overlay, override, expected):
    assert cli(["check-config", "--config-name", overlay, *JUDGE, override]) == 2
    assert expected in capsys.readouterr().err


@pytest.mark.parametrize(
    ("overlay", "key", "value", "expected"),
    [
        ("brpo", "votes", 0, [f"{FN_PREFIX}.votes=0: expected a number >= 1"]),
        (
            "writing_rl",
            "stratgy",
            "position-advantage",
            [f"unknown key(s) under {FN_PREFIX}: stratgy", f"did you mean {FN_PREFIX}.strategy?"],
        ),
    ],  # fmt: skip
    ids=["out-of-bounds", "misspelt"],
)
def test_a_reward_worker_refuses_a_bad_option_when_it_starts(tokenizer, overlay, key, value, expected):
    from writing_rl.reward_loop.scoring import WorkerScoring

    with pytest.raises(ConfigError) as error:
        WorkerScoring(with_setting(overlay, f"{FN_PREFIX}.{key}", value), tokenizer)
    assert all(part in str(error.value) for part in expected), str(error.value)
