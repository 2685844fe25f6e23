"""Pairwise GenRM accuracy reward (Writing-Zero's GenRM RL): 1 when the GenRM prefers the response a
human preferred, else 0.

verl entry point (rule-based, no judge; runs under verl's built-in ``naive`` reward manager):
``reward.custom_reward_function.path=pkg://reward_fns.preference`` (name ``compute_score``); options
under ``reward.custom_reward_function.reward_kwargs`` (hydra_configs/genrm_pairwise_rl.yaml).

Ground truth (``build_parquet.py pref-rl``): the slot of the preferred response, ``"A"`` or ``"B"``
(``"C"``: the pair is a tie); ``"[[A]]"`` or ``{"label": "A"}`` work too.

The GenRM's answer, after its closed ``<think>`` block if any, ends with either
- a verdict ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie) on its last line; every verdict token in the answer
  must agree (an answer that hedges with both is malformed), or
- a score line ``A: 7, B: 4`` (integers 0-10) as its last line; the higher score wins, equal = tie.
``output_format`` picks one (``auto``: the row's ``extra_info.output_format``, else whichever the last
line holds). Malformed answers score 0 with ``valid_answer=0``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl import protocols
from writing_rl.reward_loop.contract import RewardMethod, option, read_options, register

OUTPUT_FORMATS = ("auto", "verdict", "scores")
_VERDICT = re.compile(r"\[\[([ABC])\]\]")


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.preference``."""

    # What the GenRM's answer ends with: verdict ([[A]]/[[B]]/[[C]]), scores (A: 7, B: 4) or auto (the
    # row's extra_info.output_format, else whichever the last line holds).
    output_format: str = option("auto", choices=OUTPUT_FORMATS)
    # The reward of a tie verdict on a pair with a preferred response.
    tie_score: float = 0.0
    # false: a tie verdict is a malformed answer (0, valid_answer=0).
    allow_tie: bool = True


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping | None = None,
    *,
    reward_router_address: str | None = None,  # passed by verl when it hosts a reward model; unused
    reward_model_tokenizer: Any = None,  # likewise
    **given: Any,
) -> dict[str, float]:
    """Score one GenRM answer. Always the same keys: score, valid_answer, correct, predicted_tie.

    - The verdict matches the label: 1.
    - A tie verdict on a pair with a preferred response: ``tie_score`` (default 0);
      ``allow_tie=False`` makes a tie verdict malformed instead (0, ``valid_answer=0``).
    - Otherwise 0.
    """
    options = read_options(RewardOptions, given)
    output_format, allow_tie = options.output_format, options.allow_tie
    label = read_label(ground_truth, extra_info)
    if output_format == "auto":
        output_format = (extra_info or {}).get("output_format") or "auto"
    verdict = last_line_verdict(solution_str, output_format)
    if verdict is None or (verdict == "C" and not allow_tie):
        return _result(0.0, valid=0)
    if verdict == label:
        return _result(1.0, valid=1, correct=1, predicted_tie=int(verdict == "C"))
    if verdict == "C":
        return _result(float(options.tie_score), valid=1, predicted_tie=1)
    return _result(0.0, valid=1)


def last_line_verdict(solution_str: str, output_format: str = "auto") -> str | None:
    """``"A"``, ``"B"`` or ``"C"`` from a GenRM answer whose last line is its verdict or score line, or
    None when it is malformed.

    Read by ``writing_rl.protocols`` (conflicting verdicts, quoted-only verdicts and unclosed reasoning are
    malformed); training also asks that the verdict or score line be the answer's last line."""
    if not isinstance(solution_str, str):
        return None
    split = protocols.split_reasoning(solution_str)
    if isinstance(split, protocols.Unreadable) or not split[1].strip():
        return None
    last_line = split[1].strip().splitlines()[-1].strip()
    if output_format == "auto":
        output_format = "verdict" if _VERDICT.search(last_line) else "scores"
    if output_format == "verdict" and not _VERDICT.search(last_line):
        return None  # a verdict that does not end the answer
    if output_format == "scores" and isinstance(protocols.parse_scores(last_line, ("A", "B")), protocols.Unreadable):
        return None  # training wants the exact score line, 'A: 7, B: 4'
    comparison = protocols.read_comparison(solution_str, output_format)
    return None if isinstance(comparison, protocols.Unreadable) else comparison.verdict


def read_label(ground_truth: Any, extra_info: Mapping | None = None) -> str:
    """The human label A/B/C; a bad one is a data error and raises ValueError naming the sample."""
    value = ground_truth
    if isinstance(value, Mapping):
        value = value.get("label")
    if isinstance(value, str):
        text = value.strip().upper()
        match = _VERDICT.fullmatch(text)
        text = match.group(1) if match else text
        if text in ("A", "B", "C"):
            return text
    where = f"sample index={extra_info['index']}" if extra_info and extra_info.get("index") is not None else "sample"
    raise ValueError(
        f"{where}: ground truth must be the preferred slot 'A', 'B' or 'C' (tie), got {ground_truth!r:.80}"
    )


def _result(score: float, valid: int, correct: int = 0, predicted_tie: int = 0) -> dict[str, float]:
    return {"score": float(score), "valid_answer": valid, "correct": correct, "predicted_tie": predicted_tie}


def preflight_row(ground_truth: Any, extra_info: Mapping | None = None) -> None:
    """A preference row with its human label A, B or C (writing-rl preflight)."""
    read_label(ground_truth, extra_info)


def failure_score(tie_score: float = 0.0, **_: Any) -> float:
    """What a failed sample is paid: no more than a wrong answer (0) or a tie verdict."""
    return min(0.0, float(tie_score))


METHOD = register(
    compute_score,
    RewardMethod(name="genrm_preference", options=RewardOptions, failure_score=failure_score, check_row=preflight_row),
)
