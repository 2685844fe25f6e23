"""Hydra overlays on verl's ppo_trainer (see README: Configuration)."""
