"""A builder's declared fields as command-line options: ``--prompt-key`` sets the field ``prompt_key``, its
default is the builder's, an integer field takes integers, and the parsed options are read back into the
builder (``BuilderOptions.builder``). A subcommand gives each field's help, in the order ``--help`` lists
them, and whatever its command line does otherwise (``Option``: another name, a flag that turns a field
off, choices, a default of its own, a value read before the builder gets it)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from writing_rl.settings import default_of

_BUILDERS = object()  # an option's default: the builder's


@dataclass(frozen=True)
class Option:
    """How one builder field is set from the command line, beyond its name, default and type."""

    help: str
    flag: str | None = None  # the option's name where it is not the field's: --critique-chosen-slot
    negate: bool = False  # a true-by-default field that the flag turns off: --no-swap sets swap=False
    choices: Sequence[str] | None = None
    metavar: str | None = None
    default: Any = _BUILDERS  # the command line's default where it is not the builder's
    read: Callable[[Any], Any] | None = None  # the option's value -> the field's (a template file -> its text)


@dataclass(frozen=True)
class _Binding:
    path: str  # the field: "prompt_key", or "reader.prompt_key" for a field of the builder's reader
    dest: str  # the parsed option
    option: Option | None = None  # None: an option of every build run (--seed), taken as it is


class BuilderOptions:
    """The command-line options of one builder's fields, and the builder a parse of them asks for."""

    def __init__(self, builder: type, *, from_build_run: Sequence[str] = ()):
        """``from_build_run``: fields set by an option every build run has (``seed``: ``--seed``)."""
        self._builder = builder
        self._fields = {f.name: f for f in dataclasses.fields(builder)}
        self._bindings = [_Binding(name, name) for name in from_build_run]

    def default(self, path: str) -> Any:
        """The builder's default of a field (``reader.duplicates``: of its default reader's field)."""
        outer, _, inner = path.partition(".")
        value = default_of(self._fields[outer])
        return getattr(value, inner) if inner else value

    def add(self, parser, options: dict[str, Option | str], under: str | None = None) -> None:
        """An option for each field named in ``options`` (the field's help, or an ``Option``), in order. A
        field of the builder's reader is named ``reader.<field>``, or by its name with ``under="reader"``."""
        for name, option in options.items():
            option = option if isinstance(option, Option) else Option(option)
            path = f"{under}.{name}" if under else name
            flag = option.flag or ("--no-" if option.negate else "--") + path.rpartition(".")[2].replace("_", "-")
            action = parser.add_argument(flag, **self._argument(path, option))
            self._bindings.append(_Binding(path, action.dest, option))

    def builder(self, args: argparse.Namespace) -> Any:
        """The builder with every field the options set; a reader's fields go into the builder's default
        reader."""
        values = {binding.path: _value(binding, args) for binding in self._bindings}
        given = {path: value for path, value in values.items() if "." not in path}
        inner: dict[str, dict[str, Any]] = {}
        for path, value in values.items():
            if "." in path:
                outer, _, name = path.partition(".")
                inner.setdefault(outer, {})[name] = value
        for outer, fields in inner.items():
            given[outer] = dataclasses.replace(self.default(outer), **fields)
        return self._builder(**given)

    def _argument(self, path: str, option: Option) -> dict[str, Any]:
        if option.negate:
            return {"action": "store_true", "help": option.help}
        default = self.default(path) if option.default is _BUILDERS else option.default
        argument: dict[str, Any] = {"default": default, "help": option.help}
        if isinstance(default, int) and not isinstance(default, bool):
            argument["type"] = int
        if option.choices is not None:
            argument["choices"] = option.choices
        if option.metavar is not None:
            argument["metavar"] = option.metavar
        return argument


def _value(binding: _Binding, args: argparse.Namespace) -> Any:
    value = getattr(args, binding.dest)
    option = binding.option
    if option is not None and option.negate:
        value = not value
    if option is not None and option.read is not None:
        value = option.read(value)
    return value
