"""The driver every builder shares: stream rows in chunks, validate and transform each, split train/test,
report bad rows, and write parquet all-or-nothing.

A builder turns one raw row into one or more output rows (more when it augments) and raises ``BadRow``
naming the field and the reason when the row cannot be used. All outputs of one input row go to the
same split, so augmented copies never leak between train and test.

``build`` returns a list of dicts matching ``builder.schema``, unless the builder has a
``to_table(results)`` method: then it returns any sized batch of output rows (``len`` = rows) and
``to_table`` turns a list of such results into a table (the fast builders keep columns per input row and
build Arrow arrays directly). A builder's optional ``summary()`` adds lines to the report. Memory stays
bounded: rows are written every ``chunk_size`` output rows, whatever the augmentation factor.

Input columns a builder does not read (an id, a domain, a source...) are kept in each output row's
``extra_info`` under their own name (``source_<name>`` when the builder writes that key itself), with
one Arrow type per column over the whole file (a column of mixed types is kept as JSON text).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol, Sized

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from writing_rl.io import atomic_path

from .readers import Located, count_rows, iter_located


class BadRow(ValueError):
    def __init__(self, field: str, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}': {reason}")


class Builder(Protocol):
    schema: pa.Schema

    def build(self, row: dict, source_id: int, split: str) -> Sized:
        """Output rows for one input row; ``source_id`` counts accepted input rows from 0."""
        ...


@dataclass
class BuildReport:
    read: int = 0
    accepted: int = 0
    rejected: int = 0
    written: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)  # builder-specific lines (augmentation counts, ...)

    @property
    def factor(self) -> float:
        """Augmentation factor: output rows per accepted input row."""
        return sum(self.written.values()) / self.accepted if self.accepted else 0.0

    def lines(self) -> list[str]:
        total = sum(self.written.values())
        split_counts = ", ".join(f"{name} {count}" for name, count in self.written.items())
        return [
            f"read {self.read} rows: accepted {self.accepted}, rejected {self.rejected}",
            f"wrote {total} rows ({split_counts}); {self.factor:.2f} output rows per accepted row",
            f"check: read {self.read} = written {total} / factor {self.factor:.2f} + rejected {self.rejected}",
            *self.details,
            *(f"  {name}: {path}" for name, path in self.outputs.items()),
        ]


def parse_test_size(value: str | float) -> float:
    """A fraction in [0, 1) or a whole number of input rows."""
    number = float(value)
    if number < 0 or (number >= 1 and not number.is_integer()):
        raise ValueError(f"--test-size must be a fraction in [0, 1) or a whole number of rows, got {value}")
    return number


def test_mask(total: int, test_size: float, seed: int) -> np.ndarray:
    """Which input rows (by position) go to the test split: a seeded choice of exactly the asked count."""
    count = int(test_size) if test_size >= 1 else int(round(total * test_size))
    if count > total:
        raise ValueError(f"--test-size {int(test_size)} exceeds the {total} input rows")
    mask = np.zeros(total, dtype=bool)
    if count:
        mask[np.random.default_rng(seed).choice(total, size=count, replace=False)] = True
    return mask


def run(
    builder: Builder,
    input_path: str,
    output_dir: str,
    *,
    seed: int = 0,
    test_size: float = 0.0,
    rejects_path: str | None = None,
    skip_bad: bool = False,
    chunk_size: int = 10_000,
    hf_split: str = "train",
    progress: bool = True,
) -> BuildReport:
    total = count_rows(input_path, hf_split)
    in_test = test_mask(total, test_size, seed)
    splits = ["train", "test"] if in_test.any() else ["train"]
    out_paths = {name: Path(output_dir) / f"{name}.parquet" for name in splits}
    report = BuildReport()
    rejects: list[dict] = []
    kept = KeptColumns.scan(input_path, builder, chunk_size, hf_split)
    schema = kept.extend(builder.schema)

    to_table = getattr(builder, "to_table", None) or (
        lambda results: pa.Table.from_pylist([row for rows in results for row in rows], schema=builder.schema)
    )
    with ExitStack() as stack:
        tmp_paths = {name: stack.enter_context(atomic_path(path)) for name, path in out_paths.items()}
        writers = {name: pq.ParquetWriter(tmp_paths[name], schema) for name in splits}
        pending: dict[str, list] = {name: [] for name in splits}  # build() results not yet written
        sources: dict[str, list] = {name: [] for name in splits}  # their input rows (for the kept columns)
        pending_rows = dict.fromkeys(splits, 0)

        def flush(name: str) -> None:
            if pending_rows[name]:
                writers[name].write_table(kept.attach(to_table(pending[name]), sources[name], pending[name]))
                report.written[name] = report.written.get(name, 0) + pending_rows[name]
                pending[name], sources[name], pending_rows[name] = [], [], 0

        def reject(record: Located, position: int, field: str, reason: str) -> None:
            report.rejected += 1
            rejects.append(
                {"where": record.where, "row": position, "field": field, "reason": reason, "data": record.row}
            )
            if not skip_bad:
                _write_rejects(rejects_path, rejects)
                what = f"field '{field}': {reason}" if field else reason
                raise ValueError(
                    f"{input_path}: {record.where} rejected: {what} "
                    "(pass --skip-bad to skip bad rows and report them in --rejects)"
                )

        bar = _progress_bar(total, progress)
        try:
            for chunk in iter_located(input_path, chunk_size, hf_split):
                for record in chunk:
                    position = report.read
                    report.read += 1
                    split = "test" if in_test[position] else "train"
                    if record.error is not None:
                        reject(record, position, "", record.error)
                        continue
                    try:
                        built = builder.build(record.row, report.accepted, split)
                    except BadRow as bad:
                        reject(record, position, bad.field, bad.reason)
                        continue
                    report.accepted += 1
                    pending[split].append(built)
                    sources[split].append(record.row)
                    pending_rows[split] += len(built)
                    if pending_rows[split] >= chunk_size:
                        flush(split)
                bar.update(len(chunk))
            if not report.accepted:
                _write_rejects(rejects_path, rejects)
                raise ValueError(f"{input_path}: no row accepted out of {report.read} (see --rejects for the reasons)")
            for name in splits:
                flush(name)
        finally:
            bar.close()
            for writer in writers.values():
                writer.close()
    _write_rejects(rejects_path, rejects)
    report.written = {name: report.written.get(name, 0) for name in splits}
    summary = getattr(builder, "summary", None)
    report.details = list(summary()) if summary else []
    if kept.fields:
        report.details.append("kept in extra_info: " + ", ".join(kept.fields.values()))
    report.outputs = {name: str(path) for name, path in out_paths.items()}
    if rejects_path:
        report.outputs["rejects"] = rejects_path
    return report


def input_keys(builder: Any) -> set[str]:
    """The input columns a builder reads: its ``*_key`` settings (and its readers'), plus data_source."""
    keys = {"data_source"}
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
    """The input columns kept in ``extra_info``: input name -> output field, and the field's Arrow type."""

    fields: dict[str, str] = field(default_factory=dict)
    types: dict[str, pa.DataType] = field(default_factory=dict)

    @classmethod
    def scan(cls, path: str, builder: Builder, chunk_size: int, hf_split: str) -> KeptColumns:
        if "extra_info" not in builder.schema.names:
            return cls()
        consumed = input_keys(builder)
        types: dict[str, pa.DataType] = {}
        if str(path).endswith((".parquet", ".pq")):
            for column in pq.read_schema(path):
                types[column.name] = column.type
        else:
            for chunk in iter_located(path, chunk_size, hf_split):
                rows = [r.row for r in chunk if r.row is not None]
                for column in dict.fromkeys(k for row in rows for k in row):
                    if isinstance(column, str) and column not in consumed:
                        types[column] = _merge(types.get(column), _infer([row.get(column) for row in rows]))
        taken = set(builder.schema.field("extra_info").type.names)
        kept = cls()
        for column, kind in types.items():
            if column in consumed:
                continue
            name = column if column not in taken else f"source_{column}"
            taken.add(name)
            kept.fields[column] = name
            kept.types[column] = pa.string() if pa.types.is_null(kind) else kind
        return kept

    def extend(self, schema: pa.Schema) -> pa.Schema:
        if not self.fields:
            return schema
        extra = schema.field("extra_info").type
        fields = [*extra, *(pa.field(self.fields[c], self.types[c]) for c in self.fields)]
        return schema.set(schema.get_field_index("extra_info"), pa.field("extra_info", pa.struct(fields)))

    def attach(self, table: pa.Table, sources: list[dict], results: list) -> pa.Table:
        """``table`` with the kept columns of each output row's input row added to its extra_info."""
        if not self.fields:
            return table
        counts = [len(result) for result in results]
        struct = table.column("extra_info").combine_chunks()
        children = [struct.field(i) for i in range(struct.type.num_fields)]
        for column in self.fields:
            values = [self._value(row.get(column), column) for row, n in zip(sources, counts) for _ in range(n)]
            children.append(pa.array(values, type=self.types[column]))
        names = [*struct.type.names, *self.fields.values()]
        extra_info = pa.StructArray.from_arrays(children, names=names)
        return table.set_column(table.schema.get_field_index("extra_info"), "extra_info", extra_info)

    def _value(self, value: Any, column: str) -> Any:
        if pa.types.is_string(self.types[column]) and value is not None and not isinstance(value, str):
            return json.dumps(value, ensure_ascii=False, default=str)
        return value


def _infer(values: list) -> pa.DataType:
    try:
        return pa.array(values).type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.string()


def _merge(a: pa.DataType | None, b: pa.DataType) -> pa.DataType:
    """One type for a column seen as ``a`` in earlier chunks and ``b`` in this one."""
    if a is None or pa.types.is_null(a):
        return b
    if pa.types.is_null(b) or a == b:
        return a
    numbers = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numbers) and any(f(b) for f in numbers):
        return pa.float64()
    return pa.string()  # mixed kinds: kept as JSON text


def _write_rejects(path: str | None, rejects: Iterable[dict[str, Any]]) -> None:
    if not path:
        return
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for record in rejects:
                f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="rows", disable=not enabled, file=sys.stderr, mininterval=1.0)
