"""RewardBench's files and its own aggregation (the judging is in ``rewardbench``): reading v1 and v2 rows; scoring a
prompt from its answers' ratings, and v2's Ties subset from its rows' ratings, as reward-bench's code does; and
turning per-subset scores into the benchmark's section and overall scores as reward-bench's ``EXAMPLE_COUNTS``,
``SUBSET_MAPPING`` and leaderboard average do. ``math-prm`` counts 984, not its 447 rows, so that it weighs as much
as the six code subsets together. The files and the scores: docs/judge-benchmarks.md, RewardBench.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from writing_rl.evaluation.inputs import InputError, is_parquet, lines, parquet_rows
from writing_rl.evaluation.ratings import UNRATED
from writing_rl.evaluation.stats import LEVEL, RESAMPLES

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
TIES = "Ties"  # scored from every answer's rating (``ties_score``), whatever the GenRM kind
TIES_ID = re.compile(r"(ref|tied):(\d+)")
# The Ties score's parts and their weights (reward-bench's process_single_model; they add up to 1.01).
TIES_WEIGHTS = {"tied_accuracy": 0.30, "ref_accuracy": 0.30, "correctness_preferred": 0.20,
                "correctness_preferred_hard": 0.20, "correctness_margin_score": 0.01}  # fmt: skip
VERSIONS = (1, 2)


@dataclass(frozen=True)
class RewardBenchItem:
    """One benchmark prompt: the answer(s) that should win and the ones that should lose."""

    id: Any
    subset: str
    prompt: str
    chosen: str
    rejected: tuple[str, ...]  # v1: one; v2: usually three
    more_chosen: tuple[str, ...] = ()  # Ties: the other correct answers
    ties_group: tuple[str, int] | None = None  # Ties: ("ref" or "tied", prompt number), read from the id

    @property
    def answers(self) -> tuple[str, ...]:
        """Every answer, the correct ones first (index 0: ``chosen``)."""
        return (self.chosen, *self.more_chosen, *self.rejected)

    @property
    def num_correct(self) -> int:
        return 1 + len(self.more_chosen)


def read_items(
    path: str | Path, version: int, exclude: Sequence[str] = ()
) -> tuple[list[RewardBenchItem], dict[str, dict[str, Any]]]:
    """The items of a v1 or v2 file (parquet or JSONL) outside ``exclude``, and for each subset left out its row
    count and why. Bad rows fail naming the row and field; an ``exclude`` name that matches no row fails listing
    the file's subsets."""
    if version not in VERSIONS:
        raise InputError(f"--version must be 1 or 2, got {version!r}")
    rows = parquet_rows(path) if is_parquet(path) else lines(path)
    items: list[RewardBenchItem] = []
    excluded: dict[str, dict[str, Any]] = {}
    subsets: dict[str, None] = {}
    seen: dict[Any, str] = {}
    groups: dict[tuple[str, int], str] = {}
    for number, (where, row) in enumerate(rows, start=1):
        subset = _text(row, "subset", where)
        subsets[subset] = None
        if subset in exclude:
            excluded.setdefault(subset, {"rows": 0, "reason": "--exclude"})["rows"] += 1
            continue
        fallback_id = f"row {number}"  # a row without an id is known by its place in the file
        item = (_v1_item if version == 1 else _v2_item)(row, where, subset, fallback_id)
        if item.id in seen:
            raise InputError(f"{where}: id {item.id!r} appears twice (first at {seen[item.id]})")
        seen[item.id] = where
        if item.ties_group is not None:  # "ref:7" and "ref:07" are one prompt to reward-bench: its groups merge
            if item.ties_group in groups:
                raise InputError(f"{where}: id {item.id!r} names Ties group {item.ties_group} again (first at "
                                 f"{groups[item.ties_group]})")  # fmt: skip
            groups[item.ties_group] = where
        items.append(item)
    if unknown := [name for name in exclude if name not in subsets]:
        raise InputError(
            f"--exclude {', '.join(unknown)}: no such subset in {path} (its subsets: {', '.join(subsets)})"
        )
    if not items:
        raise InputError(f"{path}: no rows to judge" + (f" (excluded: {_counts(excluded)})" if excluded else ""))
    _check_tied_pairs(items, groups)
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
    chosen, rejected = answers["chosen"], answers["rejected"]
    if subset != TIES and len(chosen) != 1:
        raise InputError(f"{where}: chosen holds {len(chosen)} answers; outside Ties a RewardBench 2 prompt has one")
    item_id = _id(row, where, fallback_id)
    group = None
    if subset == TIES:  # reward-bench splits a Ties row's ratings at num_correct: it must agree with chosen
        given = row.get("num_correct")
        if given is not None and (isinstance(given, bool) or not isinstance(given, int) or given != len(chosen)):
            raise InputError(f"{where}: num_correct is {given!r}, but chosen holds {len(chosen)} answers")
        found = TIES_ID.fullmatch(item_id) if isinstance(item_id, str) else None
        if found is None:
            raise InputError(f"{where}: id {item_id!r}: a Ties row's id must be ref:<number> or tied:<number>")
        group = (found.group(1), int(found.group(2)))
    return RewardBenchItem(item_id, subset, _prompt(row, where), chosen[0], rejected, chosen[1:], group)


def _check_tied_pairs(items: Sequence[RewardBenchItem], groups: Mapping[tuple[str, int], str]) -> None:
    """A tied row whose prompt also has a ref row needs two correct answers: the Ties score compares their
    spread with the gap to the incorrect ones (reward-bench's code fails on such a row)."""
    for item in items:
        if item.ties_group and item.ties_group[0] == "tied" and item.num_correct < 2:
            if ("ref", item.ties_group[1]) in groups:
                raise InputError(
                    f"{groups[item.ties_group]}: id {item.id!r}: a tied row with a ref row needs at least two chosen "
                    "answers, the correct ones whose spread the Ties score compares with the gap to the incorrect"
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


# ---------------------------------------------------------------- scores from ratings (reward-bench's rules)


def rated_prompt_score(ratings: Sequence[float], version: int) -> float:
    """A prompt's score from its answers' ratings, the chosen answer's first, ``UNRATED`` where none was read.
    v2 (run_generative_v2.py): 1/k when the chosen answer is among the k best rated, else 0; 0.25 when no rating
    was read. v1 (generative.py ``run_judge_ratings``): 1 or 0 when both are read and differ, else 0.5."""
    if version == 1:
        chosen, rejected = ratings
        if UNRATED in (chosen, rejected) or chosen == rejected:
            return 0.5
        return 1.0 if chosen > rejected else 0.0
    read = [r for r in ratings if r != UNRATED]
    if not read:
        return 0.25
    best = [i for i, r in enumerate(ratings) if r == max(read)]
    return (0 in best) / len(best)


def ties_score(rows: Sequence[tuple[tuple[str, int], Sequence[float], int]]) -> dict[str, float]:
    """v2's Ties score and its parts (reward-bench's ``process_single_model``) from each row's (group, ratings,
    number of correct answers), the correct answers' ratings first. ``UNRATED`` counts as the rating -1.

    Per row: accurate when its worst correct answer is rated strictly above its best incorrect one. The accuracy
    of the ref rows and of the tied rows weigh 0.30 each; over the prompts with both rows, the share where the
    tied row's correct-incorrect margin exceeds the spread of its correct answers (0.20), the same with the smaller
    of the two rows' margins (0.20), and tanh(smaller margin / spread - 1), 0/0 as 0, weighing 0.01."""
    ref, tied = _row_stats(rows)
    both = sorted(set(ref) & set(tied))
    preferred, preferred_hard, margin_scores = _pair_stats(ref, tied, both)
    parts = {
        "tied_accuracy": float(np.mean([s[0] for s in tied.values()])) if tied else 0.0,
        "ref_accuracy": float(np.mean([s[0] for s in ref.values()])) if ref else 0.0,
        "correctness_preferred": _mean(preferred),
        "correctness_preferred_hard": _mean(preferred_hard),
        "correctness_margin_score": _mean(margin_scores),
    }
    return {"score": sum(TIES_WEIGHTS[name] * value for name, value in parts.items()), **parts, "prompts": len(both)}


def ties_subset(rows, count: int, seed: int = 0) -> dict:
    """The Ties subset's report entry from its scored rows (``ties_score``'s) out of ``count``: its score with the
    bootstrap interval of resampling its prompts, and its parts."""
    parts = ties_score(rows) if rows else {"score": float("nan"), "prompts": 0}
    low, high = ties_interval(rows, seed=seed)
    return {"mean": parts.pop("score"), "low": low, "high": high, "rows": count, "count": len(rows),
            "chance": float("nan"), "parts": parts}  # fmt: skip


def ties_interval(rows, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of ``ties_score(rows)["score"]``, its prompts resampled (a prompt's
    ref and tied rows together). Resamples without a prompt having both rows (a nan score) are left out."""
    ref, tied = _row_stats(rows)
    prompts = sorted(set(ref) | set(tied))
    if not prompts:
        return float("nan"), float("nan")
    both = [p for p in prompts if p in ref and p in tied]
    pair = dict(zip(both, np.column_stack(_pair_stats(ref, tied, both)))) if both else {}
    has = np.array([[p in ref, p in tied, p in pair] for p in prompts], dtype=float)
    value = np.array([[p in ref and ref[p][0], p in tied and tied[p][0], *pair.get(p, (0, 0, 0))] for p in prompts])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(prompts), size=(resamples, len(prompts)))
    counts = np.zeros((resamples, len(prompts)))
    np.add.at(counts, (np.arange(resamples)[:, None], picks), 1)
    weight = counts @ has[:, [0, 1, 2, 2, 2]]  # rows of each part per resample
    total = counts @ (value * has[:, [0, 1, 2, 2, 2]])
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(weight > 0, total / weight, [0.0, 0.0, np.nan, np.nan, np.nan])  # as ties_score's empties
    ordered = [TIES_WEIGHTS[name] for name in ("ref_accuracy", "tied_accuracy", "correctness_preferred",
                                               "correctness_preferred_hard", "correctness_margin_score")]  # fmt: skip
    scores = means @ np.array(ordered)
    scores = scores[~np.isnan(scores)]
    if not scores.size:
        return float("nan"), float("nan")
    low, high = np.quantile(scores, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(low), float(high)


def _row_stats(rows) -> tuple[dict[int, tuple[bool, float | None, float]], dict[int, tuple[bool, float | None, float]]]:
    """Per prompt number, of its ref rows and of its tied rows: (accurate, spread of the correct answers' ratings
    (None for one), worst correct minus best incorrect)."""
    stats: dict[str, dict[int, tuple[bool, float | None, float]]] = {"ref": {}, "tied": {}}
    for (kind, prompt), ratings, num_correct in rows:
        correct, incorrect = ratings[:num_correct], ratings[num_correct:]
        spread = max(correct) - min(correct) if len(correct) > 1 else None
        margin = min(correct) - max(incorrect)
        stats[kind][prompt] = (margin > 0, spread, margin)
    return stats["ref"], stats["tied"]


def _pair_stats(ref, tied, both) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over the prompts ``both`` with both rows: whether the tied row's margin beats its spread, whether the smaller
    of the two margins does, and tanh(smaller margin / spread - 1) with 0/0 as 0 (x/0 as +-1)."""
    spread = np.array([tied[p][1] for p in both], dtype=float)
    tied_margin = np.array([tied[p][2] for p in both], dtype=float)
    smaller = np.minimum(np.array([ref[p][2] for p in both], dtype=float), tied_margin)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin_scores = np.nan_to_num(np.tanh(smaller / spread - 1), nan=0.0)
    return tied_margin > spread, smaller > spread, margin_scores


def _mean(values: np.ndarray) -> float:
    """numpy's mean, nan for none (without its warning)."""
    return float(np.mean(values)) if values.size else float("nan")
