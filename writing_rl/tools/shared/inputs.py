"""Reading input files the same way in every command: JSONL lines with their ``file:line`` (a bad line is an
``InputError`` naming it), and a value at a dotted path of a row."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from writing_rl.files import read_jsonl


class InputError(ValueError):
    """A line of an input file is not what the command needs; the message names the file and line."""


def lines(path: str | Path) -> Iterable[tuple[str, dict]]:
    """(``file:line``, object) for each line; a line that is not a JSON object is an ``InputError``."""
    try:
        for number, record in read_jsonl(path):
            yield f"{path}:{number}", record
    except ValueError as err:
        raise InputError(str(err)) from err


def field_value(row: Mapping, path: str) -> Any:
    """``row["a"]["b"]`` for ``path="a.b"``; None when any step is missing."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value
