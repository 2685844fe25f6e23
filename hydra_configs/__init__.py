"""Hydra overlays on verl's ppo_trainer (docs/configuration.md)."""

# The overlay the commands compose when --config-name is not given: Writing-RL's quickstart overlay.
DEFAULT_OVERLAY = "writing_rl"
