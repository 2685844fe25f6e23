"""Read raw rows from parquet, JSONL, JSON, CSV or a local Hugging Face ``datasets`` directory, in chunks."""

from __future__ import annotations

import json
import math
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


def count_rows(path: str | Path, hf_split: str = "train") -> int:
    fmt = detect_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    if fmt == "jsonl":
        with open(path, encoding="utf-8") as f:
            return sum(1 for line in f if line.strip())
    if fmt == "hf":
        return len(_load_hf(path, hf_split))
    return sum(len(chunk) for chunk in iter_chunks(path, hf_split=hf_split))


def iter_chunks(path: str | Path, chunk_size: int = 10_000, hf_split: str = "train") -> Iterator[list[dict]]:
    """Lists of row dicts, at most ``chunk_size`` each, in file order."""
    fmt = detect_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_size):
            yield batch.to_pylist()
    elif fmt == "jsonl":
        yield from _jsonl_chunks(path, chunk_size)
    elif fmt == "json":
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, list):
            raise ValueError(f"{path}: a .json input must hold a list of objects (use .jsonl for one per line)")
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]
    elif fmt == "csv":
        import pandas as pd

        sep = "\t" if str(path).lower().endswith(".tsv") else ","
        for frame in pd.read_csv(path, chunksize=chunk_size, sep=sep, dtype=str, keep_default_na=False):
            yield [{k: _csv_value(v) for k, v in row.items()} for row in frame.to_dict("records")]
    else:
        dataset = _load_hf(path, hf_split)
        for start in range(0, len(dataset), chunk_size):
            batch = dataset[start : start + chunk_size]
            keys = list(batch)
            yield [dict(zip(keys, values)) for values in zip(*(batch[k] for k in keys))]


def _jsonl_chunks(path, chunk_size: int) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                chunk.append(json.loads(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc})") from None
            if len(chunk) == chunk_size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


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
