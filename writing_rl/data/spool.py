"""The kept values of a build's input rows, on disk until the kept columns' types are known
(``driver.run`` on JSONL, JSON and CSV inputs): for each chunk written, its split, the wanted columns of
its input rows and how many output rows each gave (pickled), replayed in the order they were added. The
driver needs them only when a column came or changed type after the first chunk was written, to write
the files again. An unnamed temporary file beside the outputs: nothing is left behind."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from typing import Iterator


class Spool:
    def __init__(self, directory: Path):
        self._file = tempfile.TemporaryFile(dir=directory, prefix=".build-spool-")

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc) -> None:
        self._file.close()

    def add(self, split: str, rows: list[dict], counts: list[int]) -> None:
        pickle.dump((split, rows, counts), self._file, protocol=pickle.HIGHEST_PROTOCOL)

    def replay(self) -> Iterator[tuple[str, list[dict], list[int]]]:
        """(split, rows, counts) of each chunk added, in order."""
        self._file.flush()
        self._file.seek(0)
        while True:
            try:
                yield pickle.load(self._file)
            except EOFError:
                return
