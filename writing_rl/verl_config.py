"""Compose our Hydra overlays on verl's ``ppo_trainer`` outside ``main_ppo`` (offline tools, tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def config_dir() -> Path:
    """The directory holding our overlays (``hydra_configs/``, installed as a package)."""
    import hydra_configs

    return Path(hydra_configs.__file__).resolve().parent


def compose(config_name: str = "writing_rl", overrides: Sequence[str] = (), directory: str | Path | None = None):
    """The composed config, exactly as ``python -m verl.trainer.main_ppo --config-name NAME`` builds it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    directory = Path(directory or config_dir()).resolve()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(directory), version_base=None):
        return hydra_compose(config_name=config_name, overrides=list(overrides))
