"""GQM, the group quality protocol of GRRM: one prompt shows a group of candidates, one answer ranks them.

The final block of each prompt type (``ranking``, ``score``, ``ranking_score``) and its rules:
docs/genrm/training.md#the-gqm-protocol. Here: the labels, and the canonical text of a final block (what SFT
targets and RL ground truths hold). The request is built in ``gqm_prompt`` (``GroupPrompter`` renders many
orders and subsets of one group without redoing the shared work), replies are read in ``gqm_reply`` (exported
with every other judge reader by ``writing_rl.protocols``), languages in ``languages``.
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import Mapping, Sequence

LABELS = string.ascii_uppercase
MAX_CANDIDATES = len(LABELS)
MIN_SCORE, MAX_SCORE = 0, 10
PROMPT_TYPES = ("score", "ranking", "ranking_score")
VARIANTS = ("default", "no_cot", "zero")
HEADER_MODES = ("required", "optional")
RANKING_HEADER = "### Final Ranking:"
SCORES_HEADER = "### Scores:"
# zero variant: reasoning characters required per candidate before the final block
MIN_REASONING_CHARS = 50

Ranking = tuple[tuple[str, ...], ...]  # tiers, best first; labels in label order inside a tier


def labels_for(n: int) -> tuple[str, ...]:
    if not 2 <= n <= MAX_CANDIDATES:
        raise ValueError(f"a GQM group holds 2 to {MAX_CANDIDATES} candidates, got {n}")
    return tuple(LABELS[:n])


def ranking_from_scores(scores: Mapping[str, int]) -> Ranking:
    """Tiers implied by scores: higher first, equal scores tied, labels in label order within a tier."""
    tiers: dict[int, list[str]] = {}
    for label in sorted(scores):
        tiers.setdefault(scores[label], []).append(label)
    return tuple(tuple(tiers[value]) for value in sorted(tiers, reverse=True))


def format_ranking(ranking: Ranking) -> str:
    return " > ".join(" = ".join(tier) for tier in ranking)


def format_scores(scores: Mapping[str, int], order: Sequence[str] | None = None) -> str:
    """``"B: 9, A: 7"`` in ``order`` (default: best first, as in a ranking_score answer)."""
    if order is None:
        order = [label for tier in ranking_from_scores(scores) for label in tier]
    return ", ".join(f"{label}: {scores[label]}" for label in order)


def final_lines(prompt_type: str, scores: Mapping[str, int], *, headers: bool = True) -> list[str]:
    """The non-empty lines that end a canonical answer for these scores (keys: labels)."""
    _check_choice("prompt_type", prompt_type, PROMPT_TYPES)
    lines: list[str] = []
    if prompt_type in ("ranking", "ranking_score"):
        lines += [RANKING_HEADER] * headers + [format_ranking(ranking_from_scores(scores))]
    if prompt_type == "score":
        lines += [SCORES_HEADER] * headers + [format_scores(scores, sorted(scores))]
    elif prompt_type == "ranking_score":
        lines += [SCORES_HEADER] * headers + [format_scores(scores)]
    return lines


def gqm_response(analysis: str | None, scores: Mapping[str, int], prompt_type: str, *, cot: bool = True) -> str:
    """A canonical GenRM answer: the analysis, then the final block (SFT targets).

    ``cot=False`` gives the no-CoT answer: the final lines alone, without headers.
    """
    if not cot:
        return "\n".join(final_lines(prompt_type, scores, headers=False)) + "\n"
    if not analysis or not analysis.strip():
        raise ValueError("an answer with reasoning needs a non-empty analysis")
    body = "\n\n".join(final_lines(prompt_type, scores))
    return f"{analysis.strip()}\n\n{body}\n"


def ground_truth_text(prompt_type: str, scores: Mapping[str, int] | Sequence[int]) -> str:
    """An RL row's ``reward_model.ground_truth``: the ranking line for ``ranking``, else the scores as a
    JSON object in label order (``{"A": 9, "B": 7}``, the form of GRRM's released RL data). ``scores``:
    a {label: score} dict of labels A, B, ..., or the scores in label order."""
    if not isinstance(scores, (list, tuple)):
        scores = [scores[label] for label in labels_for(len(scores))]
    if prompt_type == "ranking":
        return format_ranking(ranking_from_scores(dict(zip(LABELS, scores))))
    if prompt_type not in PROMPT_TYPES:
        _check_choice("prompt_type", prompt_type, PROMPT_TYPES)
    return _json_scores_format(len(scores)) % tuple(scores)


@lru_cache(maxsize=None)
def _json_scores_format(n: int) -> str:
    """``'{"A": %d, "B": %d}'``: json.dumps of a score dict in label order, as one format operation."""
    return "{" + ", ".join(f'"{label}": %d' for label in labels_for(n)) + "}"


# ---------------------------------------------------------------- helpers


def _labels(labels: Sequence[str] | int) -> tuple[str, ...]:
    return labels_for(labels) if isinstance(labels, int) else tuple(labels)


def _check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
