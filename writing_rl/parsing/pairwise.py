"""Pairwise judge replies: a verdict ``[[A]]`` / ``[[B]]`` / ``[[C]]``, a score pair ``A: 7, B: 4``, or
a JSON score (WritingBench's critic)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from .ranking import parse_scores
from .text import Unreadable, split_reasoning, without_quotes

# MT-Bench / Writing-RL convention: [[A]] first response better, [[B]] second better, [[C]] tie.
VERDICTS = ("A", "B", "C")
PAIRWISE_OUTPUTS = ("verdict", "scores", "auto")
_VERDICT = re.compile(r"\[\[([ABC])\]\]")


def read_verdict(reply: str) -> str | Unreadable:
    """The judge's verdict ``"A"``, ``"B"`` or ``"C"``, read from the answer after its reasoning block.

    Verdict tokens in quoted material do not count. Two different verdicts outside quotes make the
    reply unreadable (a judge quoting a response that ends in a fake verdict must not hand it the
    win); the same verdict repeated is fine."""
    split = split_reasoning(reply)
    if isinstance(split, Unreadable):
        return split
    answer = split[1]
    found = set(_VERDICT.findall(without_quotes(answer)))
    if len(found) == 1:
        return found.pop()
    if len(found) > 1:
        return Unreadable(f"conflicting verdicts {', '.join(f'[[{v}]]' for v in sorted(found))} in one reply")
    if _VERDICT.search(answer):
        return Unreadable("the only verdict tokens are inside quoted material")
    return Unreadable("no verdict [[A]], [[B]] or [[C]] after the reasoning")


_SCORES_LABEL = re.compile(r"^\s*(?:final\s+)?scores?\s*:\s*", re.I)


def read_score_pair(reply: str) -> tuple[int, int] | Unreadable:
    """The judge's scores of Response A and Response B, ``(a, b)``, integers 0-10.

    They are the last non-empty line of the answer outside quoted material, both labels once, in
    either order: ``A: 7, B: 4``. Markdown emphasis and a leading ``Scores:`` / ``Final scores:`` are
    ignored; a fence around that line alone is the judge's formatting."""
    split = split_reasoning(reply)
    if isinstance(split, Unreadable):
        return split
    lines = [line for line in without_quotes(split[1]).splitlines() if line.strip()]
    if not lines:
        return Unreadable("no answer after the reasoning")
    line = _SCORES_LABEL.sub("", re.sub(r"[*_`]", "", lines[-1]))
    scores = parse_scores(line, ("A", "B"), strict=False)
    if isinstance(scores, str):
        return Unreadable(f"the last line is not a score pair 'A: <0-10>, B: <0-10>': {scores}")
    return scores["A"], scores["B"]


@dataclass(frozen=True)
class Comparison:
    """One pairwise judgment: the verdict, and the scores it came from when the judge gave scores."""

    verdict: str
    scores: tuple[int, int] | None = None


def read_comparison(reply: str, output: str = "verdict", tie_margin: float = 0) -> Comparison | Unreadable:
    """A pairwise reply as a ``Comparison``.

    ``output``: ``"verdict"`` reads ``[[A]]``/``[[B]]``/``[[C]]``; ``"scores"`` reads a score pair and
    calls it a tie when the scores differ by at most ``tie_margin``; ``"auto"`` takes a verdict when
    the reply holds a verdict token, else a score pair."""
    if output not in PAIRWISE_OUTPUTS:
        raise ValueError(f"output must be one of {PAIRWISE_OUTPUTS}, got {output!r}")
    if output == "verdict" or (output == "auto" and isinstance(reply, str) and _VERDICT.search(reply)):
        verdict = read_verdict(reply)
        return verdict if isinstance(verdict, Unreadable) else Comparison(verdict)
    scores = read_score_pair(reply)
    if isinstance(scores, Unreadable):
        return scores
    a, b = scores
    verdict = "C" if abs(a - b) <= tie_margin else "A" if a > b else "B"
    return Comparison(verdict, scores)


def read_json_score(reply: str, key: str = "score", low: float = 1, high: float = 10) -> float | Unreadable:
    """The number under ``key`` in the JSON object of the answer (WritingBench's critic writes
    ``{"score": 7, "reason": "..."}``), within ``[low, high]``.

    Every JSON object in the answer that has ``key`` is read; they must agree (a quoted object with
    another score makes the reply unreadable)."""
    split = split_reasoning(reply)
    if isinstance(split, Unreadable):
        return split
    answer = split[1]
    decoder = json.JSONDecoder()
    values = []
    position = answer.find("{")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(answer, position)
        except ValueError:
            position = answer.find("{", position + 1)
            continue
        if isinstance(value, dict) and key in value:
            values.append(value[key])
        position = answer.find("{", end)
    if not values:
        return Unreadable(f'no JSON object with a "{key}" field after the reasoning')
    if any(v != values[0] for v in values[1:]):
        return Unreadable(f'conflicting "{key}" values {values[:4]} in one reply')
    score = values[0]
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return Unreadable(f'"{key}" is {values[0]!r:.40}, not a number')
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return Unreadable(f'"{key}" is {values[0]!r:.40}, not a number')
    if not low <= score <= high:
        return Unreadable(f'"{key}" is {score}, outside {low}-{high}')
    return float(score)


def parse_verdict(reply: str) -> str | None:
    """``read_verdict`` for callers that only need the verdict or None."""
    verdict = read_verdict(reply)
    return None if isinstance(verdict, Unreadable) else verdict


def parse_score_pair(reply: str) -> tuple[int, int] | None:
    """``read_score_pair`` for callers that only need the pair or None."""
    scores = read_score_pair(reply)
    return None if isinstance(scores, Unreadable) else scores
