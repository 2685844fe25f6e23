"""Reading what ``writing-rl eval`` judges: JSONL keyed by index, verl's dumps (``<step>.jsonl``, a line per sample:
``input``, ``output``, ``gts``) and the parquet of verl's generation entry point, whose rows ``generated_rows``
reads as dump lines. Bad input fails naming the file and line. The formats and how responses are matched to the
benchmark: docs/evaluation.md, Responses from a checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from writing_rl.offline.files import InputError, lines
from writing_rl.settings import ConfigError


def require_fields(record: dict, fields: Iterable[str], where: str) -> None:
    missing = [name for name in fields if record.get(name) is None]
    if missing:
        raise InputError(
            f"{where}: missing {', '.join(missing)} (the line has {', '.join(sorted(record)) or 'nothing'})"
        )


def check_index(value: Any, where: str, field: str = "index") -> Any:
    """``value`` when it is an integer (not a bool) or a string; else an ``InputError`` naming the line."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"{where}: {field} must be an integer or a string, got {type(value).__name__} {value!r}")
    return value


def is_verl_dump(path: str | Path) -> bool:
    """A directory of ``<step>.jsonl`` files, or one such file (lines with ``input``, ``output``, ``step``)."""
    path = Path(path)
    if path.is_dir():
        return any(p.stem.isdigit() for p in path.glob("*.jsonl"))
    for _, record in lines(path):
        return {"input", "output", "step"} <= set(record)
    return False


def dump_file(path: str | Path, step: int | None = None) -> Path:
    """The dump of ``step`` (default: the latest step) from a dump directory, or the file itself."""
    path = Path(path)
    if path.is_file():
        return path
    steps = sorted((int(p.stem), p) for p in path.glob("*.jsonl") if p.stem.isdigit())
    if not steps:
        raise ConfigError(f"{path}: no <step>.jsonl files (verl's trainer.validation_data_dir holds them)")
    if step is None:
        return steps[-1][1]
    for number, file in steps:
        if number == step:
            return file
    raise ConfigError(f"{path}: no dump for step {step} (steps: {', '.join(str(n) for n, _ in steps)})")


def is_parquet(path: str | Path) -> bool:
    """A parquet file or a directory of them (else a JSONL)."""
    return Path(path).is_dir() or str(path).endswith(".parquet")


def parquet_rows(path: str | Path) -> Iterable[tuple[str, dict]]:
    """(``file:row N``, row) for each row, counted from 1."""
    import pyarrow.parquet as pq

    for number, row in enumerate(pq.read_table(path).to_pylist(), start=1):
        yield f"{path}:row {number}", row


def indexed_lines(path: str | Path) -> list[tuple[str, dict, Any]]:
    """(``file:line``, object, index) of each JSONL line. The index is the line's ``index``, else its ``id``;
    a file whose lines have neither is indexed by line number. Once one line has an index or id, every
    line needs one (a line number could equal another line's index), and no index may appear twice."""
    rows = [
        (where, record, next((record[k] for k in ("index", "id") if record.get(k) is not None), None))
        for where, record in lines(path)
    ]
    explicit = next((where for where, _, index in rows if index is not None), None)
    seen: dict[Any, str] = {}
    indexed = []
    for where, record, index in rows:
        line = where.rsplit(":", 1)[1]
        if index is None:
            if explicit is not None:
                raise InputError(
                    f"{where}: no index or id, but line {explicit.rsplit(':', 1)[1]} has one: give every line an "
                    "index (or id), or none (then each line's number is its index)"
                )
            index = int(line)
        try:
            first = seen.setdefault(index, line)
        except TypeError:
            raise InputError(f"{where}: index must be a string or a number, got {type(index).__name__}") from None
        if first != line:
            raise InputError(f"{where}: index {index!r} appears twice (lines {first} and {line})")
        indexed.append((where, record, index))
    return indexed


def generated_rows(path: str | Path) -> Iterable[tuple[str, dict]]:
    """(``file:row``, dump-like record) for each row of a generation parquet: its first response, and in
    ``extra_samples`` how many more the row holds (``rollout.n > 1``)."""
    for where, row in parquet_rows(path):
        responses = row.get("responses", row.get("response"))
        extra = 0
        if isinstance(responses, (list, tuple)):
            extra = max(len(responses) - 1, 0)
            responses = responses[0] if responses else None
        prompt = row.get("prompt")
        if isinstance(prompt, (list, tuple)):
            users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
            prompt = users[-1] if users else ""
        truth = (row.get("reward_model") or {}).get("ground_truth")
        yield (
            where,
            {
                "input": prompt,
                "output": responses,
                "gts": truth,
                "extra_info": row.get("extra_info") or {},
                "extra_samples": extra,
            },
        )


class ResponsesByIndex(dict):
    """Response text by index; ``extra_samples``: the dump lines or generated responses beyond the first
    of their index (samples of ``rollout.n > 1``), left out."""

    extra_samples: int = 0


def dump_matcher(known: Mapping[Any, Any]) -> Callable[[dict], Any]:
    """The index (a key of ``known``, whose values have a ``query`` text) of a verl dump line or generated
    row, or None for a record of another prompt set. By id (``build_parquet.py prompts`` keeps the benchmark's
    index in ``extra_info.source_id``; ``extra_info.index`` only counts the builder's rows) when the prompt holds
    that query's text or has no text, else by the longest query the prompt holds; two of that length are
    ambiguous (``InputError``; ``responses_by_index`` adds the line)."""
    texts = {index: str(item.query).strip() for index, item in known.items()}

    def by_text(prompt: str) -> Any:
        found = [(len(text), index) for index, text in texts.items() if text and text in prompt]
        if not found:
            return None
        longest = max(length for length, _ in found)
        best = [index for length, index in found if length == longest]
        if len(best) > 1:
            raise InputError(
                f"the prompt holds the queries of indices {best[0]!r} and {best[1]!r} (equally long): which one "
                "it answers is ambiguous; give the responses as JSONL of {index, response}"
            )
        return best[0]

    def match(record: dict) -> Any:
        prompt = record.get("input")
        prompt = prompt if isinstance(prompt, str) else ""
        for ids, keys in (
            (record.get("gts"), ("index", "id", "source_id")),
            (record.get("extra_info"), ("source_id",)),
        ):
            if isinstance(ids, dict):
                for key in keys:
                    value = ids.get(key)
                    if isinstance(value, bool) or not isinstance(value, (int, str)) or value not in known:
                        continue
                    if not prompt.strip() or texts[value] in prompt:
                        return value
        return by_text(prompt)

    return match


def responses_by_index(
    path: str | Path,
    known: dict[Any, Any],
    match_dump: Callable[[dict], Any] | None = None,
    step: int | None = None,
) -> ResponsesByIndex:
    """One response per index of ``known``: from a JSONL of ``{index (or id), response}`` lines, or from a verl
    dump or generation parquet where ``match_dump(record)`` names the index of each record (None: a record
    of another prompt set). In a JSONL an index missing from ``known``, or given twice, is an error naming
    the line; in a dump or generated parquet the first sample of an index is kept and the others are
    counted in ``extra_samples``."""
    responses = ResponsesByIndex()
    where_of: dict[Any, str] = {}
    generated = str(path).endswith(".parquet")
    dump = generated or is_verl_dump(path)
    source = path if generated else dump_file(path, step) if dump else path
    for where, record in generated_rows(source) if generated else lines(source):
        if dump:
            try:
                index = match_dump(record) if match_dump else None
            except InputError as err:
                raise InputError(f"{where}: {err}") from None
            if index is None:
                continue
            text = record.get("output")
            responses.extra_samples += record.get("extra_samples", 0)
        else:
            key = "id" if record.get("index") is None and record.get("id") is not None else "index"
            require_fields(record, (key, "response"), where)  # id: a Writing-RL row's ground_truth.id
            index, text = check_index(record[key], where, key), record["response"]
            if index not in known:
                raise InputError(f"{where}: index {index!r} is not in the benchmark")
        if not isinstance(text, str):
            raise InputError(f"{where}: the response must be a string, got {type(text).__name__}")
        if index in responses:
            if dump:
                responses.extra_samples += 1
                continue
            raise InputError(f"{where}: a second response for index {index!r} (the first: {where_of[index]})")
        responses[index], where_of[index] = text, where
    if not responses:
        raise InputError(f"{source}: no response matches an index of the benchmark")
    return responses
