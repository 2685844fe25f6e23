"""Hydra overlays on verl's ppo_trainer (docs/configuration.md)."""
