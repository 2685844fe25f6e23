"""Read raw rows from parquet, JSONL, JSON, CSV or a local Hugging Face ``datasets`` directory, in chunks."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

FORMATS = ("parquet", "jsonl", "json", "csv", "hf")


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
    """One input record: where it is in the file (``line 12``, ``row 3``), and its row or what is wrong."""

    where: str
    row: dict | None = None
    error: str | None = None


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
    """Lists of ``Located`` records, at most ``chunk_size`` each, in file order. JSONL and CSV records
    are placed by line (1-based), others by row (0-based); a JSONL line that is not UTF-8, not JSON or
    not an object comes with its error instead of a row."""
    fmt = detect_format(path)
    if fmt == "jsonl":
        yield from _chunked(_jsonl_records(path), chunk_size)
    elif fmt == "csv":
        yield from _chunked(_csv_records(path), chunk_size)
    else:
        start = 0
        for rows in _row_chunks(path, fmt, chunk_size, hf_split):
            yield [Located(f"row {start + i} (0-based)", row) for i, row in enumerate(rows)]
            start += len(rows)


def _row_chunks(path, fmt: str, chunk_size: int, hf_split: str) -> Iterator[list[dict]]:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_size):
            yield batch.to_pylist()
    elif fmt == "json":
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, list):
            raise ValueError(f"{path}: a .json input must hold a list of objects (use .jsonl for one per line)")
        for start in range(0, len(data), chunk_size):
            yield [
                _object(row, f"{path}: row {start + i} (0-based)")
                for i, row in enumerate(data[start : start + chunk_size])
            ]
    else:
        dataset = _load_hf(path, hf_split)
        for start in range(0, len(dataset), chunk_size):
            batch = dataset[start : start + chunk_size]
            keys = list(batch)
            yield [dict(zip(keys, values)) for values in zip(*(batch[k] for k in keys))]


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


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
            if not raw.strip():
                continue
            where = f"line {number}"
            try:
                value = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield Located(
                    where,
                    error=f"not UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 4]!r}); expected one JSON object per line",
                )
                continue
            except ValueError as exc:
                yield Located(where, error=f"not valid JSON ({exc}); expected one JSON object per line")
                continue
            if not isinstance(value, dict):
                yield Located(
                    where, error=f"a JSON {type(value).__name__}, not an object; expected one JSON object per line"
                )
                continue
            yield Located(where, value)


def _csv_records(path) -> Iterator[Located]:
    import csv

    delimiter = "\t" if str(path).lower().endswith(".tsv") else ","
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        first = reader.line_num + 1
        for record in reader:
            yield Located(f"line {first}", {k: _csv_value(v) for k, v in record.items()})
            first = reader.line_num + 1  # a quoted cell may span lines


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
