"""Compose our Hydra overlays on verl's ``ppo_trainer`` outside ``main_ppo`` (offline tools, tests)."""

from __future__ import annotations

import difflib
import re
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
    from hydra.errors import HydraException

    from .config import ConfigError

    directory = Path(directory or config_dir()).resolve()
    if not (directory / f"{config_name}.yaml").is_file():
        known = sorted(p.stem for p in directory.glob("*.yaml"))
        raise ConfigError(f"no overlay '{config_name}' in {directory} (there: {', '.join(known)})")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(directory), version_base=None):
        try:
            return hydra_compose(config_name=config_name, overrides=list(overrides))
        except HydraException as err:
            raise ConfigError(_explain(err, config_name, overrides)) from err


_UNKNOWN_KEY = re.compile(
    r"Could not override '([^']+)'|Key '([^']+)' is not in struct|Could not append to config\. An item is already at '([^']+)'"
)


def _explain(err: Exception, config_name: str, overrides: Sequence[str]) -> str:
    """Hydra's error as one line; an unknown key gets the nearest valid key of the same section."""
    message = str(err).strip().splitlines()[0]
    match = _UNKNOWN_KEY.search(str(err))
    if not match or match.group(3):
        return f"bad override: {message}"
    key = match.group(1) or match.group(2)
    parent, _, leaf = key.rpartition(".")
    from hydra import compose as hydra_compose
    from omegaconf import DictConfig, OmegaConf

    base = hydra_compose(
        config_name=config_name, overrides=[o for o in overrides if not o.split("=")[0].lstrip("+~").startswith(key)]
    )
    section = OmegaConf.select(base, parent) if parent else base
    siblings = list(section.keys()) if isinstance(section, DictConfig) else []
    near = difflib.get_close_matches(leaf, [str(k) for k in siblings], n=1)
    if near:
        return f"unknown config key '{key}': did you mean '{f'{parent}.' if parent else ''}{near[0]}'?"
    return f"unknown config key '{key}' (to add a new key write +{key}=...)"
