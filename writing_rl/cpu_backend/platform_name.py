"""The names a CPU run is selected by, importable without verl or torch (the preflight reads them)."""

from typing import Mapping

PLATFORM = "cpu"  # VERL_PLATFORM
ROLLOUT = "transformers"  # actor_rollout_ref.rollout.name, reward.reward_model.rollout.name
CHECKPOINT_ENGINE = "gloo"  # actor_rollout_ref.rollout.checkpoint_engine.backend, for the trainers that send weights
# The CPU backend runs on one machine: its servers and the checkpoint engine's store listen on loopback only.
HOST = "127.0.0.1"


def selected(environ: Mapping[str, str]) -> bool:
    return environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM
