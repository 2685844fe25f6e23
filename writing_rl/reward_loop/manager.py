"""ParallelRewardManager: verl's reward-loop manager for judge-based rewards.

verl finds it by ``reward.reward_manager.name`` in its registry of reward managers (``reward_manager.source`` at
verl's default, ``register``), which our verl plugin (writing_rl/plugin.py) adds it to. Each verl
``RewardLoopWorker`` builds one manager, and with it one pooled judge client; verl then calls ``run_single`` once
per sample, many at a time on the worker's event loop. A sample's path (most of it ``WorkerScoring``, scoring.py,
which GroupRewardManager shares): docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
from typing import Any

import ray
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from writing_rl.judge import JudgeError
from writing_rl.reward_loop.failures import JudgeFailure
from writing_rl.reward_loop.fn_extras import FnExtras
from writing_rl.reward_loop.results import merge_info
from writing_rl.reward_loop.scoring import WorkerScoring


class JudgeRewardManager(RewardManagerBase):
    """What our two managers share as verl builds them: the worker's scoring (one judge client, the failure
    policy, the extra info) and what a reward fn is handed besides the sample."""

    def __init__(
        self,
        config,
        tokenizer,
        compute_score,
        reward_router_address: str | None = None,
        reward_model_tokenizer=None,
        **unused: Any,
    ):
        super().__init__(config, tokenizer, compute_score)
        self.check(config, compute_score)
        self.scoring = WorkerScoring(config, tokenizer, reward_router_address)
        self.extras = FnExtras(config, self.scoring, reward_model_tokenizer)
        if in_ray_actor():
            out_of_the_collectors_sight()

    def check(self, config, compute_score) -> None:
        """Refuse what this manager cannot run, before anything starts."""


class ParallelRewardManager(JudgeRewardManager):
    def __init__(self, config, tokenizer, compute_score, **kwargs: Any):
        super().__init__(config, tokenizer, compute_score, **kwargs)
        self._fn_is_async = inspect.iscoroutinefunction(compute_score)

    async def run_single(self, data: DataProto) -> dict:
        with self.scoring.sample_in_flight():
            return await self._score(data[-1])  # multi-turn outputs: the last sequence carries the reward

    async def _score(self, item) -> dict:
        sample = self.scoring.reader.read(item)
        judge = self.scoring.new_judge()
        try:
            result = await self._call_fn(sample, self.extras.for_call(judge, sample.fields))
        except JudgeError as err:
            # Our reward fns catch judge failures themselves and return their neutral result.
            raise JudgeFailure(
                f"{err}. The reward fn let the failure escape, so it has no neutral result to fall back to."
            ) from err
        self.scoring.apply_judge_policy(judge)
        score, info = self.scoring.complete(result, measured=judge.metrics())
        if self.scoring.shadows(sample.fields.get("extra_info"), [info]):
            self.scoring.shadow.start(functools.partial(self._shadow_score, sample, info), [score])
        return await self.scoring.finish(sample, score, info, judge.latencies, judge.transcripts())

    async def _call_fn(self, sample, extras: dict) -> Any:
        call = functools.partial(
            self.compute_score,
            data_source=sample.fields.get("data_source"),
            solution_str=sample.response,
            ground_truth=sample.fields["reward_model"].get("ground_truth"),
            extra_info=dict(sample.fields.get("extra_info") or {}),
            **extras,
        )
        if self._fn_is_async:
            return await call()
        # a rule-based fn: keep the event loop free for the other samples
        return await asyncio.get_running_loop().run_in_executor(None, call)

    async def _shadow_score(self, sample, trained: dict, judge) -> list[tuple[float, dict]]:
        """The sample scored again by the shadow judge (reward_loop/shadow/)."""
        result = await self._call_fn(sample, self.extras.for_shadow(judge, trained, sample.fields))
        return [merge_info(result, measured=judge.metrics())]


def register_with_verl(name: str, cls: type) -> None:
    """``cls`` in verl's registry of reward managers under ``name`` (writing_rl/plugin.py), and our other
    managers with it: when verl's registry was imported by one of our manager modules, the plugin left the
    registering to that module. A module loaded a second time (from a file path) keeps the class registered first."""
    import importlib
    import sys

    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls, register

    from writing_rl.reward_loop.registry import MANAGER_MODULES

    try:
        get_reward_manager_cls(name)
    except ValueError:  # not registered yet
        register(name)(cls)
    for module in MANAGER_MODULES:
        if module not in sys.modules:  # (one being imported registers itself as it finishes)
            importlib.import_module(module)


def in_ray_actor() -> bool:
    """Whether this runs in a Ray actor (verl's reward worker), not in a driver or a test's process."""
    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None


def out_of_the_collectors_sight() -> None:
    """Moves every object the reward worker holds once started (torch, transformers, verl, the tokenizer:
    about half a million) out of the cyclic garbage collector's sight. Each sample allocates enough to
    trigger collections, and each full one rescanned them all: about 0.3 ms of CPU per sample, as much as
    the judge's HTTP round trip (docs/benchmarks.md). Objects made later are collected as before."""
    gc.collect()
    gc.freeze()


register_with_verl("ParallelRewardManager", ParallelRewardManager)

__all__ = ["JudgeFailure", "ParallelRewardManager"]
