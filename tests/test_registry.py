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


pytestmark = pytest.mark.usefixtures("registrations_undone")

METHOD_SOURCE = (
    "from writing_rl.reward_loop.contract import RewardMethod, register\n"
    "async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **given):\n"
    "    return {{'score': 0.0}}\n"
    "METHOD = register(compute_score, RewardMethod(name={name!r}, failure_score=lambda **_: 0.0))\n"
)


@pytest.fixture
def their_package(tmp_path, monkeypatch):
    """A package of someone else's, declared under the entry-point group beside ours: files(name=method name)."""
    package = tmp_path / "their_methods"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    theirs = EntryPoint(name="theirs", value="their_methods", group=registry.ENTRY_POINTS)
    ours = list(registry.entry_points(group=registry.ENTRY_POINTS))
    monkeypatch.setattr(registry, "entry_points", lambda group: [*ours, theirs])

    def add(**files):
        for module, name in files.items():
            (package / f"{module}.py").write_text(METHOD_SOURCE.format(name=name))

    yield add
    for module in [m for m in sys.modules if m.startswith("their_methods")]:
        sys.modules.pop(module)
        registry._BY_MODULE.pop(module, None)


def test_a_package_under_the_entry_point_group_adds_its_methods(their_package):
    their_package(coin="coin")
    found = registry.methods()
    assert found["coin"].module == "their_methods.coin" and found["coin"].path == "pkg://their_methods.coin"
    assert registry.registered("coin") is found["coin"]
    assert "brpo" in found  # ours still there


def test_two_installed_modules_may_not_register_one_name(their_package):
    their_package(coin="coin", other_coin="coin")
    with pytest.raises(
        ValueError, match="two reward methods are named 'coin': their_methods.coin and their_methods.other_coin"
    ):
        registry.methods()


def test_a_fn_loaded_from_a_file_runs_registered_but_is_not_an_installed_method(tmp_path):
    from verl.utils.import_utils import load_extern_object

    for copy in ("one", "two"):  # two files, one name: each loads (a run loads one)
        (tmp_path / f"{copy}.py").write_text(METHOD_SOURCE.format(name="brpo"))
        fn = load_extern_object(module_path=str(tmp_path / f"{copy}.py"), object_name="compute_score")
        assert fn.reward_method.name == "brpo"
    assert registry.registered("brpo").module == "reward_fns.brpo"
    assert all(m.module.startswith("reward_fns.") for m in registry.methods().values())


EXTRA_SOURCE = (
    "from writing_rl.reward_loop.contract import RewardMethod, register\n"
    "class Tally:\n"
    "    name = 'tally'\n"
    "    def start(self, config, scoring):\n"
    "        return None\n"
    "async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, tally=None, **given):\n"
    "    return {{'score': 0.0}}\n"
    "METHOD = register(compute_score, RewardMethod(name={name!r}, failure_score=lambda **_: 0.0, extras=(Tally(),)))\n"
)


def test_the_extras_of_the_method_loaded_last_from_a_file_are_the_runs_and_installed_ones_conflict(
    tmp_path, their_package
):
    from verl.utils.import_utils import load_extern_object

    loaded = []
    for copy in ("first", "second"):  # two files, each with an extra of one name (a run loads one)
        (tmp_path / f"{copy}.py").write_text(EXTRA_SOURCE.format(name=copy))
        loaded.append(load_extern_object(module_path=str(tmp_path / f"{copy}.py"), object_name="compute_score"))
    assert registry.extras()["tally"] is loaded[-1].reward_method.extras[0]
    again = load_extern_object(module_path=str(tmp_path / "first.py"), object_name="compute_score")
    assert registry.extras()["tally"] is again.reward_method.extras[0]  # loaded again: the last loaded
    installed = registry.registered("writing_rl").method.extras[0]
    assert registry.extras()["curriculum"] is installed  # the installed ones stay
    (tmp_path / "their_methods" / "one.py").write_text(EXTRA_SOURCE.format(name="one"))
    (tmp_path / "their_methods" / "two.py").write_text(EXTRA_SOURCE.format(name="two"))
    with pytest.raises(ValueError, match="two method extras are named 'tally': Tally and Tally"):
        registry.extras()


def test_a_module_imported_again_replaces_its_registration_and_an_unknown_name_lists_the_choices(their_package):
    their_package(coin="coin")
    first = importlib.import_module("their_methods.coin")
    again = importlib.reload(first)
    assert registry.registered("coin").method is again.METHOD
    assert registry.registered("coin").fns == ("compute_score",)
    with pytest.raises(KeyError, match="no reward method is named 'nope': choose one of brpo, "):
        registry.registered("nope")


def test_without_the_entry_points_it_says_the_package_is_not_installed(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    with pytest.raises(RuntimeError, match="writing-rl is not installed in this environment; run pip install -e ."):
        registry.methods()


@pytest.mark.parametrize(
    "first",
    [
        "import verl",  # what a reward worker does: verl loads our plugin, which adds them when verl's registry loads
        "import writing_rl.reward_loop.group_manager",  # a manager imported first registers itself as it finishes
        "import writing_rl.reward_loop.manager",  # ... and the other manager with it
    ],
)
def test_our_reward_managers_are_in_verls_registry_by_name(first):
    import subprocess

    script = (
        f"{first}\n"
        "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
        "for name in ('ParallelRewardManager', 'GroupRewardManager', 'naive'):\n"
        "    cls = get_reward_manager_cls(name)\n"
        "    print(name, cls.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == [
        "ParallelRewardManager writing_rl.reward_loop.manager",
        "GroupRewardManager writing_rl.reward_loop.group_manager",
    ]
