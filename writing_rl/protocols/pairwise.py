"""Pairwise judge replies: a verdict ``[[A]]`` / ``[[B]]`` / ``[[C]]``, a score pair ``A: 7, B: 4``, or
a JSON score (WritingBench's critic)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from writing_rl.protocols.gqm_reply import parse_scores
from writing_rl.protocols.text import Unreadable, split_reasoning, without_quotes

# MT-Bench / Writing-RL convention: [[A]] first response better, [[B]] second better, [[C]] tie.
VERDICTS = ("A", "B", "C")
PAIRWISE_OUTPUTS = ("verdict", "scores", "auto")
_VERDICT = re.compile(r"\[\[([ABC])\]\]")


def read_verdict(reply: str) -> str | Unreadable:
    """The judge's verdict ``"A"``, ``"B"`` or ``"C"``, read from the answer after its reasoning block.

    Verdict tokens in quoted material do not count. Two different verdicts outside quotes make the
    reply unreadable (a judge quoting a response that ends in a fake verdict must not hand it the
    win); the same verdict repeated is fine."""
    answer = _answer(reply)
    return answer if isinstance(answer, Unreadable) else _verdict_in(*answer)


def _answer(reply: str) -> tuple[str, str] | Unreadable:
    """(the answer after the judge's reasoning block, the same with its quoted material blanked)."""
    split = split_reasoning(reply)
    return split if isinstance(split, Unreadable) else (split[1], without_quotes(split[1]))


def _verdict_in(answer: str, unquoted: str) -> str | Unreadable:
    found = set()
    for line in unquoted.splitlines():
        tokens = set(_VERDICT.findall(line))
        if len(tokens) < len(VERDICTS):  # a line naming all three lists the options, it chooses none
            found |= tokens
    if len(found) == 1:
        return found.pop()
    if len(found) > 1:
        return Unreadable(f"conflicting verdicts {', '.join(f'[[{v}]]' for v in sorted(found))} in one reply")
    if _VERDICT.search(answer):
        return Unreadable("the only verdict tokens are inside quoted material or list the options")
    return Unreadable("no verdict [[A]], [[B]] or [[C]] after the reasoning")


_SCORES_LABEL = re.compile(r"^\s*(?:final\s+)?scores?\s*:\s*", re.I)
_LABEL_NOUN = re.compile(r"\b(?:response|assistant|answer)\s+(?=[AB]\s*:)", re.I)
_OUT_OF_TEN = re.compile(r"(\d)\s*/\s*10\b")


def _score_pair_line(line: str) -> tuple[int, int] | Unreadable:
    """``(a, b)`` from one line such as ``A: 7, B: 4`` (also ``**Scores:** Response A: 7/10, ...``)."""
    line = _SCORES_LABEL.sub("", re.sub(r"[*_`]", "", line))
    line = _OUT_OF_TEN.sub(r"\1", _LABEL_NOUN.sub("", line))
    scores = parse_scores(line, ("A", "B"), strict=False)
    return scores if isinstance(scores, Unreadable) else (scores["A"], scores["B"])


def read_score_pair(reply: str) -> tuple[int, int] | Unreadable:
    """The judge's scores of Response A and Response B, ``(a, b)``, integers 0-10.

    They are the last non-empty line of the answer outside quoted material, both labels once, in
    either order: ``A: 7, B: 4`` (markdown emphasis, a leading ``Scores:``, ``Response``/``Assistant``
    before a label and ``/10`` after a score are ignored; a fence around that line alone is the judge's
    formatting). Any other line outside quotes that is itself a score pair must agree with it: a judge
    that echoes a response's fake score line after its own is unreadable."""
    answer = _answer(reply)
    return answer if isinstance(answer, Unreadable) else _score_pair_in(answer[1])


def _score_pair_in(unquoted: str) -> tuple[int, int] | Unreadable:
    lines = [line for line in unquoted.splitlines() if line.strip()]
    if not lines:
        return Unreadable("no answer after the reasoning")
    scores = _score_pair_line(lines[-1])
    if isinstance(scores, Unreadable):
        return Unreadable(f"the last line is not a score pair 'A: <0-10>, B: <0-10>': {scores}")
    others = {pair for pair in map(_score_pair_line, lines[:-1]) if not isinstance(pair, Unreadable)}
    if others - {scores}:
        return Unreadable(f"conflicting score pairs {sorted(others | {scores})} in one reply")
    return scores


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
    answer = _answer(reply)
    if isinstance(answer, Unreadable):
        return answer
    if output == "verdict":
        verdict = _verdict_in(*answer)
        return verdict if isinstance(verdict, Unreadable) else Comparison(verdict)
    scores = _score_pair_in(answer[1])
    if output == "scores" or not _VERDICT.search(answer[1]):
        return scores if isinstance(scores, Unreadable) else Comparison(_verdict_of(scores, tie_margin), scores)
    # auto, with a verdict token in the judge's own words: it must read, and agree with any score line.
    verdict = _verdict_in(*answer)
    if isinstance(verdict, Unreadable) or isinstance(scores, Unreadable):
        return verdict if isinstance(verdict, Unreadable) else Comparison(verdict)
    if verdict != _verdict_of(scores, tie_margin):
        return Unreadable(f"the verdict [[{verdict}]] disagrees with the scores {scores}")
    return Comparison(verdict, scores)


def _verdict_of(scores: tuple[int, int], tie_margin: float) -> str:
    a, b = scores
    return "C" if abs(a - b) <= tie_margin else "A" if a > b else "B"


def read_json_score(reply: str, key: str = "score", low: float = 1, high: float = 10) -> float | Unreadable:
    """The number under ``key`` in the JSON object of the answer (WritingBench's critic writes
    ``{"score": 7, "reason": "..."}``), within ``[low, high]``.

    Every JSON object in the answer that has ``key`` is read and they must agree; an object with
    ``key`` twice, or a ``"key":`` that no decoded object accounts for (a judge that copied a response's
    text unescaped into its own object), makes the reply unreadable."""
    split = split_reasoning(reply)
    if isinstance(split, Unreadable):
        return split
    answer = split[1]
    objects = json_objects(answer)
    if isinstance(objects, Unreadable):
        return objects
    values = [v for value in objects for v in _values_under(value, key)]
    mentions = len(re.findall(rf'"{re.escape(key)}"\s*:', answer))
    if not values:
        return Unreadable(f'no JSON object with a "{key}" field after the reasoning')
    if mentions > len(values):
        return Unreadable(f'{mentions} "{key}" fields but only {len(values)} in well-formed JSON objects')
    if any(v != values[0] for v in values[1:]):
        return Unreadable(f'conflicting "{key}" values {values[:4]} in one reply')
    return _number_in_range(values[0], key, low, high)


def json_objects(answer: str) -> list | Unreadable:
    """Every well-formed JSON object in ``answer``, outermost ones, in order; unreadable when one has a
    key twice (a judge that copied a response's text unescaped into its own object)."""
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    objects = []
    position = answer.find("{")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(answer, position)
        except _DuplicateKey as exc:
            return Unreadable(f'a JSON object has "{exc}" twice')
        except ValueError:
            position = answer.find("{", position + 1)
            continue
        objects.append(value)
        position = answer.find("{", end)
    return objects


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise _DuplicateKey(k)
    return dict(pairs)


def _values_under(value: object, key: str) -> list:
    """The values under ``key`` in a decoded object and the objects nested in it."""
    if isinstance(value, dict):
        found = [value[key]] if key in value else []
        return found + [v for item in value.values() for v in _values_under(item, key)]
    if isinstance(value, list):
        return [v for item in value for v in _values_under(item, key)]
    return []


def _number_in_range(value: object, key: str, low: float, high: float) -> float | Unreadable:
    score = value
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return Unreadable(f'"{key}" is {value!r:.40}, not a number')
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return Unreadable(f'"{key}" is {value!r:.40}, not a number')
    if not low <= score <= high:
        return Unreadable(f'"{key}" is {score}, outside {low}-{high}')
    return float(score)


def verdict_or_none(reply: str) -> str | None:
    """``read_verdict`` for callers that only need the verdict or None (the reason dropped)."""
    verdict = read_verdict(reply)
    return None if isinstance(verdict, Unreadable) else verdict


def score_pair_or_none(reply: str) -> tuple[int, int] | None:
    """``read_score_pair`` for callers that only need the pair or None (the reason dropped)."""
    scores = read_score_pair(reply)
    return None if isinstance(scores, Unreadable) else scores
