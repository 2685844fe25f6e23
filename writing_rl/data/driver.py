"""The driver every builder shares: read the input once, in chunks, validate and transform each row with
the builder (``builder.Builder``), split train/test, report bad rows, and write parquet all-or-nothing.

Memory stays bounded: rows are written every ``chunk_size`` output rows, whatever the augmentation
factor. What the user gave beyond what the builder reads goes into each row's ``extra_info``
(``kept_columns.KeptColumns``), each column with one type over the whole input. A parquet file or a
datasets dir declares those types. From JSONL, JSON and CSV they are inferred in the same pass that
builds the rows (``kept_columns.ColumnTypes``): chunks are written with the columns known when the first
one is, and the kept values of their input rows wait in a spool file (``spool.Spool``); when a column
came or changed type later, the files are written again, chunk for chunk, from the spool, so the
outputs are what one type per column from the start gives. Only a test split reads more than once: its
seeded draw of exactly N rows needs the row count first (``readers.count_rows``: a line count for JSONL,
free for parquet and datasets dirs).
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from writing_rl.data.builder import BadRow, Builder, test_mask
from writing_rl.data.kept_columns import ColumnTypes, KeptColumns, declared_types, wanted_columns
from writing_rl.data.readers import Located, count_rows, detect_format, input_schema, iter_located
from writing_rl.data.spool import Spool
from writing_rl.files import atomic_path


@dataclass(frozen=True)
class BuildSettings:
    """One build run: where from and to, the split, what to do with bad rows, and how it reads."""

    input_path: str
    output_dir: str
    seed: int = 0
    test_size: float = 0.0  # a fraction in [0, 1) or a whole number of input rows
    rejects_path: str | None = None
    skip_bad: bool = False
    chunk_size: int = 10_000
    hf_split: str = "train"
    progress: bool = True
    id_key: str | None = None


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


def run(builder: Builder, settings: BuildSettings) -> BuildReport:
    s = settings
    total = count_rows(s.input_path, s.hf_split) if s.test_size else None
    in_test = test_mask(total, s.test_size, s.seed) if total is not None else None
    splits = ["train", "test"] if in_test is not None and in_test.any() else ["train"]
    report = BuildReport()
    rejects: list[dict] = []
    wanted = wanted_columns(builder, s.id_key)
    declared = input_schema(s.input_path, s.hf_split) if wanted else None
    kept: KeptColumns | None = None  # None until the whole input is read (JSONL, JSON, CSV)
    if wanted is None:
        kept = KeptColumns()
    elif declared is not None:
        kept = KeptColumns.of(s.input_path, builder, declared_types(declared, wanted), s.id_key)
    column_types = ColumnTypes(wanted) if kept is None else None
    id_check = KeptColumns(id_column=s.id_key, id_required=s.id_key is not None)

    to_table = getattr(builder, "to_table", None) or (
        lambda results: pa.Table.from_pylist([row for rows in results for row in rows], schema=builder.schema)
    )
    with ExitStack() as stack:
        outputs = _Outputs(stack, {name: Path(s.output_dir) / f"{name}.parquet" for name in splits})
        spool = None if kept is not None else stack.enter_context(Spool(_existing_ancestor(s.output_dir)))
        if kept is not None:
            outputs.open(kept.extend(builder.schema))
        pending: dict[str, list] = {name: [] for name in splits}  # build() results not yet written
        sources: dict[str, list] = {name: [] for name in splits}  # their input rows (for the kept columns)
        pending_rows = dict.fromkeys(splits, 0)

        written_with = kept  # the kept columns the chunks written so far have (JSONL...: as known then)

        def flush(name: str) -> None:
            nonlocal written_with
            if pending_rows[name]:
                table, counts = to_table(pending[name]), [len(result) for result in pending[name]]
                rows = sources[name]
                if spool is not None:
                    columns = list(column_types.types)  # every wanted column of the rows read so far
                    spool.add(name, [{c: row[c] for c in columns if c in row} for row in rows], counts)
                    now = KeptColumns.of(s.input_path, builder, dict(column_types.types), s.id_key)
                    if written_with is None:
                        written_with = now
                        outputs.open(written_with.extend(builder.schema))
                    elif not now.same_columns(written_with):  # the files will be written again: nulls will do
                        rows = [{}] * len(rows)
                outputs.write(name, written_with.attach(table, rows, counts))
                report.written[name] = report.written.get(name, 0) + pending_rows[name]
                pending[name], sources[name], pending_rows[name] = [], [], 0

        def known_columns() -> dict[str, pa.DataType]:
            """The wanted columns over the whole input, reading what is left of it for their names when
            the --id-key column is not seen yet (a column no row has is the error to report first)."""
            if s.id_key is not None and s.id_key not in column_types.types:
                for chunk in chunks:
                    column_types.add([record.row for record in chunk if record.row is not None])
            return column_types.types

        def reject(record: Located, position: int, field: str, reason: str) -> None:
            report.rejected += 1
            rejects.append(_reject_record(record, position, field, reason))
            if not s.skip_bad:
                if kept is None:
                    outputs.open(
                        KeptColumns.of(s.input_path, builder, known_columns(), s.id_key).extend(builder.schema)
                    )
                _write_rejects(s.rejects_path, rejects)
                what = f"field '{field}': {reason}" if field else reason
                raise ValueError(
                    f"{s.input_path}: {record.where} rejected: {what} "
                    "(pass --skip-bad to skip bad rows and report them in --rejects)"
                )

        bar = _progress_bar(total if total is not None else _known_count(s), s.progress)
        chunks = iter(iter_located(s.input_path, s.chunk_size, s.hf_split))
        try:
            for chunk in chunks:
                if column_types is not None:
                    column_types.add([record.row for record in chunk if record.row is not None])
                for record in chunk:
                    position = report.read
                    report.read += 1
                    split = "test" if in_test is not None and in_test[position] else "train"
                    if record.error is not None:
                        reject(record, position, "", record.error)
                        continue
                    try:
                        id_check.check(record.row)
                        built = builder.build(record.row, report.accepted, split)
                    except BadRow as bad:
                        reject(record, position, bad.field, bad.reason)
                        continue
                    report.accepted += 1
                    pending[split].append(built)
                    sources[split].append(record.row)
                    pending_rows[split] += len(built)
                    if pending_rows[split] >= s.chunk_size:
                        flush(split)
                bar.update(len(chunk))
            if kept is None:
                kept = KeptColumns.of(s.input_path, builder, column_types.types, s.id_key)
                outputs.open(kept.extend(builder.schema))
                written_with = written_with or kept
            if not report.accepted:
                _write_rejects(s.rejects_path, rejects)
                raise ValueError(
                    f"{s.input_path}: no row accepted out of {report.read} (see --rejects for the reasons)"
                )
            for name in splits:
                flush(name)
        finally:
            bar.close()
        if spool is not None and kept.same_columns(written_with):
            kept = written_with  # with the ids it has seen
        elif spool is not None:  # a column came or changed type after the first chunk was written
            outputs.rewrite(kept, builder.schema, spool.replay())
    _write_rejects(s.rejects_path, rejects)
    report.written = {name: report.written.get(name, 0) for name in splits}
    summary = getattr(builder, "summary", None)
    report.details = list(summary()) if summary else []
    report.details += kept.summary()
    report.outputs = {name: str(path) for name, path in outputs.paths.items()}
    if s.rejects_path:
        report.outputs["rejects"] = s.rejects_path
    return report


class _Outputs:
    """The split files: a parquet writer each into a temporary path renamed on success, opened once
    their schema is known (the output dir appears then, not on an error found before)."""

    def __init__(self, stack: ExitStack, paths: dict[str, Path]):
        self.paths = paths
        self._stack = stack
        self._tmp_paths: dict[str, Path] = {}
        self._writers: dict[str, pq.ParquetWriter] = {}

    def open(self, schema: pa.Schema) -> None:
        if not self._writers:
            self._tmp_paths = {name: self._stack.enter_context(atomic_path(p)) for name, p in self.paths.items()}
            self._writers = {
                name: self._stack.enter_context(pq.ParquetWriter(tmp, schema)) for name, tmp in self._tmp_paths.items()
            }

    def write(self, name: str, table: pa.Table) -> None:
        self._writers[name].write_table(table)

    def rewrite(
        self, kept: KeptColumns, schema: pa.Schema, chunks: Iterable[tuple[str, list[dict], list[int]]]
    ) -> None:
        """Write the files again with ``kept``'s columns, chunk for chunk: each chunk's rows read back,
        their ``extra_info`` cut to the builder's ``schema``, the kept values of their input rows
        (``chunks``: split, rows and output counts, in the order they were written) attached again."""
        tmp_paths = dict(self._tmp_paths)
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
        readers = {name: _row_groups(tmp) for name, tmp in tmp_paths.items()}
        new_paths = {name: tmp.with_name(tmp.name + ".rewrite") for name, tmp in tmp_paths.items()}
        with ExitStack() as stack:
            full = kept.extend(schema)
            writers = {name: stack.enter_context(pq.ParquetWriter(path, full)) for name, path in new_paths.items()}
            for name, rows, counts in chunks:
                table = _read_rows(readers[name], sum(counts))
                writers[name].write_table(kept.attach(_cut_extra_info(table, schema), rows, counts))
        for name, path in new_paths.items():
            os.replace(path, tmp_paths[name])


def _row_groups(path: Path) -> Iterator[pa.Table]:
    parquet = pq.ParquetFile(path)
    for index in range(parquet.num_row_groups):
        yield parquet.read_row_group(index)


def _read_rows(row_groups: Iterator[pa.Table], count: int) -> pa.Table:
    """The next ``count`` rows (one chunk written: one row group, or more for a chunk of over 1Mi rows)."""
    tables = [next(row_groups)]
    while sum(t.num_rows for t in tables) < count:
        tables.append(next(row_groups))
    return pa.concat_tables(tables).combine_chunks()


def _cut_extra_info(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``extra_info`` holding only the builder's own fields, as ``schema`` has them."""
    own = schema.field("extra_info").type
    struct = table.column("extra_info").combine_chunks()
    extra_info = pa.StructArray.from_arrays([struct.field(f.name) for f in own], fields=list(own))
    return table.set_column(table.schema.get_field_index("extra_info"), "extra_info", extra_info)


def _existing_ancestor(path: str) -> Path:
    """Where the spool goes: the output dir or its nearest existing parent (the outputs' file system,
    and no directory made for a build that fails before writing)."""
    path = Path(path).resolve()
    while not path.is_dir():
        path = path.parent
    return path


def _known_count(settings: BuildSettings) -> int | None:
    """The row count for the progress bar where it costs nothing to know (parquet, datasets dirs)."""
    if detect_format(settings.input_path) in ("parquet", "hf"):
        return count_rows(settings.input_path, settings.hf_split)
    return None


def _reject_record(record: Located, position: int, field: str, reason: str) -> dict[str, Any]:
    """A ``--rejects`` line: where (the 1-based ``line`` of JSONL/CSV records; ``row``, the record's
    0-based position in the input), what was wrong, and the record (``data``) or its raw ``text``."""
    where: dict[str, Any] = {"where": record.where}
    if record.unit == "line":
        where["line"] = record.number
    out = {**where, "row": position, "field": field, "reason": reason, "data": record.row}
    if record.text is not None:
        out["text"] = record.text
    return out


def _write_rejects(path: str | None, rejects: Iterable[dict[str, Any]]) -> None:
    if not path:
        return
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for record in rejects:
                f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def _progress_bar(total: int | None, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="rows", disable=not enabled, file=sys.stderr, mininterval=1.0)
