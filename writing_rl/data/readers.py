"""Read raw rows from parquet, JSONL, JSON, CSV or a local Hugging Face ``datasets`` directory, in chunks.

Each record comes with where it is in the input (its 1-based line in JSONL and CSV, its 0-based row index
otherwise) and, when it cannot be a row (docs/data-builders.md#bad-input), with its error instead, so a build can
reject it like any bad row.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

FORMATS = ("parquet", "jsonl", "json", "csv", "hf")
_ONE_OBJECT_PER_LINE = "expected one JSON object per line"
_RAW_TEXT_LIMIT = 1000  # characters of an unreadable record kept for the rejects file

# Long-form texts (references, stories) pass csv's default limit of 128 KiB per cell.
csv.field_size_limit(2**31 - 1)


def detect_format(path: str | Path) -> str:
    path = Path(path)
    if path.is_dir():
        return "hf"
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix in (".csv", ".tsv"):
        return "csv"
    raise ValueError(f"{path}: unknown input format; expected one of .parquet .jsonl .json .csv or a datasets dir")


@dataclass(frozen=True)
class Located:
    """One input record: where it is (``line`` 1-based for JSONL/CSV, ``row`` 0-based otherwise), and
    its row, or what is wrong with it (``error``, with ``text``: the raw record, cut to 1000 characters)."""

    unit: str  # "line" or "row"
    number: int
    row: dict | None = None
    error: str | None = None
    text: str | None = None

    @property
    def where(self) -> str:
        return f"line {self.number}" if self.unit == "line" else f"row {self.number} (0-based)"


def count_rows(path: str | Path, hf_split: str = "train") -> int:
    fmt = detect_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    if fmt == "jsonl":
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    if fmt == "hf":
        return len(_load_hf(path, hf_split))
    return sum(len(chunk) for chunk in iter_located(path, hf_split=hf_split))


def iter_chunks(path: str | Path, chunk_size: int = 10_000, hf_split: str = "train") -> Iterator[list[dict]]:
    """Lists of row dicts, at most ``chunk_size`` each, in file order; a bad record is an error."""
    for chunk in iter_located(path, chunk_size, hf_split):
        for record in chunk:
            if record.error is not None:
                raise ValueError(f"{path}: {record.where}: {record.error}")
        yield [record.row for record in chunk]


def iter_located(path: str | Path, chunk_size: int = 10_000, hf_split: str = "train") -> Iterator[list[Located]]:
    """Lists of ``Located`` records, at most ``chunk_size`` each, in file order."""
    fmt = detect_format(path)
    if fmt == "jsonl":
        yield from _chunked(_jsonl_records(path), chunk_size)
    elif fmt == "csv":
        yield from _chunked(_csv_records(path), chunk_size)
    elif fmt == "json":
        yield from _chunked(_json_records(path), chunk_size)
    else:
        start = 0
        for rows in _table_chunks(path, fmt, chunk_size, hf_split):
            yield [Located("row", start + i, row) for i, row in enumerate(rows)]
            start += len(rows)


def input_schema(path: str | Path, hf_split: str = "train"):
    """The Arrow schema of a typed input (parquet, ``datasets`` dir); None for JSONL, JSON and CSV."""
    fmt = detect_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path)
    if fmt == "hf":
        return _load_hf(path, hf_split).features.arrow_schema
    return None


def _table_chunks(path, fmt: str, chunk_size: int, hf_split: str) -> Iterator[list[dict]]:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_size):
            yield batch.to_pylist()
    else:
        dataset = _load_hf(path, hf_split)
        for start in range(0, len(dataset), chunk_size):
            batch = dataset[start : start + chunk_size]
            keys = list(batch)
            yield [dict(zip(keys, values)) for values in zip(*(batch[k] for k in keys))]


def _chunked(records: Iterator[Located], chunk_size: int) -> Iterator[list[Located]]:
    chunk: list[Located] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _jsonl_records(path) -> Iterator[Located]:
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if raw.strip():
                yield _jsonl_record(number, raw)


def _jsonl_record(number: int, raw: bytes) -> Located:
    raw = raw.rstrip(b"\r\n")  # columns count within the line

    def bad(problem: str) -> Located:
        text = raw.decode("utf-8", errors="backslashreplace")[:_RAW_TEXT_LIMIT]
        return Located("line", number, error=f"{problem}; {_ONE_OBJECT_PER_LINE}", text=text)

    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return bad(f"not UTF-8 (at byte {exc.start + 1} of the line: {raw[exc.start : exc.start + 4]!r})")
    except json.JSONDecodeError as exc:
        return bad(f"not valid JSON ({exc.msg} at column {exc.colno})")
    except ValueError as exc:  # JSON that Python refuses, e.g. an integer of more than 4300 digits
        return bad(f"not readable JSON ({exc})")
    if not isinstance(value, dict):
        return bad(f"a JSON {_json_kind(value)}, not an object")
    return Located("line", number, value)


def _json_records(path) -> Iterator[Located]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc.reason}: {exc.object[exc.start : exc.start + 4]!r})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); expected a list of objects") from None
    if not isinstance(data, list):
        raise ValueError(
            f"{path}: a .json input must hold a list of objects, got a JSON {_json_kind(data)} "
            "(use .jsonl for one object per line)"
        )
    for index, value in enumerate(data):
        if isinstance(value, dict):
            yield Located("row", index, value)
        else:
            text = json.dumps(value, ensure_ascii=False)[:_RAW_TEXT_LIMIT]
            yield Located(
                "row", index, error=f"a JSON {_json_kind(value)}, not an object; expected a list of objects", text=text
            )


def _json_kind(value: Any) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _csv_records(path) -> Iterator[Located]:
    delimiter = "\t" if str(path).lower().endswith(".tsv") else ","
    # surrogateescape: bad bytes become lone surrogates, so a bad line is a rejected record, not a crash
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        try:
            header = reader.fieldnames or []
            if _has_bad_bytes(header):
                raise ValueError(f"{path}: line 1 (the header) is not UTF-8")
            first = reader.line_num + 1
            for record in reader:
                yield _csv_record(first, record, len(header))
                first = reader.line_num + 1  # a quoted cell may span lines
        except csv.Error as exc:
            raise ValueError(f"{path}: line {reader.line_num}: not readable as CSV ({exc})") from None


def _csv_record(number: int, record: dict, width: int) -> Located:
    cells = [*record.values()]
    if _has_bad_bytes(cells):
        text = json.dumps(cells, ensure_ascii=False)
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")[:_RAW_TEXT_LIMIT]
        return Located("line", number, error="not UTF-8; expected a UTF-8 CSV file", text=text)
    extra = record.get(None)
    if extra:  # csv.DictReader puts the cells past the header under None
        return Located(
            "line",
            number,
            error=f"{width + len(extra)} cells, the header names {width}; expected one cell per column",
            text=json.dumps(cells, ensure_ascii=False)[:_RAW_TEXT_LIMIT],
        )
    return Located("line", number, {k: _csv_value(v) for k, v in record.items()})


def _has_bad_bytes(values: list) -> bool:
    """Whether a cell holds a byte that was not UTF-8 (a lone surrogate, which strict encoding refuses)."""
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            try:
                if isinstance(item, str):
                    item.encode("utf-8")
            except UnicodeEncodeError:
                return True
    return False


def _csv_value(value: Any) -> Any:
    """CSV cells are text; a cell holding a JSON list or object (e.g. a reference list) is decoded."""
    if value == "":
        return None
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _load_hf(path, split: str):
    from datasets import DatasetDict, load_from_disk

    data = load_from_disk(str(path))
    if isinstance(data, DatasetDict):
        if split not in data:
            raise ValueError(f"{path}: no split {split!r} in this datasets dir (has {sorted(data)}); pass --hf-split")
        data = data[split]
    return data
