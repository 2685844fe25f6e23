"""Reading one key of many samples' extra info as numbers, naming the key of a value that is not one."""

from __future__ import annotations

import numbers
from typing import Any, Mapping, Sequence

import numpy as np


class HealthInputError(ValueError):
    """A sample's value is not a number; the message names the key (and the caller adds where)."""


def number(key: str, value: Any) -> float | None:
    """``value`` as a float; ``None`` (the key absent for this sample) stays ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise HealthInputError(f"{key}={value!r}: expected a number")
    return float(value)


def column(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """The values of ``key`` over the rows that have it (not ``None``), as floats."""
    values = [number(key, row.get(key)) for row in rows]
    return np.array([v for v in values if v is not None], dtype=float)
