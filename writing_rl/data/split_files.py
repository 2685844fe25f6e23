"""The split files of a build (``driver.run``): a parquet writer each into a temporary path renamed on
success, opened once their schema is known, and written again chunk for chunk when the kept columns
turned out other than those the first chunk was written with (``SplitFiles.rewrite``)."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from writing_rl.data.kept_columns import KeptColumns
from writing_rl.files import atomic_path


class SplitFiles:
    """The split files: a parquet writer each into a temporary path renamed on success, opened once
    their schema is known (the output dir appears then, not on an error found before)."""

    def __init__(self, stack: ExitStack, paths: dict[str, Path]):
        self.paths = paths
        self._stack = stack
        self._tmp_paths: dict[str, Path] = {}
        self._writers: dict[str, pq.ParquetWriter] = {}

    def open(self, schema: pa.Schema) -> None:
        """Open the writers with ``schema``; a no-op once they are open."""
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
