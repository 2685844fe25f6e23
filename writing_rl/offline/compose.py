"""Compose our Hydra overlays on verl's ``ppo_trainer`` outside ``main_ppo`` (offline tools, tests).

A Hydra error becomes one line naming the override at fault and, for a mistyped key, the nearest key at
that level; ``compose_leniently`` drops every refused override and composes the rest, so the preflight
can go on with its other checks.
"""

from __future__ import annotations

import difflib
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

from hydra_configs import DEFAULT_OVERLAY


def config_dir() -> Path:
    """The directory holding our overlays (``hydra_configs/``, installed as a package)."""
    import hydra_configs

    return Path(hydra_configs.__file__).resolve().parent


def compose(config_name: str = DEFAULT_OVERLAY, overrides: Sequence[str] = (), directory: str | Path | None = None):
    """The composed config, exactly as ``python -m verl.trainer.main_ppo --config-name NAME`` builds it; a
    ``ConfigError`` naming every override Hydra refuses."""
    from writing_rl.settings import ConfigError

    config, refused = compose_leniently(config_name, overrides, directory)
    if refused:
        raise ConfigError("; ".join(refused))
    return config


def compose_leniently(config_name: str, overrides: Sequence[str] = (), directory: str | Path | None = None):
    """``(config, refused)``: the config composed without the overrides Hydra refuses, and one line for each
    of them (Hydra stops at the first). A missing overlay is a ``ConfigError``: nothing composes."""
    from hydra import compose as hydra_compose
    from hydra.errors import HydraException

    from writing_rl.settings import ConfigError

    kept, refused = list(overrides), []
    with _initialized(config_name, directory):
        while True:  # each round drops at least one override
            try:
                return hydra_compose(config_name=config_name, overrides=kept), refused
            except HydraException as err:
                if not kept:  # the overlay itself does not compose
                    raise ConfigError(_explain(err, config_name, kept)) from err
                bad = _at_fault(err, kept)
                if bad is None:  # not one we can name: find them by adding the overrides one at a time
                    kept, others = _composable(config_name, kept)
                    refused += others
                    continue
                refused.append(_explain(err, config_name, kept))
                kept.remove(bad)


@contextmanager
def _initialized(config_name: str, directory: str | Path | None):
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from writing_rl.settings import ConfigError

    directory = Path(directory or config_dir()).resolve()
    if not (directory / f"{config_name}.yaml").is_file():
        known = sorted(p.stem for p in directory.glob("*.yaml"))
        near = difflib.get_close_matches(config_name, known, n=1)
        guess = f": did you mean '{near[0]}'?" if near else ""
        raise ConfigError(f"no overlay '{config_name}' in {directory}{guess} (there: {', '.join(known) or 'none'})")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(directory), version_base=None):
        yield


def _composable(config_name: str, overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """The overrides that compose, added in order, and one line for each refused one."""
    from hydra import compose as hydra_compose
    from hydra.errors import HydraException

    kept, refused = [], []
    for override in overrides:
        try:
            hydra_compose(config_name=config_name, overrides=[*kept, override])
        except HydraException as err:
            refused.append(_explain(err, config_name, [*kept, override]))
        else:
            kept.append(override)
    return kept, refused


def _key_of(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _at_fault(err: Exception, overrides: Sequence[str]) -> str | None:
    """The override Hydra refused, when its message lets us tell which."""
    from hydra.errors import OverrideParseException

    if isinstance(err, OverrideParseException):
        return _unparsable(overrides)
    text = str(err)
    named = _UNKNOWN_KEY.search(text) or _EXISTING_KEY.search(text)
    if named:
        key = next(k for k in named.groups() if k)
        return next((o for o in overrides if _key_of(o) == key), None)
    missing = _MISSING_OPTION.search(text)
    if missing:
        group, option = missing.groups()
        return next((o for o in overrides if _key_of(o) == group and o.partition("=")[2] == option), None)
    return None


_UNKNOWN_KEY = re.compile(r"Could not override '([^']+)'|Could not delete from config\. '([^']+)' does not exist")
_EXISTING_KEY = re.compile(r"Could not append to config\. An item is already at '([^']+)'")
_MISSING_OPTION = re.compile(r"Could not find '([^']+)/([^'/]+)'")
_NOT_IN_DEFAULTS = "No match in the defaults list"


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
    missing = _MISSING_OPTION.search(str(err))
    if missing:
        group, option = missing.groups()
        given = next((o for o in overrides if _key_of(o) == group and o.partition("=")[2] == option), group)
        return _explain_missing_option(str(err), given, group, option)
    unknown = _UNKNOWN_KEY.search(str(err))
    if not unknown:
        return f"bad override: {message}"
    key = unknown.group(1) or unknown.group(2)
    if unknown.group(1) and _NOT_IN_DEFAULTS in str(err):
        given = next((o for o in overrides if _key_of(o) == key), f"{key}=...")
        return f"config group '{key}' is not selected in {config_name}: add it with +{given.lstrip('+')}"
    what = f"unknown config key '{key}'" if unknown.group(1) else f"cannot delete unknown config key '{key}'"
    near = _nearest_key(_base_config(config_name, overrides, key), key)
    if near:
        return f"{what}: did you mean '{near}'?"
    return f"{what} (to add a new key write +{key}=...)" if unknown.group(1) else what


def _explain_missing_option(text: str, given: str, group: str, option: str) -> str:
    """``+node=foo``: the group's options, from the list Hydra prints under the error."""
    listed = text.split(f"Available options in '{group}':", 1)[1:]
    options = re.findall(r"^\t(\S+)$", listed[0], flags=re.MULTILINE) if listed else []
    near = difflib.get_close_matches(option, options, n=1)
    guess = f": did you mean {given.partition('=')[0]}={near[0]}?" if near else ""
    return f"config group '{group}' has no option '{option}'{guess} (there: {', '.join(options) or 'none'})"


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
