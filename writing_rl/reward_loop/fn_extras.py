"""What a reward manager hands the reward fn besides the sample, for the parameters the fn declares.

- ``judge``: the sample's (or group's) ``SampleJudge`` — always;
- ``judge_tokenizer``: the GenRM's tokenizer when verl hosts the GenRM;
- ``curriculum``: a ``Curriculum`` (``reward_loop/curriculum/handle.py``) over Writing-RL's reference
  scheduler (``reward_loop/curriculum/scheduler.py``), when ``curriculum.enable``; its calls from this
  worker go in batches (``reward_loop/curriculum/groups.py``: ``Batched``);
- ``uid`` and ``group_size``: the sample's group (verl's ``uid``) and how many rollouts it has
  (``extra_info.group_size``, else ``rollout.val_kwargs.n`` for validation rows, else ``rollout.n``);
- ``on_parse_error``: ``reward.reward_kwargs.on_parse_error``, what an unreadable judge reply counts as.
"""

from __future__ import annotations

from typing import Any

import ray

from writing_rl.reward_loop.actors import SharedActor
from writing_rl.reward_loop.contract import is_validation
from writing_rl.reward_loop.curriculum.groups import Batched, GroupPins, merge_reports
from writing_rl.reward_loop.curriculum.handle import Curriculum, PinnedCurriculum
from writing_rl.reward_loop.curriculum.scheduler import get_or_create_scheduler
from writing_rl.reward_loop.reward_fn import load_reward_fn

# A rollout's report waits this long for others to go in the same call to the scheduler. In verl's streaming
# mode rollouts reach a worker one at a time, so without a window nearly every report is a call of its own:
# 20 ms (against a judge call of 50 ms to seconds) gave Writing-RL 10-20% more samples/s on 2 cores when
# rollouts arrive spread out (docs/benchmarks.md). A pin never waits: the rollout's judge call waits for it.
REPORT_WINDOW_S = 0.02


class FnExtras:
    def __init__(self, config, scoring, reward_model_tokenizer=None):
        self.accepted = load_reward_fn(config).parameters
        self.scoring = scoring
        rollout = config.actor_rollout_ref.rollout
        self.train_group_size = int(rollout.n)
        self.val_group_size = int(rollout.val_kwargs.n)
        self.judge_tokenizer = reward_model_tokenizer
        self.scheduler = None
        settings = scoring.settings
        if "curriculum" in self.accepted and settings.curriculum.enable:
            curriculum = settings.curriculum.for_scheduler()
            self.scheduler = SharedActor(lambda: get_or_create_scheduler(curriculum))
            # No window: a pin waits only for the call in flight (the rollout's judge call waits for it).
            self.batched = Batched(self._send, window_s=0.0)
            self.reports = Batched(self._send, window_s=REPORT_WINDOW_S)
            self.pins = GroupPins()

    async def _send(self, requests: list) -> list:
        merged, positions = merge_reports(requests)
        try:
            answers = await self.scheduler.get(self.scoring.batches_started).batch.remote(merged)
        except Exception as err:
            self._scheduler_failed(err)
            raise
        return [answers[at] for at in positions]

    def _scheduler_failed(self, err: Exception) -> None:
        # Gone for good (its owner, a reward worker, died): the next call looks it up or creates another,
        # also when no new batch ever starts (continuous streaming).
        if isinstance(err, ray.exceptions.ActorDiedError):  # not ActorUnavailableError: a restart under way
            self.scheduler.forget()

    def expected_size(self, extra_info: dict) -> int:
        if extra_info.get("group_size") is not None:
            return int(extra_info["group_size"])
        if is_validation(extra_info):
            return self.val_group_size
        return self.train_group_size

    def curriculum(self, can_advance: bool = True) -> Curriculum | None:
        if self.scheduler is None:
            return None
        handle = self.scheduler.get(self.scoring.batches_started)
        timeout_s = self.scoring.settings.groups.timeout_s
        return Curriculum(
            handle,
            can_advance,
            self.batched,
            timeout_s,
            failed=self._scheduler_failed,
            pins=self.pins,
            reports=self.reports,
        )

    def for_call(
        self, judge, fields: dict | None = None, late: bool = False, curriculum: bool = True
    ) -> dict[str, Any]:
        """The keyword arguments for one call of the fn: ``fields``, verl's non-tensor fields of the
        sample (per-sample managers), give ``uid`` and ``group_size``."""
        extras: dict[str, Any] = {"judge": judge}
        if "on_parse_error" in self.accepted:
            extras["on_parse_error"] = self.scoring.settings.on_parse_error
        if "judge_tokenizer" in self.accepted:
            extras["judge_tokenizer"] = self.judge_tokenizer
        if "curriculum" in self.accepted:
            extras["curriculum"] = self.curriculum(can_advance=not late) if curriculum else None
        if fields is not None and "uid" in self.accepted:
            extras["uid"] = None if fields.get("uid") is None else str(fields["uid"])
        if fields is not None and "group_size" in self.accepted:
            extras["group_size"] = self.expected_size(dict(fields.get("extra_info") or {}))
        return extras

    def for_shadow(self, judge, trained: dict, fields: dict | None = None) -> dict[str, Any]:
        """The keyword arguments for the shadow judge's call (reward_loop/shadow/): those of the training call,
        with the shadow's ``judge``, a curriculum pinned at the level the training call was judged at
        (``reference_level``) that never moves, and unreadable replies counted as losses, never raised."""
        extras = self.for_call(judge, fields, curriculum=False)
        if "curriculum" in self.accepted and self.scheduler is not None:
            extras["curriculum"] = PinnedCurriculum(trained.get("reference_level", 0))
        if "on_parse_error" in self.accepted:
            extras["on_parse_error"] = "loss"
        return extras
