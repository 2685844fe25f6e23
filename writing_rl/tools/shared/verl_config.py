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

    from writing_rl.settings import ConfigError

    directory = Path(directory or config_dir()).resolve()
    if not (directory / f"{config_name}.yaml").is_file():
        known = sorted(p.stem for p in directory.glob("*.yaml"))
        near = difflib.get_close_matches(config_name, known, n=1)
        guess = f": did you mean '{near[0]}'?" if near else ""
        raise ConfigError(f"no overlay '{config_name}' in {directory}{guess} (there: {', '.join(known) or 'none'})")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(directory), version_base=None):
        try:
            return hydra_compose(config_name=config_name, overrides=list(overrides))
        except HydraException as err:
            raise ConfigError(_explain(err, config_name, overrides)) from err


_UNKNOWN_KEY = re.compile(r"Could not override '([^']+)'|Could not delete from config\. '([^']+)' does not exist")
_EXISTING_KEY = re.compile(r"Could not append to config\. An item is already at '([^']+)'")


def _explain(err: Exception, config_name: str, overrides: Sequence[str]) -> str:
    """Hydra's error as one line: the override at fault, and for an unknown key the nearest valid one."""
    from hydra.errors import OverrideParseException

    message = str(err).strip().splitlines()[0]
    if isinstance(err, OverrideParseException):
        bad = _unparsable(overrides)
        if bad and "=" not in bad:
            return f"bad override '{bad}': write key=value (or ~key to delete a key)"
        return f"bad override '{bad}': {message}" if bad else f"bad override: {message}"
    existing = _EXISTING_KEY.search(str(err))
    if existing:
        key = existing.group(1)
        return f"'{key}' already exists: set it with {key}=... ('+' adds a new key; '++' adds or sets)"
    unknown = _UNKNOWN_KEY.search(str(err))
    if not unknown:
        return f"bad override: {message}"
    key = unknown.group(1) or unknown.group(2)
    what = f"unknown config key '{key}'" if unknown.group(1) else f"cannot delete unknown config key '{key}'"
    near = _nearest_key(_base_config(config_name, overrides, key), key)
    if near:
        return f"{what}: did you mean '{near}'?"
    return f"{what} (to add a new key write +{key}=...)" if unknown.group(1) else what


def _unparsable(overrides: Sequence[str]) -> str | None:
    """The first override Hydra's grammar rejects."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    for override in overrides:
        try:
            parser.parse_overrides([override])
        except OverrideParseException:
            return override
    return None


def _base_config(config_name: str, overrides: Sequence[str], key: str) -> dict:
    """The composed config without the overrides of ``key`` (plain, interpolations unresolved); without
    any override when another one fails too."""
    from hydra import compose as hydra_compose
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    others = [o for o in overrides if not o.split("=")[0].lstrip("+~").startswith(key)]
    try:
        base = hydra_compose(config_name=config_name, overrides=others)
    except HydraException:
        base = hydra_compose(config_name=config_name)
    return OmegaConf.to_container(base, resolve=False)


def _nearest_key(config: dict, key: str) -> str | None:
    """``key`` with its first unknown part replaced by the closest key at that level; None when no key
    there is close (or every part exists)."""
    node: object = config
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, dict):
            return None
        if part in node:
            node = node[part]
            continue
        near = difflib.get_close_matches(part, [str(k) for k in node], n=1)
        return ".".join([*parts[:depth], near[0], *parts[depth + 1 :]]) if near else None
    return None
