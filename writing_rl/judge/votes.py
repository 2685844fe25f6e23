"""One reading of an ensemble's judgment: each judge's reply read by the same reader, the readings combined.
Pure functions; ``SampleJudge.read`` uses them for an ``EnsembleReply``. How each kind of value is combined, what
a split pays, and why one unreadable reply makes the whole judgment unreadable: docs/judges/ensembles.md
("A judgment").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from writing_rl.protocols import UNREADABLE_KINDS, Unreadable, read_reply
from writing_rl.protocols.comparison import SPLIT_AS


@dataclass(frozen=True)
class Reading:
    """An ensemble's judgment read: its value (or an ``Unreadable``) and how its judges voted."""

    value: Any
    unreadable: tuple[str, ...] = ()  # the judges that answered with a reply that could not be read
    agreed: bool | None = None  # every judge read the same (a dataclass: the same numbers); None: under two read
    split: bool = False  # no majority: the split rule decided


def read_answers(answers: Sequence[Any], reader: Callable[..., Any], args: tuple, split: str) -> Reading:
    """``answers``: the judges' ``MemberAnswer``s (name, reply or error); each reply read as one judge's."""
    values, unreadable, why = [], [], []
    for answer in answers:
        if answer.reply is None:
            continue
        value = read_reply(answer.reply, reader, *args)
        if isinstance(value, Unreadable):
            unreadable.append(answer.name)
            why.append((answer.name, value))
        else:
            values.append(value)
    unread = tuple(unreadable)
    if why:
        return Reading(_unreadable(why, len(answers)), unread)
    if not values:  # (every call failed: the ensemble raised before any reading)
        return Reading(Unreadable(f"none of the ensemble's {len(answers)} judges answered"), unread)
    if len(values) == 1:
        return Reading(values[0], unread)
    value, was_split = combine(values, split)
    agreed = all(_voted(v) == _voted(values[0]) for v in values)
    return Reading(value, unread, agreed, was_split)


def combine(values: Sequence[Any], split: str) -> tuple[Any, bool]:
    """One value for two or more readings: (the value, whether the judges split)."""
    averaged = _average(values)
    if averaged is not None:
        return averaged, False
    first = values[0]
    if dataclasses.is_dataclass(first) and all(type(v) is type(first) for v in values) and _numbers_in(first):
        return _combine_fields(values), False
    found, winner = _majority(values)
    if found:
        return winner, False
    return _split_value(values, split), True


def _average(values: Sequence[Any]) -> Any:
    """The mean of numbers, of numbers under the same keys, or of number sequences of one length; else None."""
    if all(_is_number(v) for v in values):
        return sum(values) / len(values)
    if all(isinstance(v, Mapping) and v for v in values):
        keys = set(values[0])
        if all(set(v) == keys and all(_is_number(x) for x in v.values()) for v in values):
            return {k: sum(v[k] for v in values) / len(values) for k in values[0]}
        return None
    if all(isinstance(v, (list, tuple)) and v for v in values):
        size = len(values[0])
        if all(len(v) == size and all(_is_number(x) for x in v) for v in values):
            return type(values[0])(sum(column) / len(values) for column in zip(*values))
    return None


def _combine_fields(values: Sequence[Any]) -> Any:
    fields = {}
    for field in dataclasses.fields(values[0]):
        column = [getattr(v, field.name) for v in values]
        averaged = _average(column)
        if averaged is None:
            found, winner = _majority(column)
            averaged = winner if found else column[0]
        fields[field.name] = averaged
    return dataclasses.replace(values[0], **fields)


def _majority(values: Sequence[Any]) -> tuple[bool, Any]:
    """(True, the value more than half of ``values`` are) or (False, None); values need not be hashable."""
    for value in values:
        if 2 * sum(1 for other in values if other == value) > len(values):
            return True, value
    return False, None


def _split_value(values: Sequence[Any], rule: str) -> Any:
    said = "different values"
    if all(isinstance(v, str) for v in values):
        for over, counted in SPLIT_AS.get(rule, ()):
            if set(values) <= over:
                return counted
        said = ", ".join(sorted(set(map(repr, values))))
    return Unreadable(f"the ensemble's judges split ({said}) with no majority, and judge.ensemble.split={rule}")


def _unreadable(why: list[tuple[str, Unreadable]], judges: int) -> Unreadable:
    reasons = "; ".join(f"{name}: {reason}" for name, reason in why)
    kinds = {reason.kind for _, reason in why}
    kind = kinds.pop() if len(kinds) == 1 else UNREADABLE_KINDS[0]
    return Unreadable(f"{len(why)} of the ensemble's {judges} judges' replies could not be read ({reasons})", kind)


def _voted(value: Any) -> Any:
    """What agreement compares: a dataclass's numbers (its other fields, e.g. reasoning, always differ)."""
    if dataclasses.is_dataclass(value) and _numbers_in(value):
        return tuple(
            getattr(value, f.name) for f in dataclasses.fields(value) if _holds_numbers(getattr(value, f.name))
        )
    return value


def _numbers_in(value: Any) -> bool:
    return any(_holds_numbers(getattr(value, f.name)) for f in dataclasses.fields(value))


def _holds_numbers(value: Any) -> bool:
    return _average([value]) is not None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
