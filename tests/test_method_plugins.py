"""A method is a plug-in: registered with its fn, it asks for the services it needs, and the generic reward loop
(which imports no method's code) starts them and hands them over."""

import ast
import asyncio
from pathlib import Path

import pytest
from test_manager import load_manager

from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.settings import ConfigError

from conftest import REPO_DIR, compose_writing_rl, writing_row

pytestmark = pytest.mark.usefixtures("registrations_undone")

COUNTING_METHOD = '''
from writing_rl.reward_loop.contract import RewardMethod, register


class Counter:
    """A service a method asks for: counts the calls it serves in this worker."""

    name = "counter"
    started = 0

    def start(self, config, scoring):
        Counter.started += 1
        return self

    calls = 0

    def for_call(self, late):
        Counter.calls += 1
        return Counter.calls

    def for_shadow(self, trained):
        return -1


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, judge, counter, **given):
    return {"score": float(counter), "served": counter}


METHOD = register(compute_score, RewardMethod(name="counting", failure_score=lambda **_: 0.0, extras=(Counter(),)))
'''


def test_a_method_asks_for_a_service_and_the_loop_starts_it_and_hands_it_over(tmp_path, tokenizer_dir, tokenizer):
    path = tmp_path / "counting.py"
    path.write_text(COUNTING_METHOD)
    config = compose_writing_rl(
        tokenizer_dir,
        "http://127.0.0.1:9/v1",  # never called: the fn makes no judge call
        f"reward.custom_reward_function.path={path}",
        "~reward.custom_reward_function.reward_kwargs",
    )
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(3)], ["a", "b", "c"])

    async def go():
        outputs = [await manager.run_single(batch[i : i + 1]) for i in range(len(batch))]
        await manager.scoring.judge.close()
        return outputs

    outputs = asyncio.run(go())
    assert [o["reward_extra_info"]["served"] for o in outputs] == [1, 2, 3]
    assert manager.extras.service("counter").started == 1  # one start per worker, not per call


SETTINGS_METHOD = '''
from dataclasses import dataclass

from writing_rl.reward_loop.contract import RewardMethod, register


@dataclass(frozen=True)
class StepSettings:
    step: int = 1

    @classmethod
    def from_verl(cls, config):
        return cls(**dict(config.reward.reward_kwargs.get("stepper") or {}))


class Stepper:
    """An extra with a settings section of its own, reward.reward_kwargs.stepper."""

    name = "stepper"
    settings = StepSettings

    def start(self, config, scoring):
        return StepperForWorker(scoring.settings.extras["stepper"].step)


class StepperForWorker:
    def __init__(self, step):
        self.step = step

    def for_call(self, late):
        return self.step

    def for_shadow(self, trained):
        return self.step


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, judge, stepper, **given):
    return {"score": float(stepper), "step": stepper}


METHOD = register(compute_score, RewardMethod(name="stepping", failure_score=lambda **_: 0.0, extras=(Stepper(),)))
'''


def test_a_method_loaded_from_a_file_path_gets_its_extras_settings_read(tmp_path, tokenizer_dir, tokenizer):
    """A method outside every installed package (verl loads its fn from a file) is known before the worker
    reads its settings, so its extra's section is read, not refused or dropped."""
    path = tmp_path / "stepping.py"
    path.write_text(SETTINGS_METHOD)
    config = compose_writing_rl(
        tokenizer_dir,
        "http://127.0.0.1:9/v1",  # never called: the fn makes no judge call
        f"reward.custom_reward_function.path={path}",
        "~reward.custom_reward_function.reward_kwargs",
        "+reward.reward_kwargs.stepper.step=7",
    )
    manager = load_manager(config, tokenizer)
    batch = build_reward_batch(tokenizer, [writing_row(0)], ["a"])

    async def go():
        output = await manager.run_single(batch[0:1])
        await manager.scoring.judge.close()
        return output

    assert asyncio.run(go())["reward_extra_info"]["step"] == 7


def test_score_reads_the_settings_of_a_method_loaded_from_a_file_path(tmp_path, tokenizer_dir):
    from writing_rl.tools.score import score_config

    path = tmp_path / "stepping_offline.py"
    path.write_text(SETTINGS_METHOD)
    overrides = [
        "reward.reward_kwargs.judge.base_url=http://127.0.0.1:9/v1",
        "reward.reward_kwargs.judge.model=judge",
        f"reward.custom_reward_function.path={path}",
        "~reward.custom_reward_function.reward_kwargs",
        "+reward.reward_kwargs.stepper.step=7",
    ]
    from writing_rl.reward_loop.config import ManagerConfig

    config = score_config("writing_rl", overrides, str(tokenizer_dir))
    assert ManagerConfig.from_verl(config).extras["stepper"].step == 7


def test_a_module_that_declares_a_method_but_never_registers_it_is_told_how(tmp_path, tokenizer_dir, tokenizer):
    from writing_rl.tools.preflight.config_checks import check_config

    path = tmp_path / "unregistered.py"
    path.write_text(
        "from writing_rl.reward_loop.contract import RewardMethod\n"
        "async def compute_score(data_source, solution_str, ground_truth, extra_info, judge):\n    return 1.0\n"
        "METHOD = RewardMethod(failure_score=lambda **_: 0.0)\n"
    )
    config = compose_writing_rl(
        tokenizer_dir,
        "http://127.0.0.1:9/v1",
        f"reward.custom_reward_function.path={path}",
        "~reward.custom_reward_function.reward_kwargs",
    )
    with pytest.raises(ConfigError, match=r"never registers it for compute_score: write METHOD = register\("):
        check_config(config)


def test_the_generic_reward_loop_imports_no_method():
    """Nothing under writing_rl/reward_loop/ imports a method's code: reward_fns/ or the curriculum."""
    offenders = []
    for path in sorted((REPO_DIR / "writing_rl" / "reward_loop").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith(("reward_fns", "writing_rl.curriculum")):
                    offenders.append(f"{Path(path).relative_to(REPO_DIR)}: {name}")
    assert not offenders, offenders
