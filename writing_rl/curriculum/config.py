"""``reward.reward_kwargs.curriculum``: the settings of Writing-RL's reference scheduling, read by the
curriculum extra (extra.py) from verl's config."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from writing_rl.reward_loop.config import FROM_TRAINER, check_actor_resources
from writing_rl.settings import ConfigError, build, get, option, plain, require


@dataclass(frozen=True)
class CurriculumConfig:
    """``reward.reward_kwargs.curriculum``: Writing-RL's reference scheduling (curriculum/scheduler.py)."""

    # Off: every sample is judged against its first reference.
    enable: bool = True
    # Where level snapshots and the write-ahead log go; null = {trainer.default_local_dir}/curriculum
    # (next to verl's checkpoints).
    state_dir: str | None = None
    # Every change is in the write-ahead log before its reward returns; after this many records the log
    # is folded into levels.latest.npz (bounds the log's size and the replay at a restart).
    compact_records: int = option(100_000, minimum=1)
    # Snapshots kept per verl checkpoint step (for resuming from step S with the levels of step S).
    keep_steps: int = option(5, minimum=1)
    # Ray resources the scheduler actor asks for, to pin it to a node that offers them (as
    # groups.actor_resources): one whose filesystem holds state_dir, e.g. {"node:__internal_head__": 0.01}.
    # {} = wherever Ray puts it (usually the node of the first reward worker that needs it).
    actor_resources: dict[str, float] = field(default_factory=dict)
    # Read from verl's trainer section, never set here: where verl writes checkpoints (and
    # latest_checkpointed_iteration.txt), trainer.default_local_dir; the step verl resumes from
    # (trainer.resume_from_path; None: fresh or no checkpoint); whether it resumes (trainer.resume_mode).
    checkpoint_dir: str | None = field(default=None, metadata=FROM_TRAINER)
    resume_step: int | None = field(default=None, metadata=FROM_TRAINER)
    resume: bool = field(default=True, metadata=FROM_TRAINER)

    @classmethod
    def from_verl(cls, config: Any) -> CurriculumConfig:
        kwargs = get(get(config, "reward", {}) or {}, "reward_kwargs", {}) or {}
        raw = plain(get(kwargs, "curriculum", {}) or {})
        for name in ("checkpoint_dir", "resume_step", "resume"):
            require(
                name not in raw,
                f"reward.reward_kwargs.curriculum.{name} is read from verl's trainer section "
                "(trainer.default_local_dir, trainer.resume_mode, trainer.resume_from_path): set it there",
            )
        trainer = get(config, "trainer", {}) or {}
        checkpoint_dir = get(trainer, "default_local_dir", None)
        checkpoint_dir = os.path.abspath(os.path.expanduser(str(checkpoint_dir))) if checkpoint_dir else None
        raw.setdefault("state_dir", None)
        if raw["state_dir"] is None and checkpoint_dir:
            raw["state_dir"] = os.path.join(checkpoint_dir, "curriculum")
        resume_mode = get(trainer, "resume_mode", "auto")
        raw["checkpoint_dir"] = checkpoint_dir
        raw["resume"] = resume_mode != "disable"
        if resume_mode == "resume_path":
            raw["resume_step"] = _resume_step(str(get(trainer, "resume_from_path", "") or ""))
        settings = build(cls, raw, "reward.reward_kwargs.curriculum")
        check_actor_resources(settings.actor_resources, "reward.reward_kwargs.curriculum.actor_resources")
        return settings

    def for_scheduler(self) -> CurriculumConfig:
        """These settings, checked for a run that schedules references (only such a run needs a state dir)."""
        require(
            bool(self.state_dir),
            "reward.reward_kwargs.curriculum.state_dir is not set and no trainer.default_local_dir",
        )
        return self


def _resume_step(path: str) -> int | None:
    """The step of verl's ``trainer.resume_from_path`` (``.../global_step_<S>``)."""
    if "global_step_" not in path:
        return None
    step = path.rstrip("/").split("global_step_")[-1]
    if not step.isdigit():
        raise ConfigError(f"trainer.resume_from_path={path!r}: expected a directory named global_step_<step>")
    return int(step)
