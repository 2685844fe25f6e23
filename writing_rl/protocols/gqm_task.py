"""GRRM's RL rows and what a GQM answer earns against them: the ground truth read and checked, and the
two terms of the ranking-accuracy reward, as pure functions.

``reward_fns/ranking_accuracy.py`` (the RLVR reward) and ``writing-rl eval genrm-ranking`` (a GenRM's
accuracy on gold-scored groups) both score with these, so an evaluation reports exactly the terms
training pays. The terms: docs/genrm/training.md (GRRM's RLVR).
"""

from __future__ import annotations

import json
from itertools import combinations
from typing import Any, Mapping, Sequence

from writing_rl.protocols import gqm
from writing_rl.protocols.gqm_reply import GQMOutput, parse_ranking, read_gqm_output
from writing_rl.protocols.text import Unreadable

MARGIN_REWARDS = (1.0, 0.6, 0.2)


def read_gold_ranking(ground_truth: Any, extra_info: Mapping | None = None):
    """(scores or None, ranking, labels) from a score dict (JSON text or mapping) or a ranking string.

    A bad ground truth is a data error, not a model error: it raises ValueError naming the sample.
    """
    value = ground_truth
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"{_where(extra_info)}: ground truth is not valid JSON: {ground_truth!r:.80}") from None
    if isinstance(value, Mapping):
        scores = {str(k): v for k, v in value.items() if v is not None}
        labels = gqm.LABELS[: len(scores)]
        if len(scores) < 2 or sorted(scores) != list(labels):
            raise ValueError(
                f"{_where(extra_info)}: ground truth scores must be keyed A, B, ... (at least 2), got {sorted(scores)}"
            )
        bad = {k: v for k, v in scores.items() if isinstance(v, bool) or not float(v).is_integer()}
        if bad:
            raise ValueError(f"{_where(extra_info)}: ground truth scores must be integers, got {bad}")
        scores = {k: int(v) for k, v in scores.items()}
        return scores, gqm.ranking_from_scores(scores), tuple(labels)
    if isinstance(value, str):
        items = [item.strip() for item in value.replace(">", "=").split("=") if item.strip()]
        labels = tuple(gqm.LABELS[: len(items)])
        ranking = parse_ranking(value, labels) if len(items) >= 2 else "fewer than 2 candidates"
        if isinstance(ranking, str):
            raise ValueError(f"{_where(extra_info)}: ground truth ranking {value!r:.80} is invalid: {ranking}")
        return None, ranking, labels
    raise ValueError(
        f"{_where(extra_info)}: ground truth must be a score dict (JSON or mapping) or a ranking string, "
        f"got {type(ground_truth).__name__}"
    )


def prompt_type_for(prompt_type: str | None, extra_info: Mapping | None, truth_scores: Mapping | None) -> str:
    """What the answer must end with: ``prompt_type`` if given, else the row's ``extra_info["prompt_type"]``,
    else ``ranking_score`` for a score-dict truth and ``ranking`` for a ranking truth. Only ``ranking``
    goes with a ranking truth (ValueError otherwise)."""
    chosen = (
        prompt_type
        or (extra_info or {}).get("prompt_type")
        or ("ranking_score" if truth_scores is not None else "ranking")
    )
    if chosen != "ranking" and truth_scores is None:
        raise ValueError(f"{_where(extra_info)}: prompt_type {chosen} needs a score dict ground truth, got a ranking")
    return chosen


def read_answer(
    text: str,
    labels: Sequence[str],
    prompt_type: str,
    *,
    variant: str = "default",
    require_headers: bool = True,
    min_reasoning_chars: int = gqm.MIN_REASONING_CHARS,
) -> GQMOutput | Unreadable:
    """A GenRM answer read as the reward reads it: the strict format, headers required unless told."""
    return read_gqm_output(
        text,
        labels,
        prompt_type=prompt_type,
        variant=variant,
        headers="required" if require_headers else "optional",
        strict=True,
        min_reasoning_chars=min_reasoning_chars,
    )


def answer_terms(
    answer: GQMOutput,
    truth_scores: Mapping[str, int] | None,
    truth_ranking: gqm.Ranking,
    margin_rewards: Sequence[float] = MARGIN_REWARDS,
) -> tuple[float, float | None]:
    """(ranking term, score term) of a read answer; the score term is None unless both the answer and
    the truth have scores."""
    score_term = None
    if answer.scores is not None and truth_scores is not None:
        score_term = margin_score(answer.scores, truth_scores, [float(r) for r in margin_rewards])
    return ranking_agreement(answer.ranking, truth_ranking), score_term


def ranking_agreement(predicted: gqm.Ranking, truth: gqm.Ranking) -> float:
    """Share of candidate pairs on which the two rankings agree: same order, or both tied."""
    predicted_tier, truth_tier = tiers(predicted), tiers(truth)
    pairs = list(combinations(sorted(truth_tier), 2))
    agree = sum(_relation(predicted_tier, x, y) == _relation(truth_tier, x, y) for x, y in pairs)
    return agree / len(pairs)


def tiers(ranking: gqm.Ranking) -> dict[str, int]:
    """Each label's tier, 0 for the best."""
    return {label: i for i, members in enumerate(ranking) for label in members}


def _relation(tier: Mapping[str, int], x: str, y: str) -> int:
    """1 if x ranks above y, -1 below, 0 tied."""
    return (tier[x] < tier[y]) - (tier[x] > tier[y])


def margin_score(
    predicted: Mapping[str, int], truth: Mapping[str, int], rewards: Sequence[float] = MARGIN_REWARDS
) -> float:
    """Mean over pairs of ``rewards[|(truth[x]-truth[y]) - (pred[x]-pred[y])|]`` (0 past the table)."""
    pairs = list(combinations(sorted(truth), 2))
    total = 0.0
    for x, y in pairs:
        error = abs((truth[x] - truth[y]) - (predicted[x] - predicted[y]))
        total += rewards[error] if error < len(rewards) else 0.0
    return total / len(pairs)


def _where(extra_info: Mapping | None) -> str:
    if extra_info and extra_info.get("index") is not None:
        return f"sample index={extra_info['index']}"
    return "sample"
