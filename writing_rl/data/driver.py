"""The driver every builder shares: read the input once, in chunks, validate and transform each row with
the builder (``builder.Builder``), split train/test, report bad rows, and write parquet all-or-nothing.

``run`` is a few named steps: the split rule (``plan_splits``: which split each input row goes to), the
row step (``_Rows``: each row built, or rejected by the reject rule of ``rejects.Rejects``), the rows
waiting for their split's next chunk (``_Pending``), and the kept columns' way to the files
(``_DeclaredColumns``, or the spool-and-rewrite path of ``_InferredColumns``: ``kept_columns.ColumnTypes``,
``spool.Spool``), through ``split_files.SplitFiles``. What a user sees of it (one pass, the kept columns and
their types, the rewrite, the count a test split needs first): docs/data-builders.md. Rows are written every
``chunk_size`` output rows, whatever the augmentation factor. Besides a test split, only a build that stops at
a bad row before its ``--id-key`` column was seen reads the input again (for its column names).
"""

from __future__ import annotations

import errno
import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sized

import numpy as np
import pyarrow as pa

from writing_rl.data.builder import BadRow, Builder, test_mask
from writing_rl.data.kept_columns import ColumnTypes, KeptColumns, declared_types, wanted_columns
from writing_rl.data.readers import Located, count_rows, detect_format, input_schema, iter_located
from writing_rl.data.rejects import Rejects, StopAtBadRow
from writing_rl.data.split_files import SplitFiles
from writing_rl.data.spool import Spool


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
    check_input(settings.input_path)
    plan = plan_splits(settings)
    report, rejects = BuildReport(), Rejects(settings.skip_bad)
    with ExitStack() as stack:
        files = SplitFiles(stack, {name: Path(settings.output_dir) / f"{name}.parquet" for name in plan.names})
        columns = _kept_columns(builder, settings, files, stack)
        pending = _Pending(plan.names, settings.chunk_size, _table_maker(builder), columns)
        id_check = KeptColumns(id_column=settings.id_key, id_required=settings.id_key is not None)
        rows = _Rows(builder, plan, id_check, pending, rejects, report)
        bar = _progress_bar(plan.total if plan.total is not None else _known_count(settings), settings.progress)
        try:
            _build_rows(settings, rows, columns, bar)
            columns.settle()
            if not report.accepted:
                rejects.write(settings.rejects_path)
                raise ValueError(
                    f"{settings.input_path}: no row accepted out of {report.read} (see --rejects for the reasons)"
                )
            pending.flush_all()
        finally:
            bar.close()
        kept = columns.finish()
    rejects.write(settings.rejects_path)
    return _finish_report(report, builder, settings, kept, rejects, pending, files)


# ---------------------------------------------------------------- the split rule


@dataclass(frozen=True)
class SplitPlan:
    """Which split each input row goes to, by its position in the input: with a test split, a seeded
    draw of exactly the asked count of rows (``builder.test_mask``) goes to test, the rest to train."""

    total: int | None = None  # input rows, counted only for a test split
    in_test: np.ndarray | None = None

    @property
    def names(self) -> list[str]:
        return ["train", "test"] if self.in_test is not None and self.in_test.any() else ["train"]

    def split_of(self, position: int) -> str:
        return "test" if self.in_test is not None and self.in_test[position] else "train"


def plan_splits(settings: BuildSettings) -> SplitPlan:
    """The split of every input row; the draw needs the row count, so a test split counts them first."""
    if not settings.test_size:
        return SplitPlan()
    total = count_rows(settings.input_path, settings.hf_split)
    return SplitPlan(total, test_mask(total, settings.test_size, settings.seed))


# ---------------------------------------------------------------- rows: built or rejected (``rejects``)


@dataclass
class _Rows:
    """The row step: each input row goes to its split, and is built there or rejected."""

    builder: Builder
    plan: SplitPlan
    id_check: KeptColumns  # with --id-key, a row without an id is bad
    pending: _Pending
    rejects: Rejects
    report: BuildReport

    def build(self, chunk: list[Located]) -> None:
        report = self.report
        for record in chunk:
            position = report.read
            report.read += 1
            split = self.plan.split_of(position)
            if record.error is not None:
                self.rejects.add(record, position, "", record.error)
                continue
            try:
                self.id_check.check(record.row)
                built = self.builder.build(record.row, report.accepted, split)
            except BadRow as bad:
                self.rejects.add(record, position, bad.field, bad.reason)
                continue
            report.accepted += 1
            self.pending.add(split, built, record.row)


def _build_rows(settings: BuildSettings, rows: _Rows, columns: _DeclaredColumns | _InferredColumns, bar) -> None:
    """Every input row, chunk by chunk, through the row step; at a bad row without --skip-bad, the
    rejects so far are written and the build stops with the row's error."""
    try:
        for chunk in iter_located(settings.input_path, settings.chunk_size, settings.hf_split):
            columns.see(chunk)
            rows.build(chunk)
            bar.update(len(chunk))
    except StopAtBadRow as stop:
        columns.settle_at_failure()
        rows.rejects.write(settings.rejects_path)
        raise ValueError(f"{settings.input_path}: {stop}") from None


class _Pending:
    """Built rows waiting per split, written as one chunk once ``chunk_size`` output rows are there."""

    def __init__(self, names: list[str], chunk_size: int, to_table: Callable[[list], pa.Table], columns):
        self.written = dict.fromkeys(names, 0)  # output rows written per split
        self._chunk_size = chunk_size
        self._to_table = to_table
        self._columns: _DeclaredColumns | _InferredColumns = columns
        self._results: dict[str, list[Sized]] = {name: [] for name in names}  # build() results not yet written
        self._sources: dict[str, list[dict]] = {name: [] for name in names}  # their input rows
        self._rows = dict.fromkeys(names, 0)

    def add(self, split: str, built: Sized, source: dict) -> None:
        self._results[split].append(built)
        self._sources[split].append(source)
        self._rows[split] += len(built)
        if self._rows[split] >= self._chunk_size:
            self.flush(split)

    def flush(self, split: str) -> None:
        if not self._rows[split]:
            return
        results = self._results[split]
        table, counts = self._to_table(results), [len(result) for result in results]
        self._columns.write(split, table, self._sources[split], counts)
        self.written[split] += self._rows[split]
        self._results[split], self._sources[split], self._rows[split] = [], [], 0

    def flush_all(self) -> None:
        for split in self._rows:
            self.flush(split)


def _table_maker(builder: Builder) -> Callable[[list], pa.Table]:
    """The builder's ``to_table``, else a table of the row dicts its ``build`` returns."""
    to_table = getattr(builder, "to_table", None)
    if to_table is not None:
        return to_table
    return lambda results: pa.Table.from_pylist([row for rows in results for row in rows], schema=builder.schema)


# ---------------------------------------------------------------- the kept columns' way to the files


def _kept_columns(
    builder: Builder, settings: BuildSettings, files: SplitFiles, stack: ExitStack
) -> _DeclaredColumns | _InferredColumns:
    """Known before a row is read (a builder whose rows keep none; a parquet file or a datasets dir,
    which declare their types), or inferred while the rows are read (JSONL, JSON, CSV)."""
    wanted = wanted_columns(builder, settings.id_key)
    if wanted is None:
        return _DeclaredColumns(KeptColumns(), builder.schema, files)
    declared = input_schema(settings.input_path, settings.hf_split)
    if declared is not None:
        kept = KeptColumns.of(settings.input_path, builder, declared_types(declared, wanted), settings.id_key)
        return _DeclaredColumns(kept, builder.schema, files)
    spool = stack.enter_context(Spool(_existing_ancestor(settings.output_dir)))
    return _InferredColumns(builder, settings, ColumnTypes(wanted), files, spool)


class _DeclaredColumns:
    """Kept columns known from the start: the files open with them at once, each chunk is written whole."""

    def __init__(self, kept: KeptColumns, schema: pa.Schema, files: SplitFiles):
        self._kept = kept
        self._files = files
        files.open(kept.extend(schema))

    def see(self, chunk: list[Located]) -> None:
        pass

    def write(self, split: str, table: pa.Table, sources: list[dict], counts: list[int]) -> None:
        self._files.write(split, self._kept.attach(table, sources, counts))

    def settle(self) -> None:
        pass

    def settle_at_failure(self) -> None:
        pass

    def finish(self) -> KeptColumns:
        return self._kept


class _InferredColumns:
    """The spool-and-rewrite path (JSONL, JSON, CSV): each chunk read adds to the columns' types; the files
    open with the kept columns known when the first chunk is written, and every chunk's kept values wait
    in the spool. Once the whole input is read its kept columns are known: when they are not those the
    files were written with, the files are written again from the spool (``SplitFiles.rewrite``)."""

    def __init__(self, builder: Builder, settings: BuildSettings, types: ColumnTypes, files: SplitFiles, spool: Spool):
        self._builder = builder
        self._settings = settings
        self._types = types
        self._files = files
        self._spool = spool
        self._written_with: KeptColumns | None = None  # the kept columns of the chunks written so far
        self._values_left_out = False  # a chunk was written without its kept values (nulls in their place)
        self._final: KeptColumns | None = None  # over the whole input, once it is read

    def see(self, chunk: list[Located]) -> None:
        self._types.add(_rows_of(chunk))

    def write(self, split: str, table: pa.Table, sources: list[dict], counts: list[int]) -> None:
        columns = list(self._types.types)  # every wanted column of the rows read so far
        self._spool.add(split, [{c: row[c] for c in columns if c in row} for row in sources], counts)
        now = self._kept(self._types.types)
        if self._written_with is None:
            self._written_with = now
            self._files.open(now.extend(self._builder.schema))
        elif not now.same_columns(self._written_with):  # the files will be written again: nulls will do
            sources = [{}] * len(sources)
            self._values_left_out = True
        self._files.write(split, self._written_with.attach(table, sources, counts))

    def settle(self) -> None:
        """The whole input is read: its kept columns are known (the files open with them if no chunk
        was written yet)."""
        self._final = self._kept(self._types.types)
        self._files.open(self._final.extend(self._builder.schema))
        self._written_with = self._written_with or self._final

    def settle_at_failure(self) -> None:
        """A build stopped at a bad row opens its files as one that went on would: with the kept columns
        of the whole input, so that an --id-key column no row has is the error reported. Their names are
        read in a pass of its own when that column is not seen yet: it cannot take the build's rows."""
        types, id_key = self._types.types, self._settings.id_key
        if id_key is not None and id_key not in types:
            types = _input_types(self._settings, self._types.wanted)
        self._files.open(self._kept(types).extend(self._builder.schema))

    def finish(self) -> KeptColumns:
        """The kept columns of the files, written again from the spool when they were not final or a
        chunk's values were left out: a column's type can come back to the first chunk's (null, then
        integers, then text: text, as at first), and the chunks written in between hold nulls."""
        if not self._values_left_out and self._final.same_columns(self._written_with):
            return self._written_with  # with the ids it has seen
        self._files.rewrite(self._final, self._builder.schema, self._spool.replay())
        return self._final

    def _kept(self, types: dict[str, pa.DataType]) -> KeptColumns:
        return KeptColumns.of(self._settings.input_path, self._builder, types, self._settings.id_key)


def _rows_of(chunk: list[Located]) -> list[dict]:
    return [record.row for record in chunk if record.row is not None]


def _input_types(settings: BuildSettings, wanted: Callable[[str], bool]) -> dict[str, pa.DataType]:
    """The wanted columns' types over the whole input, read in a pass of its own."""
    types = ColumnTypes(wanted)
    for chunk in iter_located(settings.input_path, settings.chunk_size, settings.hf_split):
        types.add(_rows_of(chunk))
    return types.types


# ---------------------------------------------------------------- the report and its files


def _finish_report(
    report: BuildReport,
    builder: Builder,
    settings: BuildSettings,
    kept: KeptColumns,
    rejects: Rejects,
    pending: _Pending,
    files: SplitFiles,
) -> BuildReport:
    report.rejected = len(rejects.records)
    report.written = dict(pending.written)
    summary = getattr(builder, "summary", None)
    report.details = [*(summary() if summary else []), *kept.summary()]
    report.outputs = {name: str(path) for name, path in files.paths.items()}
    if settings.rejects_path:
        report.outputs["rejects"] = settings.rejects_path
    return report


def _existing_ancestor(path: str) -> Path:
    """Where the spool goes: the output dir or its nearest existing parent (the outputs' file system,
    and no directory made for a build that fails before writing)."""
    path = Path(path).resolve()
    while not path.is_dir():
        path = path.parent
    return path


def check_input(path: str) -> None:
    """A missing input or one of a format we do not read fails before the progress bar is drawn."""
    if not Path(path).exists():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    detect_format(path)


def _known_count(settings: BuildSettings) -> int | None:
    """The row count for the progress bar where it costs nothing to know (parquet, datasets dirs)."""
    if detect_format(settings.input_path) in ("parquet", "hf"):
        return count_rows(settings.input_path, settings.hf_split)
    return None


def _progress_bar(total: int | None, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="rows", disable=not enabled, file=sys.stderr, mininterval=1.0)
