"""Reading a section of verl's config into a frozen dataclass: unknown keys, wrong types and values outside a
field's ``option(...)`` bounds fail at start with the key's full name (``writing_rl.judge.config``,
``writing_rl.reward_loop.config``, every reward fn's ``Options``)."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from typing import Any, Mapping, Sequence


class ConfigError(ValueError):
    """A setting is missing or has a value we cannot use; the message names the config key."""


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def option(default: Any, *, choices: Any = None, minimum: float | None = None) -> Any:
    """A dataclass field whose values are bounded: one of ``choices``, or at least ``minimum`` (``build``
    checks them). A list default is copied per instance."""
    metadata = {"choices": tuple(choices) if choices is not None else None, "minimum": minimum}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def default_of(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def build(cls, values: Mapping[str, Any], prefix: str):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        near = [difflib.get_close_matches(key, list(fields), n=1) for key in unknown]
        hints = "".join(f"; did you mean {prefix}.{m[0]}?" for m in near if m)
        raise ConfigError(
            f"unknown key(s) under {prefix}: {', '.join(unknown)}{hints} (known: {', '.join(sorted(fields))})"
        )
    for key, value in values.items():
        check_type(f"{prefix}.{key}", value, default_of(fields[key]))
        check_bounds(f"{prefix}.{key}", value, fields[key].metadata)
    return cls(**values)


def check_bounds(name: str, value: Any, metadata: Mapping[str, Any]) -> None:
    choices, minimum = metadata.get("choices"), metadata.get("minimum")
    if choices is not None and value not in choices:
        near = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(map(repr, choices))}{hint}")
    if minimum is not None and value is not None and value < minimum:
        raise ConfigError(f"{name}={value!r}: expected a number >= {minimum:g}")


def check_type(name: str, value: Any, default: Any) -> None:
    """A value of the kind the key's default has (an int does for a float; None is checked by validate)."""
    if value is None or default is None or default is dataclasses.MISSING:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and (isinstance(value, int) or isinstance(default, float))
    elif isinstance(default, str):
        ok = isinstance(value, str)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, Sequence) and not isinstance(value, str)  # (an OmegaConf ListConfig is one)
    else:
        return
    if not ok:
        raise ConfigError(f"{name} must be of type {type(default).__name__} (like {default!r}), got {value!r}")


def check_keywords(fn: Any, given: Mapping[str, Any], prefix: str, where: str, passed: tuple[str, ...] = ()) -> None:
    """A ``ConfigError`` when ``fn`` would refuse one of the keyword arguments ``given`` (set under ``prefix``);
    ``passed``: the arguments its caller passes, not settings."""
    parameters = inspect.signature(inspect.unwrap(fn)).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    known = [name for name in parameters if name not in passed]
    for key in given:
        if key not in parameters or key in passed:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {prefix}.{near[0]}?" if near else ""
            raise ConfigError(
                f"{prefix}.{key}: {where} has no such parameter{hint} (its parameters: {', '.join(known)})"
            )


def get(node: Any, key: str, default: Any) -> Any:
    if node is None:
        return default
    if hasattr(node, "get"):
        value = node.get(key, default)
        return default if value is None and default is not None else value
    return getattr(node, key, default)


def plain(node: Any) -> dict:
    """An OmegaConf node or mapping as a plain, resolved dict."""
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(node, DictConfig):
            return OmegaConf.to_container(node, resolve=True)
    except ImportError:  # omegaconf comes with verl; plain dicts work without it
        pass
    return dict(node)
