"""The names a CPU run is selected by, importable without verl or torch (the preflight reads them)."""

from typing import Mapping

PLATFORM = "cpu"  # VERL_PLATFORM
ROLLOUT = "transformers"  # actor_rollout_ref.rollout.name, reward.reward_model.rollout.name


def selected(environ: Mapping[str, str]) -> bool:
    return environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM
