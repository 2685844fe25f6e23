"""What the user gave is kept in each output row's ``extra_info`` (``KeptColumns``): the row id as
``source_id`` and every other input column the builder does not read, each with one Arrow type over the whole
input (declared by a parquet file or a datasets dir, else inferred chunk by chunk: ``ColumnTypes``), so every
chunk has the same schema. The naming rules and the types: docs/data-builders.md#what-you-gave-is-kept.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from writing_rl.data.builder import BadRow, Builder

# extra_info keys the reward path reads (reward_fns/, writing_rl/): a user column of one of these names
# would change how its row is rewarded (group_size sets a group's size, src_text makes a row a
# translation, split=test freezes the curriculum...), so it is renamed like a clash with the builder's keys.
REWARD_KEYS = frozenset(
    {"index", "split", "group_size", "prompt", "src_text", "src_lang", "trg_lang", "lang_pair", "prompt_type",
     "output_format"}
)  # fmt: skip
SOURCE_ID = "source_id"  # extra_info key of the user's row id
ID_COLUMNS = ("id", "index")  # the user's row id without --id-key: the first of these the input has


def input_keys(builder: Any) -> set[str]:
    """The input columns a builder reads: its ``*_key`` settings (and its readers'), plus the columns it
    names in a ``consumes`` class attribute (``data_source`` for builders that take the row's own)."""
    keys = set(getattr(builder, "consumes", ()))
    for name, value in vars(builder).items():
        if hasattr(value, "input_keys"):
            keys |= value.input_keys()
        elif name.endswith("_key") and isinstance(value, str):
            keys.add(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            keys |= input_keys(value)
    return keys


@dataclass
class KeptColumns:
    """What the user gave that the builder does not read, kept in ``extra_info``: input column -> output
    key, each column's Arrow type, and the id column (``source_id``)."""

    fields: dict[str, str] = field(default_factory=dict)
    types: dict[str, pa.DataType] = field(default_factory=dict)
    id_column: str | None = None
    id_required: bool = False  # --id-key given: every row must have an id
    ids_seen: set[str] = field(default_factory=set)
    repeated: int = 0  # rows whose id an earlier row has
    first_repeated: str | None = None

    @classmethod
    def of(cls, path: str, builder: Builder, types: dict[str, pa.DataType], id_key: str | None = None) -> KeptColumns:
        """The columns kept from ``types`` (each wanted input column's type over the whole input, in input
        order: ``declared_types`` or ``ColumnTypes``), named for ``extra_info``."""
        if "extra_info" not in builder.schema.names:
            return cls()
        if id_key is not None and id_key not in types:
            raise ValueError(f"--id-key {id_key!r}: no such column in {path} (it has: {', '.join(types) or 'none'})")
        consumed = input_keys(builder)
        id_column = id_key or next((c for c in ID_COLUMNS if c in types), None)
        kept = cls(id_column=id_column, id_required=id_key is not None)
        if id_column is not None:
            kept.fields[id_column] = SOURCE_ID
        others = [c for c in types if c not in consumed and c != id_column]
        reserved = {*builder.schema.field("extra_info").type.names, *REWARD_KEYS, SOURCE_ID}
        taken = reserved | set(others)  # a free name stays as it is; a renamed one takes no user name
        for column in others:
            name = column
            while name in reserved or (name != column and name in taken):
                name = f"source_{name}"
            taken.add(name)
            kept.fields[column] = name
        kept.types = {c: pa.string() if pa.types.is_null(types[c]) else types[c] for c in kept.fields}
        return kept

    def same_columns(self, other: KeptColumns) -> bool:
        """Whether ``other`` keeps the same columns under the same names with the same types."""
        return self.fields == other.fields and self.types == other.types and self.id_column == other.id_column

    def check(self, row: dict) -> None:
        """With --id-key, raise ``BadRow`` unless the row has an id: a string or an integer. (A column
        found by its name, ``id`` or ``index``, is kept as it is and rejects no row.)"""
        if not self.id_required:
            return
        value = row.get(self.id_column)
        if _blank(value):
            raise BadRow(self.id_column, "missing: expected the row's id (--id-key), a string or an integer")
        whole = isinstance(value, float) and value.is_integer()  # 7.0: an integer column with nulls, via pandas
        if isinstance(value, bool) or not (isinstance(value, (str, numbers.Integral)) or whole):
            text = repr(value)
            shown = text if len(text) <= 60 else text[:60] + "..."
            raise BadRow(
                self.id_column, f"expected a row id, a string or an integer, got {type(value).__name__} {shown}"
            )

    def extend(self, schema: pa.Schema) -> pa.Schema:
        if not self.fields:
            return schema
        extra = schema.field("extra_info").type
        fields = [*extra, *(pa.field(self.fields[c], self.types[c]) for c in self.fields)]
        return schema.set(schema.get_field_index("extra_info"), pa.field("extra_info", pa.struct(fields)))

    def attach(self, table: pa.Table, sources: list[dict], counts: list[int]) -> pa.Table:
        """``table`` with the kept columns of each output row's input row added to its extra_info
        (``counts``: how many output rows each input row gave, in order)."""
        if not self.fields:
            return table
        self._note_ids(sources)
        counts = np.fromiter(counts, np.int64, len(counts))
        source_of_row = pa.array(np.repeat(np.arange(len(sources)), counts))  # augmented rows share a source
        struct = table.column("extra_info").combine_chunks()
        children = [struct.field(i) for i in range(struct.type.num_fields)]
        for column in self.fields:
            values = pa.array([self._value(row.get(column), column) for row in sources], type=self.types[column])
            children.append(values.take(source_of_row))
        names = [*struct.type.names, *self.fields.values()]
        extra_info = pa.StructArray.from_arrays(children, names=names)
        return table.set_column(table.schema.get_field_index("extra_info"), "extra_info", extra_info)

    def summary(self) -> list[str]:
        if not self.fields:
            return []
        kept = [name if name == column else f"{name} (your {column})" for column, name in self.fields.items()]
        lines = ["kept in extra_info: " + ", ".join(kept)]
        if self.repeated:
            lines.append(
                f"  note: {self.repeated} rows repeat the {SOURCE_ID} of an earlier row "
                f"(first: {self.first_repeated!r}); it does not name one row"
            )
        return lines

    def _value(self, value: Any, column: str) -> Any:
        if column == self.id_column and _blank(value):
            return None
        if pa.types.is_string(self.types[column]) and value is not None and not isinstance(value, str):
            return json.dumps(value, ensure_ascii=False, default=str)
        return value

    def _note_ids(self, sources: list[dict]) -> None:
        if self.id_column is None:
            return
        for row in sources:
            value = row.get(self.id_column)
            if _blank(value):
                continue
            key = str(value)  # 19 and "19" are one id once the column is text
            if key in self.ids_seen:
                self.repeated += 1
                self.first_repeated = self.first_repeated or key
            self.ids_seen.add(key)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def wanted_columns(builder: Builder, id_key: str | None = None) -> Callable[[str], bool] | None:
    """Which input columns may be kept (those the builder does not read, and the id columns); None when
    the builder's rows have no ``extra_info`` to keep them in."""
    if "extra_info" not in builder.schema.names:
        return None
    consumed = input_keys(builder)
    return lambda column: column not in consumed or column in (id_key, *ID_COLUMNS)


def declared_types(schema: pa.Schema, wanted: Callable[[str], bool]) -> dict[str, pa.DataType]:
    """The wanted columns' types as a parquet file or a datasets dir declares them."""
    return {f.name: f.type for f in schema if wanted(f.name)}


@dataclass
class ColumnTypes:
    """Each wanted input column's Arrow type over the rows seen so far, in input order, inferred chunk by
    chunk (a column missing from a row is null there): over the whole input, its one type."""

    wanted: Callable[[str], bool]
    types: dict[str, pa.DataType] = field(default_factory=dict)

    def add(self, rows: list[dict]) -> None:
        for column in dict.fromkeys(k for row in rows for k in row):
            if isinstance(column, str) and self.wanted(column):
                self.types[column] = _merge(self.types.get(column), _infer([row.get(column) for row in rows]))


def _infer(values: list) -> pa.DataType:
    # An object is kept as JSON text: as an Arrow struct every row would get every key seen in any row
    # (null where missing), so the row would not read back as the user gave it.
    if any(_holds_object(value) for value in values):
        return pa.string()
    try:
        return pa.array(values).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.string()


def _holds_object(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_object(item) for item in value)


def _merge(a: pa.DataType | None, b: pa.DataType) -> pa.DataType:
    """One type for a column seen as ``a`` in earlier chunks and ``b`` in this one: null gives way,
    integers widen to floats (also in lists); anything else mixed is kept as JSON text."""
    if a is None or a == b:
        return b
    try:
        unified = pa.unify_schemas([pa.schema([("c", a)]), pa.schema([("c", b)])], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
        return pa.string()
    return unified.field("c").type
