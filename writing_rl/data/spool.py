"""A build's chunks on disk until the kept columns' types are known (``driver.run`` on JSONL, JSON and
CSV inputs): each built chunk (an Arrow table, in Arrow's stream format), the kept values of its input
rows and how many output rows each gave (pickled), replayed in the order they were added. The files sit
in a temporary directory beside the outputs, removed when the spool closes."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from typing import Iterator

import pyarrow as pa


class Spool:
    def __init__(self, directory: Path):
        self._dir = tempfile.TemporaryDirectory(dir=directory, prefix=".build-spool-")
        self._tables_path = Path(self._dir.name) / "tables.arrow"
        self._tables: pa.ipc.RecordBatchStreamWriter | None = None
        self._sink: pa.NativeFile | None = None
        self._meta = open(Path(self._dir.name) / "rows.pickle", "w+b")

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc) -> None:
        self._close_tables()
        self._meta.close()
        self._dir.cleanup()

    def add(self, split: str, table: pa.Table, rows: list[dict], counts: list[int]) -> None:
        if self._tables is None:
            self._sink = pa.OSFile(str(self._tables_path), "wb")
            self._tables = pa.ipc.new_stream(self._sink, table.schema)
        batches = table.to_batches()
        for batch in batches:
            self._tables.write_batch(batch)
        pickle.dump((split, len(batches), rows, counts), self._meta, protocol=pickle.HIGHEST_PROTOCOL)

    def replay(self) -> Iterator[tuple[str, pa.Table, list[dict], list[int]]]:
        """(split, table, rows, counts) of each chunk added, in order."""
        self._close_tables()
        self._meta.seek(0)
        if not self._tables_path.exists():
            return
        with pa.OSFile(str(self._tables_path)) as source:
            reader = pa.ipc.open_stream(source)
            while True:
                try:
                    split, n_batches, rows, counts = pickle.load(self._meta)
                except EOFError:
                    return
                batches = [reader.read_next_batch() for _ in range(n_batches)]
                yield split, pa.Table.from_batches(batches, reader.schema), rows, counts

    def _close_tables(self) -> None:
        if self._tables is not None:
            self._tables.close()
            self._sink.close()
            self._tables = self._sink = None
