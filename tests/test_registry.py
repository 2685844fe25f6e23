"""writing_rl/reward_loop/registry.py: every method by name, found through the entry-point group, never listed."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from importlib.metadata import EntryPoint

import pytest
import yaml

import reward_fns
from writing_rl.reward_loop import registry
from writing_rl.reward_loop.contract import RewardMethod, register

from conftest import REPO_DIR


def test_every_module_of_reward_fns_is_one_registered_method_under_a_name_of_its_own():
    found = registry.methods()
    modules = [info.name for info in pkgutil.iter_modules(reward_fns.__path__, "reward_fns.")]
    ours = {name: m for name, m in found.items() if m.module.startswith("reward_fns.")}  # (tests load others)
    assert sorted(m.module for m in ours.values()) == sorted(modules)
    for name, method in ours.items():
        module = importlib.import_module(method.module)
        assert method.method is module.METHOD and method.method.name == name
        assert all(getattr(module, fn).reward_method is module.METHOD for fn in method.fns)
    assert found["writing_rl"].fns == ("compute_score", "compute_group_score")
    assert "tournament" in found


def test_every_overlays_reward_fn_is_a_registered_method():
    paths = {m.path for m in registry.methods().values()}
    for overlay in sorted((REPO_DIR / "hydra_configs").glob("*.yaml")):
        fn = (yaml.safe_load(overlay.read_text()).get("reward") or {}).get("custom_reward_function") or {}
        if fn.get("path"):
            assert fn["path"] in paths, overlay.name


def test_a_package_under_the_entry_point_group_adds_its_methods(tmp_path, monkeypatch):
    package = tmp_path / "their_methods"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "coin.py").write_text(
        "from writing_rl.reward_loop.contract import RewardMethod, register\n"
        "async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **given):\n"
        "    return {'score': 0.0}\n"
        "METHOD = register(compute_score, RewardMethod(name='coin', failure_score=lambda **_: 0.0))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    theirs = EntryPoint(name="theirs", value="their_methods", group=registry.ENTRY_POINTS)
    ours = list(registry.entry_points(group=registry.ENTRY_POINTS))
    monkeypatch.setattr(registry, "entry_points", lambda group: [*ours, theirs])
    try:
        found = registry.methods()
        assert found["coin"].module == "their_methods.coin" and found["coin"].path == "pkg://their_methods.coin"
        assert registry.registered("coin") is found["coin"]
        assert "brpo" in found  # ours still there
    finally:
        registry._BY_NAME.pop("coin", None)
        for name in ("their_methods.coin", "their_methods"):
            sys.modules.pop(name, None)


def test_two_modules_may_not_register_one_name():
    async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **given):
        return {"score": 0.0}

    compute_score.__module__ = "somewhere_else"
    with pytest.raises(ValueError, match="two reward methods are named 'brpo': reward_fns.brpo and somewhere_else"):
        register(compute_score, RewardMethod(name="brpo", failure_score=lambda **_: 0.0))
    assert registry.registered("brpo").module == "reward_fns.brpo"


def test_a_module_imported_again_replaces_its_registration_and_an_unknown_name_lists_the_choices(tmp_path, monkeypatch):
    (tmp_path / "twice.py").write_text(
        "from writing_rl.reward_loop.contract import RewardMethod, register\n"
        "async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **given):\n"
        "    return {'score': 0.0}\n"
        "METHOD = register(compute_score, RewardMethod(name='twice', failure_score=lambda **_: 0.0))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        first = importlib.import_module("twice")
        again = importlib.reload(first)
        assert registry.registered("twice").method is again.METHOD
        assert registry.registered("twice").fns == ("compute_score",)
    finally:
        registry._BY_NAME.pop("twice", None)
        sys.modules.pop("twice", None)
    with pytest.raises(KeyError, match="no reward method is named 'nope': choose one of brpo, "):
        registry.registered("nope")
