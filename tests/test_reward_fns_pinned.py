"""Per shipped reward fn: what a failed sample is paid (reward.reward_kwargs.failure_score when the user sets it,
else the method's own loss), read the way a reward worker reads it (reward_loop/reward_fn.py)."""

from __future__ import annotations

import importlib

import pytest
from omegaconf import OmegaConf

from writing_rl.protocols import gqm
from writing_rl.reward_loop.config import ManagerConfig
from writing_rl.reward_loop.registry import methods
from writing_rl.reward_loop.reward_fn import ConfiguredFn

MODULES = sorted(m.module.removeprefix("reward_fns.") for m in methods().values())  # every installed method


def worker_view(module: str, fn_options: dict, failure_score=None, name: str = "compute_score"):
    """(the fn with its module's METHOD, as reward_loop/reward_fn.py loads it; reward.reward_kwargs.failure_score
    as the worker reads it). METHOD is taken from the module, not from the fn's registration, so that the test
    also runs under mutmut, whose wrapper hides the attribute register sets (test_method_plugins.py checks
    the registration)."""
    manager = {"judge": {"base_url": "http://judge:8000/v1", "model": "m"}}
    if failure_score is not None:
        manager["failure_score"] = failure_score
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": f"pkg://reward_fns.{module}",
                    "name": name,
                    "reward_kwargs": fn_options,
                },
                "reward_kwargs": manager,
            }
        }
    )
    loaded = importlib.import_module(f"reward_fns.{module}")
    fn = ConfiguredFn(getattr(loaded, name), f"pkg://reward_fns.{module}:{name}", loaded.METHOD, fn_options)
    return fn, ManagerConfig.from_verl(config).failure_score


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("configured", [-0.75, 0.25])
def test_a_failure_score_the_user_sets_is_paid_whatever_method_is_registered(module, configured):
    fn, setting = worker_view(module, {}, failure_score=configured)
    assert fn.failure_score(setting) == configured


# The method's loss by each module's definition, under the fn options given.
METHOD_LOSSES = [
    pytest.param("pairwise", {}, 0.0, id="pairwise-loss_score-default"),
    pytest.param("pairwise", {"loss_score": -0.25}, -0.25, id="pairwise-loss_score"),
    pytest.param("brpo", {}, -1.0, id="brpo-reference-preferred"),
    pytest.param("group_ranking", {"score_scale": 0.5}, gqm.MIN_SCORE * 0.5, id="grrm-lowest-score"),
    pytest.param("rubric", {}, 0.0, id="rubric-least-reward"),
    pytest.param("preference", {}, 0.0, id="preference-wrong-answer"),
    pytest.param("preference", {"tie_score": 0.5}, 0.0, id="preference-tie-above-wrong"),
    pytest.param("preference", {"tie_score": -0.5}, -0.5, id="preference-tie-below-wrong"),
    pytest.param("ranking_accuracy", {"score_scale": 2.0}, 0.0, id="ranking-accuracy-malformed"),
    pytest.param("tournament", {"aggregation": "win_rate"}, 0.0, id="tournament-lost-every-game"),
]


@pytest.mark.parametrize("module, fn_options, loss", METHOD_LOSSES)
def test_without_a_failure_score_a_failed_sample_is_paid_the_methods_loss(module, fn_options, loss):
    fn, setting = worker_view(module, fn_options)
    assert setting is None
    assert fn.failure_score(setting) == loss
    assert isinstance(fn.failure_score(setting), float)


def test_the_pairwise_group_entry_pays_the_same_failure_score_as_the_per_sample_one():
    group, _ = worker_view("pairwise", {"loss_score": -0.25}, name="compute_group_score")
    assert group.failure_score(None) == -0.25
    group, setting = worker_view("pairwise", {"loss_score": -0.25}, failure_score=-2.0, name="compute_group_score")
    assert group.failure_score(setting) == -2.0
