"""RewardBench's files and its own aggregation (the judging is in ``rewardbench``): reading v1 and v2 rows, and
turning per-subset accuracies into the benchmark's section and overall scores as reward-bench's ``EXAMPLE_COUNTS``,
``SUBSET_MAPPING`` and leaderboard average do. ``math-prm`` counts 984, not its 447 rows, so that it weighs as much
as the six code subsets together. The files and the scores: docs/evaluation.md, RewardBench.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from writing_rl.evaluation.inputs import InputError, is_parquet, lines, parquet_rows

V1_SECTIONS: dict[str, dict[str, int]] = {
    "Chat": {"alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95, "mt-bench-easy": 28,
             "mt-bench-med": 40},
    "Chat Hard": {"mt-bench-hard": 37, "llmbar-natural": 100, "llmbar-adver-neighbor": 134,
                  "llmbar-adver-GPTInst": 92, "llmbar-adver-GPTOut": 47, "llmbar-adver-manual": 46},
    "Safety": {"refusals-dangerous": 100, "refusals-offensive": 100, "xstest-should-refuse": 154,
               "xstest-should-respond": 250, "donotanswer": 136},
    "Reasoning": {"math-prm": 984, "hep-cpp": 164, "hep-go": 164, "hep-java": 164, "hep-js": 164,
                  "hep-python": 164, "hep-rust": 164},
}  # fmt: skip
V1_PRIOR_SETS = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")
V2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
SCALAR_ONLY = ("Ties",)  # subsets scored from reward margins: no pairwise or ranking GenRM can score them
SCALAR_REASON = "scored from scalar reward margins, which verdicts and rankings do not give"
VERSIONS = (1, 2)


@dataclass(frozen=True)
class RewardBenchItem:
    """One benchmark prompt: the answer(s) that should win and the ones that should lose."""

    id: Any
    subset: str
    prompt: str
    chosen: str
    rejected: tuple[str, ...]  # v1: one; v2: usually three


def read_items(
    path: str | Path, version: int, exclude: Sequence[str] = ()
) -> tuple[list[RewardBenchItem], dict[str, dict[str, Any]]]:
    """The items of a v1 or v2 file (parquet or JSONL) outside ``exclude`` (and, for v2, outside the
    scalar-only subsets), and for each subset left out its row count and why. Bad rows fail naming the
    row and field; an ``exclude`` name that matches no row fails listing the file's subsets."""
    if version not in VERSIONS:
        raise InputError(f"--version must be 1 or 2, got {version!r}")
    always = SCALAR_ONLY if version == 2 else ()
    rows = parquet_rows(path) if is_parquet(path) else lines(path)
    items: list[RewardBenchItem] = []
    excluded: dict[str, dict[str, Any]] = {}
    subsets: dict[str, None] = {}
    seen: dict[Any, str] = {}
    for number, (where, row) in enumerate(rows, start=1):
        subset = _text(row, "subset", where)
        subsets[subset] = None
        if subset in always or subset in exclude:
            why = SCALAR_REASON if subset in always else "--exclude"
            excluded.setdefault(subset, {"rows": 0, "reason": why})["rows"] += 1
            continue
        fallback_id = f"row {number}"  # a row without an id is known by its place in the file
        item = (_v1_item if version == 1 else _v2_item)(row, where, subset, fallback_id)
        if item.id in seen:
            raise InputError(f"{where}: id {item.id!r} appears twice (first at {seen[item.id]})")
        seen[item.id] = where
        items.append(item)
    if unknown := [name for name in exclude if name not in subsets]:
        raise InputError(
            f"--exclude {', '.join(unknown)}: no such subset in {path} (its subsets: {', '.join(subsets)})"
        )
    if not items:
        raise InputError(f"{path}: no rows to judge" + (f" (excluded: {_counts(excluded)})" if excluded else ""))
    return items, excluded


def _v1_item(row: Mapping, where: str, subset: str, fallback_id: str) -> RewardBenchItem:
    if isinstance(row.get("chosen"), (list, tuple)):
        raise InputError(f"{where}: chosen is a list: this is a RewardBench 2 row (use --version 2)")
    chosen, rejected = (_answer(row.get(name), name, where) for name in ("chosen", "rejected"))
    return RewardBenchItem(_id(row, where, fallback_id), subset, _prompt(row, where), chosen, (rejected,))


def _v2_item(row: Mapping, where: str, subset: str, fallback_id: str) -> RewardBenchItem:
    answers = {}
    for name in ("chosen", "rejected"):
        value = row.get(name)
        if isinstance(value, str):
            raise InputError(f"{where}: {name} is a string: this is a RewardBench v1 row (use --version 1)")
        if not isinstance(value, (list, tuple)) or not value:
            raise InputError(f"{where}: {name} must be a non-empty list of strings, got {value!r:.80}")
        answers[name] = tuple(_answer(v, f"{name}[{i}]", where) for i, v in enumerate(value))
    if len(answers["chosen"]) != 1:
        raise InputError(
            f"{where}: chosen holds {len(answers['chosen'])} answers; outside Ties a RewardBench 2 prompt has one"
        )
    return RewardBenchItem(
        _id(row, where, fallback_id), subset, _prompt(row, where), answers["chosen"][0], answers["rejected"]
    )


def _text(row: Mapping, name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: {name} must be a non-empty string, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {value!r:.60}"


def _prompt(row: Mapping, where: str) -> str:
    if isinstance(row.get("prompt"), (list, tuple)):
        raise InputError(
            f"{where}: prompt is a list (a chat transcript, as in the preference test sets): RewardBench rows "
            "carry the prompt as one string; flatten the conversation into it first"
        )
    return _text(row, "prompt", where)


def _answer(value: Any, name: str, where: str) -> str:
    """An answer may be empty (an empty answer that should lose is a fair test), never a non-string."""
    if not isinstance(value, str):
        raise InputError(f"{where}: {name} must be a string, got {_shown(value)}")
    return value


def _id(row: Mapping, where: str, fallback: str) -> Any:
    value = row.get("id")
    if value is None:
        return fallback
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"{where}: id must be an integer or a string, got {type(value).__name__} {value!r}")
    return value


def _counts(excluded: Mapping[str, Mapping[str, Any]]) -> str:
    return ", ".join(f"{name} ({e['rows']} rows)" for name, e in excluded.items())


def _unscored_notes(unscored: Sequence[str]) -> list[str]:
    if not unscored:
        return []
    return [f"in the file, but no prompt scored (each had a failed judge call): {', '.join(unscored)}"]


def v1_scores(accuracy: Mapping[str, float], unscored: Sequence[str] = ()) -> tuple[dict[str, float], float, list[str]]:
    """(section scores, overall score, notes) from per-subset accuracies, as reward-bench weighs them.
    ``unscored``: subsets in the file none of whose prompts could be scored."""
    sections: dict[str, float] = {}
    weights: dict[str, float] = {}
    for section, counts in V1_SECTIONS.items():
        present = [s for s in counts if s in accuracy]
        if present:
            total = sum(counts[s] for s in present)
            sections[section] = sum(accuracy[s] * counts[s] for s in present) / total
            weights[section] = 1.0
    prior = [s for s in V1_PRIOR_SETS if s in accuracy]
    if prior:
        sections["Prior Sets"] = sum(accuracy[s] for s in prior) / len(prior)
        weights["Prior Sets"] = 0.5
    notes = _unscored_notes(unscored) + [
        f"{section}: missing {', '.join(missing)}"
        for section, counts in V1_SECTIONS.items()
        if (missing := [s for s in counts if s not in accuracy])
    ]
    known = {s for counts in V1_SECTIONS.values() for s in counts} | set(V1_PRIOR_SETS)
    if other := sorted(set(accuracy) - known):
        notes.append(f"in no section (reported, not scored): {', '.join(other)}")
    overall = sum(sections[s] * weights[s] for s in sections) / sum(weights.values()) if sections else float("nan")
    return sections, overall, notes


def v2_scores(accuracy: Mapping[str, float], unscored: Sequence[str] = ()) -> tuple[float, list[str]]:
    """(overall score, notes): the unweighted mean of the subset scores, and what keeps it from being
    the leaderboard's number."""
    notes = _unscored_notes(unscored)
    if missing := [s for s in V2_SUBSETS if s not in accuracy]:
        notes.append(f"not the leaderboard's overall score: it averages {len(V2_SUBSETS)} subsets, missing here: "
                     f"{', '.join(missing)}")  # fmt: skip
    if other := sorted(set(accuracy) - set(V2_SUBSETS)):
        notes.append(f"subsets outside RewardBench 2's six, averaged in: {', '.join(other)}")
    overall = sum(accuracy.values()) / len(accuracy) if accuracy else float("nan")
    return overall, notes
