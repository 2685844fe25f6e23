"""Reading a section of verl's config into a frozen dataclass: unknown keys, wrong types and values outside a
field's ``option(...)`` bounds fail at start with the key's full name (``writing_rl.judge.config``,
``writing_rl.reward_loop.config``, every reward fn's ``Options``)."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import operator
from typing import Any, Mapping, Sequence


class ConfigError(ValueError):
    """A setting is missing or has a value we cannot use; the message names the config key."""


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def option(
    default: Any,
    *,
    choices: Any = None,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    off: float | None = None,
) -> Any:
    """A dataclass field whose values are bounded (``build`` checks them): one of ``choices``, or a finite number
    within ``minimum`` and ``maximum`` (inclusive), ``above`` and ``below`` (exclusive); ``off``: a value allowed
    besides those bounds that turns the setting off. None passes where the field's type admits it. A list
    default is copied per instance."""
    bounds = {"minimum": minimum, "maximum": maximum, "above": above, "below": below, "off": off}
    metadata = {"choices": tuple(choices) if choices is not None else None}
    metadata.update({key: value for key, value in bounds.items() if value is not None})
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
        check_type(f"{prefix}.{key}", value, fields[key])
        check_bounds(f"{prefix}.{key}", value, fields[key])
    return cls(**values)


def check_fields(settings: Any, prefix: str) -> None:
    """Each field of a dataclass instance within its ``option()`` bounds (for one made in code, not by ``build``)."""
    for f in dataclasses.fields(settings):
        check_bounds(f"{prefix}.{f.name}", getattr(settings, f.name), f)


# option()'s numeric bounds: how the config reference writes each, how an error message does, its test.
LIMITS = {
    "minimum": ("≥", ">=", operator.ge),
    "above": (">", ">", operator.gt),
    "maximum": ("≤", "<=", operator.le),
    "below": ("<", "<", operator.lt),
}


def check_bounds(name: str, value: Any, field: dataclasses.Field) -> None:
    metadata = field.metadata
    if value is None and nullable(field):
        return
    choices = metadata.get("choices")
    if choices is not None and value not in choices:
        near = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(map(repr, choices))}{hint}")
    limits = {key: metadata[key] for key in LIMITS if key in metadata}
    if not limits or (is_number(value) and value == metadata.get("off")):
        return
    finite = is_number(value) and math.isfinite(value)
    if not finite or not all(LIMITS[key][2](value, limit) for key, limit in limits.items()):
        kind = "a finite number" if is_number(value) and not finite else "a number"
        raise ConfigError(f"{name}={value!r}: expected {kind} {allowed(field, ascii=True)}")


def allowed(field: dataclasses.Field, ascii: bool = False) -> str:
    """The values a field's ``option()`` bounds allow, as the config reference writes them ("≥ 1", "> 0",
    "0–1", "one of: a, b"; ``ascii``: as an error message does); "" when unbounded."""
    metadata = field.metadata
    if metadata.get("choices") is not None:
        return "one of: " + ", ".join("null" if c is None else str(c) for c in metadata["choices"])
    limits = [key for key in LIMITS if key in metadata]
    if not limits:
        return ""
    if limits == ["minimum", "maximum"] and not ascii:
        text = f"{metadata['minimum']:g}–{metadata['maximum']:g}"
    else:
        text = " and ".join(f"{LIMITS[key][1 if ascii else 0]} {metadata[key]:g}" for key in limits)
    others = [f"{metadata['off']:g} (off)"] if "off" in metadata else []
    return ", or ".join([text, *others, *(["null"] if nullable(field) else [])])


def nullable(field: dataclasses.Field) -> bool:
    return field.default is None or "None" in str(field.type)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What a field whose default is None holds, named by its annotation (``int | None``): an example.
EXAMPLES = {"int": 1, "float": 1.0, "str": "text"}


def check_type(name: str, value: Any, field: dataclasses.Field) -> None:
    """A value of the kind the key's default has (an int does for a float), or of the type its annotation names
    when the default is None; None is checked by ``check_bounds`` and validate."""
    default = default_of(field)
    if default is None:
        kinds = [kind for kind in str(field.type).split(" | ") if kind != "None"]
        default = EXAMPLES.get(kinds[0]) if len(kinds) == 1 else None
    if value is None or default is None or default is dataclasses.MISSING:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = is_number(value) and (isinstance(value, int) or isinstance(default, float))
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
