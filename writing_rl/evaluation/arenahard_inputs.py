"""Arena-Hard-Auto v2.0's inputs: its questions (``question.jsonl``), the models' and the baselines' answers
(``model_answer/<model>.jsonl``, their style metadata counted when missing), and the baseline of each category.
The formats: docs/writing-benchmarks.md, Arena-Hard v2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from writing_rl.evaluation import arenahard_scores as scoring
from writing_rl.evaluation.inputs import InputError, require_fields
from writing_rl.offline.files import lines


@dataclass(frozen=True)
class Question:
    uid: str
    category: str
    prompt: str


@dataclass(frozen=True)
class Answers:
    """One model's answers (model_answer/<model>.jsonl): text and style vector by uid."""

    model: str
    path: str
    text: dict[str, str]
    style: dict[str, tuple[int, ...]]
    counted: int  # answers whose metadata we computed (none in the file, or --recount-metadata)


def read_questions(path: str) -> dict[str, Question]:
    questions: dict[str, Question] = {}
    for where, row in _rows(path):
        require_fields(row, ("uid", "category", "prompt"), where)
        for name in ("uid", "category", "prompt"):
            if not isinstance(row[name], str) or not row[name].strip():
                raise InputError(f"{where}: {name} must be a non-empty string, got {type(row[name]).__name__}")
        if row["uid"] in questions:
            raise InputError(f"{where}: uid {row['uid']!r} appears twice")
        questions[row["uid"]] = Question(row["uid"], row["category"], row["prompt"])
    if not questions:
        raise InputError(f"{path}: no questions")
    return questions


def read_answers(path: str, recount: bool = False) -> Answers:
    model, text, style, counted, seen = None, {}, {}, 0, {}
    for where, row in _rows(path):
        require_fields(row, ("uid", "model", "messages"), where)
        if model is None:
            model = row["model"]
        elif row["model"] != model:
            raise InputError(f"{where}: model {row['model']!r}, but line 1 has {model!r} (one model a file)")
        for name in ("uid", "model"):
            if not isinstance(row[name], str):
                raise InputError(f"{where}: {name} must be a string, got {type(row[name]).__name__} {row[name]!r}")
        uid, answer = row["uid"], _answer_text(row["messages"], where)
        if uid in seen:
            raise InputError(f"{where}: a second answer to uid {uid!r} (the first: line {seen[uid]})")
        seen[uid] = where.rsplit(":", 1)[1]
        metadata = row.get("metadata")
        if recount or metadata is None:
            metadata, counted = scoring.markdown_metadata(answer), counted + 1
        text[uid], style[uid] = answer, _style(metadata, where)
    if model is None:
        raise InputError(f"{path}: no answers")
    return Answers(str(model), path, text, style, counted)


def _rows(path: str):
    if not Path(path).is_file():
        raise InputError(f"no such file: {path}")
    return lines(path)


def _answer_text(messages: Any, where: str) -> str:
    last = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(last, dict) or last.get("role") != "assistant":
        raise InputError(f"{where}: messages must end with the assistant's message, got {str(last)[:80]!r}")
    content = last.get("content")
    answer = content.get("answer") if isinstance(content, dict) else content
    if not isinstance(answer, str):
        raise InputError(f"{where}: messages[-1].content.answer must be a string, got {type(answer).__name__}")
    return answer


def _style(metadata: Any, where: str) -> tuple[int, ...]:
    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if not isinstance(metadata, dict) or not count(metadata.get("token_len")):
        raise InputError(f"{where}: metadata.token_len must be a count, got {metadata!r:.80}")
    for key in scoring.METADATA_COUNTS:
        counts = metadata.get(key)
        if not isinstance(counts, dict) or not all(map(count, counts.values())):
            raise InputError(f"{where}: metadata.{key} must map names to counts, got {counts!r:.80}")
    return scoring.style_vector(metadata)


def parse_baselines(specs: Sequence[str], categories: Sequence[str]) -> dict[str, str]:
    """``PATH`` (every category) or ``CATEGORY=PATH`` for each spec; the path of each category's baseline."""
    given, every = {}, None
    for spec in specs:
        category, _, path = spec.partition("=")
        if path and category in categories:
            given[category] = path
        elif every is None:
            every = spec
        else:
            raise InputError(f"--baseline {spec}: a second baseline for every category (the first: {every})")
    missing = [c for c in categories if c not in given and every is None]
    if missing:
        raise InputError(f"no baseline for {', '.join(missing)}: pass --baseline {missing[0]}=PATH (or one PATH)")
    return {c: given.get(c, every) for c in categories}
