"""GroupRewardManager: verl's reward-loop manager for rewards that score a rollout against its siblings.

How a group's rollouts meet (``group/``), its expected size and what an incomplete group pays:
docs/methods/group-rewards.md. The group reward fn's contract (``async def compute_score(members, *, judge,
**options) -> list[dict]``, one result per member, in order): docs/methods/your-own.md. The fn catches
``JudgeError`` itself, as per-sample fns do; ``judge_error`` / ``judge_calls`` / ``judge_latency_s`` default to
the group's totals when it does not report them per member.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from verl import DataProto

from writing_rl.judge import NO_CALLS, NoJudge
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.group.collector import GroupError
from writing_rl.reward_loop.group.rendezvous import GroupCollectorLost, GroupRendezvous, RayCollectors, Seat
from writing_rl.reward_loop.manager import JudgeRewardManager, in_ray_actor, register_with_verl
from writing_rl.reward_loop.results import merge_info
from writing_rl.reward_loop.sample import prompt_text
from writing_rl.reward_loop.shadow.scoring import scored_cleanly
from writing_rl.settings import ConfigError

# Calls Ray runs at once in an async actor left at its default max_concurrency, as verl leaves
# RewardLoopWorker (ray._common.ray_constants.DEFAULT_MAX_CONCURRENCY_ASYNC).
RAY_ASYNC_ACTOR_CONCURRENCY = 1000
# Share of those slots a step may need on average: the agent loop picks a worker at random for each
# rollout, so some workers get more than the mean.
STREAMING_SLOT_SHARE = 0.8


def check_streaming_capacity(config) -> None:
    """Fail fast when streaming rewards would run out of reward-worker slots.

    In streaming mode (no reward model, or a standalone GenRM pool) every rollout is its own
    ``compute_score`` call on a random reward worker, and a member waiting for its group holds that
    call open. Once a worker holds ``RAY_ASYNC_ACTOR_CONCURRENCY`` waiting members, Ray queues the
    next calls, which are the members the waiting groups need: nothing moves until
    ``groups.timeout_s``, then every group is scored partial and the queued members alone.
    """
    reward_model = config.reward.reward_model
    if reward_model.get("enable") and not reward_model.get("enable_resource_pool"):
        return  # colocated: verl sends each worker its whole chunk in one call
    rollout, data = config.actor_rollout_ref.rollout, config.data
    train = max(int(data.get("gen_batch_size") or 0), int(data.train_batch_size)) * int(rollout.n)
    # Validation groups of one never wait. With val_batch_size=null verl validates the whole set in one
    # batch, a size this check cannot see.
    val = int(data.get("val_batch_size") or 0) * int(rollout.val_kwargs.n) if int(rollout.val_kwargs.n) > 1 else 0
    rollouts, what = max((train, "data.train_batch_size x rollout.n"), (val, "data.val_batch_size x val_kwargs.n"))
    workers = int(config.reward.get("num_workers") or 1)
    per_worker = int(RAY_ASYNC_ACTOR_CONCURRENCY * STREAMING_SLOT_SHARE)
    if rollouts > workers * per_worker:
        needed = -(-rollouts // per_worker)
        raise ConfigError(
            f"group rewards in streaming mode: {rollouts} rollouts per step ({what}) over "
            f"reward.num_workers={workers} is {rollouts // workers} per worker, above {per_worker}: a reward worker "
            f"runs at most {RAY_ASYNC_ACTOR_CONCURRENCY} calls at once, each rollout holds one while it waits for "
            f"its group, and {per_worker} leave room for the rest; past that the step stalls until "
            "groups.timeout_s and scores partial groups. "
            f"Set reward.num_workers>={needed}"
        )


class GroupRewardManager(JudgeRewardManager):
    def __init__(self, config, tokenizer, compute_score, **kwargs: Any):
        super().__init__(config, tokenizer, compute_score, **kwargs)
        self.groups = self.scoring.settings.groups
        self.rendezvous = GroupRendezvous(RayCollectors(self.groups, lambda: self.scoring.batches_started))

    def check(self, config, compute_score) -> None:
        if not inspect.iscoroutinefunction(compute_score):
            raise ConfigError("GroupRewardManager needs an async group reward fn (a method's group fn: docs/methods/)")
        if in_ray_actor():  # a verl reward worker (`writing-rl score` runs one in-process: no slot limit)
            check_streaming_capacity(config)

    async def run_single(self, data: DataProto) -> dict:
        with self.scoring.sample_in_flight():
            return await self._score(data[-1])  # multi-turn outputs: the last sequence carries the reward

    async def _score(self, item) -> dict:
        sample = self.scoring.reader.read(item)
        fields = sample.fields
        if fields.get("uid") is None:
            raise RuntimeError("group rewards need verl's 'uid' field (the prompt's group id) on every sample")
        extra_info = dict(fields.get("extra_info") or {})
        ground_truth = fields["reward_model"].get("ground_truth")
        member = Member(
            uid=str(fields["uid"]),
            text=sample.response,
            response_length=sample.response_length,
            prompt=sample.prompt,
            data_source=str(fields.get("data_source")),
            ground_truth=ground_truth,
            extra_info=extra_info,
        )
        seat = await self.rendezvous.join(member, self.extras.expected_size(extra_info))
        if seat.failure is not None:
            return await self._incomplete(sample, member, seat.failure)
        if seat.lead:
            results, judge = await self._lead(seat)
            mine = results[seat.index]
            return await self.scoring.finish(sample, mine["score"], mine["info"], judge.latencies, mine["transcripts"])
        mine = seat.result
        self.scoring.keys.check(mine["info"])
        return await self.scoring.finish(sample, mine["score"], mine["info"], [], mine["transcripts"])

    async def _lead(self, seat: Seat) -> tuple[list[dict], Any]:
        judge = self.scoring.new_judge()
        try:
            raw = await self.compute_score(members=seat.members, **self.extras.for_call(judge, late=seat.late))
            check_results(raw, len(seat.members))
            self.scoring.apply_judge_policy(judge)
            measured = {
                "group_size": len(seat.members),
                "partial_group": int(seat.partial),
                "late_member": int(seat.late),
                "group_incomplete": 0,
            }
            results = []
            for index, result in enumerate(raw):
                score, info = self.scoring.complete(result, defaults=judge.metrics(index), measured=measured)
                transcripts = judge.transcripts(index) if self.scoring.settings.keep_transcripts else []
                results.append({"score": score, "info": info, "transcripts": transcripts})
        except BaseException as err:
            self.rendezvous.fail(seat, err)
            raise
        self.rendezvous.publish(seat, results)
        infos = [r["info"] for r in results]
        if not (seat.partial or seat.late) and self.scoring.shadows(seat.members[0].extra_info, infos):
            trained = [r["score"] if scored_cleanly(r["info"]) else None for r in results]
            self.scoring.shadow.start(functools.partial(self._shadow_score, seat.members, infos[0]), trained)
        return results, judge

    async def _shadow_score(self, members: list[Member], trained: dict, judge) -> list[tuple[float, dict]]:
        """The group scored again by the shadow judge (reward_loop/shadow/)."""
        raw = await self.compute_score(members=members, **self.extras.for_shadow(judge, trained))
        check_results(raw, len(members))
        return [merge_info(result, defaults=judge.metrics(i)) for i, result in enumerate(raw)]

    async def _incomplete(self, sample, member: Member, message: str) -> dict:
        """A member whose group never completed: a counted failure that pays the failure score. The group
        fn runs on it with a judge that makes no call, so the sample carries the fn's own keys."""
        judge = self.scoring.new_judge(NoJudge(message))
        raw = await self.compute_score(members=[member], **self.extras.for_call(judge, with_extras=False))
        check_results(raw, 1)
        measured = {**NO_CALLS, "group_size": 1, "partial_group": 0, "late_member": 0, "group_incomplete": 1}
        _, info = self.scoring.complete(raw[0], defaults=judge.metrics(0), measured=measured)
        self.scoring.guard.example("group_incomplete", message)
        return await self.scoring.finish(sample, self.scoring.failure.loss, info, [], [])


def check_results(raw: Any, members: int) -> None:
    if not isinstance(raw, list) or len(raw) != members:
        raise TypeError(
            f"group reward fn returned {type(raw).__name__} of length {len(raw) if isinstance(raw, list) else '-'}"
            f"; expected a list with one result per member ({members})"
        )


register_with_verl("GroupRewardManager", GroupRewardManager)

__all__ = ["GroupRewardManager", "GroupCollectorLost", "GroupError", "check_streaming_capacity", "prompt_text"]
