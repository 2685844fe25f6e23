"""The curriculum as a service Writing-RL asks for (``RewardMethod.extras``, reward_loop/contract.py): in each
reward worker, the run's ``ReferenceScheduler`` actor (curriculum/scheduler.py) reached through this worker's
batched calls (curriculum/groups.py), handed to the fn as ``curriculum`` (curriculum/handle.py), when
``reward.reward_kwargs.curriculum.enable``."""

from __future__ import annotations

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.groups import Batched, GroupPins, merge_reports
from writing_rl.curriculum.handle import Curriculum, PinnedCurriculum

# A rollout's report waits this long for others to go in the same call to the scheduler. In verl's streaming
# mode rollouts reach a worker one at a time, so without a window nearly every report is a call of its own:
# 20 ms (against a judge call of 50 ms to seconds) gave Writing-RL 10-20% more samples/s on 2 cores when
# rollouts arrive spread out (docs/benchmarks.md). A pin never waits: the rollout's judge call waits for it.
REPORT_WINDOW_S = 0.02


class CurriculumExtra:
    name = "curriculum"
    settings = CurriculumConfig
    offline = {"enable": False}  # offline scoring judges against each row's first reference, moving no level

    def preflight(self, settings: CurriculumConfig) -> str | None:
        if not settings.enable:
            return None
        settings.for_scheduler()
        return f"curriculum: levels in {settings.state_dir}, keep {settings.keep_steps} step snapshots"

    def start(self, config, scoring) -> WorkerCurriculum | None:
        return WorkerCurriculum(scoring) if scoring.settings.extras[self.name].enable else None


class WorkerCurriculum:
    """One worker's way to the run's scheduler: looked up (or created) per batch, forgotten when it died."""

    def __init__(self, scoring):
        from writing_rl.curriculum.scheduler import get_or_create_scheduler  # (loads Ray: a worker has it)
        from writing_rl.reward_loop.actors import SharedActor

        self.scoring = scoring
        curriculum = scoring.settings.extras[CURRICULUM.name].for_scheduler()
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
        import ray

        if isinstance(err, ray.exceptions.ActorDiedError):  # not ActorUnavailableError: a restart under way
            self.scheduler.forget()

    def for_call(self, late: bool = False) -> Curriculum:
        """A late member scored on its own after its group cannot move the level: its group had its chance."""
        return Curriculum(
            self.scheduler.get(self.scoring.batches_started),
            not late,
            self.batched,
            self.scoring.settings.groups.timeout_s,
            failed=self._scheduler_failed,
            pins=self.pins,
            reports=self.reports,
        )

    def for_shadow(self, trained: dict) -> PinnedCurriculum:
        """Pinned at the level the training call was judged at, and never moving."""
        return PinnedCurriculum(trained.get("curriculum/level", 0))


CURRICULUM = CurriculumExtra()
