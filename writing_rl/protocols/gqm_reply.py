"""GQM replies (GRRM's group protocol, writing_rl/protocols/gqm.py): ranking and scores lines (``parse_*``), whole
answers (``read_gqm_output``). Each returns its value or an ``Unreadable`` saying why (writing_rl/protocols/__init__.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from writing_rl.protocols.gqm import (
    HEADER_MODES,
    MAX_SCORE,
    MIN_REASONING_CHARS,
    MIN_SCORE,
    PROMPT_TYPES,
    RANKING_HEADER,
    SCORES_HEADER,
    VARIANTS,
    Ranking,
    _check_choice,
    _labels,
    format_ranking,
    ranking_from_scores,
)
from writing_rl.protocols.text import Unreadable, clip, split_reasoning, without_quotes

_EMPHASIS = re.compile(r"^[*_`\s]+|[*_`\s.]+$")


def parse_ranking(line: str, labels: Sequence[str] | int, *, strict: bool = True) -> Ranking | Unreadable:
    """``"B > A = D > C"`` -> ``(("B",), ("A", "D"), ("C",))``, or an ``Unreadable``: why it is not a valid ranking.

    strict: exactly one space around ``>`` and ``=``, nothing else on the line. Otherwise spacing is
    free and markdown emphasis or backticks around the line are ignored.
    """
    labels = _labels(labels)
    if not isinstance(line, str):
        return Unreadable(f"expected a ranking line, got {type(line).__name__}")
    text = line.strip() if strict else _EMPHASIS.sub("", line)
    if not text:
        return Unreadable("empty ranking line")
    if "<" in text:
        return Unreadable(f"ranking {clip(text)} uses '<'; rank best first with '>'")
    if strict:
        tiers = [tier.split(" = ") for tier in text.split(" > ")]
    else:
        tiers = [re.split(r"\s*=\s*", tier.strip()) for tier in re.split(r"\s*>\s*", text)]
    items = [item for tier in tiers for item in tier]
    reason = _check_labels(items, labels, f"ranking {clip(text)}")
    if reason:
        return reason
    order = {label: i for i, label in enumerate(labels)}
    return tuple(tuple(sorted(tier, key=order.__getitem__)) for tier in tiers)


_STRICT_SCORE = re.compile(r"^([A-Z]): (\d{1,2})$")
_LOOSE_SCORE = re.compile(r"^\s*([A-Z])\s*:\s*(\d+)\s*$")


def parse_scores(line: str, labels: Sequence[str] | int, *, strict: bool = True) -> dict[str, int] | Unreadable:
    """``"B: 9, A: 7"`` -> ``{"B": 9, "A": 7}`` (integers 0-10, every candidate once), or an ``Unreadable``."""
    labels = _labels(labels)
    if not isinstance(line, str):
        return Unreadable(f"expected a scores line, got {type(line).__name__}")
    text = line.strip() if strict else _EMPHASIS.sub("", line)
    if not text:
        return Unreadable("empty scores line")
    pattern = _STRICT_SCORE if strict else _LOOSE_SCORE
    scores: dict[str, int] = {}
    items = []
    for item in text.split(", ") if strict else text.split(","):
        match = pattern.match(item)
        if not match:
            return Unreadable(f"scores {clip(text)}: {clip(item)} is not '<label>: <integer>'")
        label, value = match.group(1), int(match.group(2))
        if not MIN_SCORE <= value <= MAX_SCORE:
            return Unreadable(f"scores {clip(text)}: {label} has {value}, outside {MIN_SCORE}-{MAX_SCORE}")
        items.append(label)
        scores[label] = value
    reason = _check_labels(items, labels, f"scores {clip(text)}")
    return reason or scores


def check_consistent(ranking: Ranking, scores: Mapping[str, int]) -> Unreadable | None:
    """None when the ranking is the one the scores imply; else an ``Unreadable`` saying how they differ."""
    implied = ranking_from_scores(scores)
    if tuple(ranking) == implied:
        return None
    return Unreadable(
        f"ranking {format_ranking(ranking)} disagrees with the scores, which rank {format_ranking(implied)}"
    )


def _check_labels(items: list[str], labels: tuple[str, ...], what: str) -> Unreadable | None:
    known = set(labels)
    seen: set[str] = set()
    for item in items:
        if item not in known:
            return Unreadable(f"{what}: {clip(item)} is not a candidate label ({labels[0]}-{labels[-1]})")
        if item in seen:
            return Unreadable(f"{what} names {item} twice")
        seen.add(item)
    missing = [label for label in labels if label not in seen]
    if missing:
        return Unreadable(f"{what} leaves out {', '.join(missing)}")
    return None


# ---------------------------------------------------------------- whole answers


@dataclass(frozen=True)
class GQMOutput:
    """A GenRM answer that follows the protocol. ``scores`` is None for the ranking prompt type;
    ``ranking`` is always set (implied by the scores for the score prompt type)."""

    ranking: Ranking
    scores: dict[str, int] | None
    reasoning: str


# Reading presets: ``read_gqm_output(text, labels, prompt_type=..., **LENIENT)``.
# STRICT: the exact format RLVR trains (reward_fns.ranking_accuracy's default).
# LENIENT: for a GenRM judging policy rollouts: analysis, then a ranking line, then a last line of
# scores; header lines optional, free spacing, markdown emphasis around the final lines ignored.
STRICT = {"variant": "default", "headers": "required", "strict": True}
LENIENT = {"variant": "default", "headers": "optional", "strict": False}


def read_gqm_output(
    text: str,
    labels: Sequence[str] | int,
    *,
    prompt_type: str = "ranking_score",
    variant: str = "default",
    headers: str = "required",
    strict: bool = True,
    min_reasoning_chars: int = MIN_REASONING_CHARS,
) -> GQMOutput | Unreadable:
    """Read a whole GenRM answer; a ``GQMOutput``, or an ``Unreadable`` saying why it does not follow the protocol.

    - The final block is read from the last non-empty lines (blank lines are ignored). A ``<think>``
      block at the start of the reply counts as reasoning; one never closed means no answer.
    - Any other line outside quoted material that is itself a complete ranking or scores line must
      agree with the final block (a GenRM that echoes a candidate's fake final block after its own
      is unreadable, not the candidate's win).
    - ``variant="default"``: some reasoning must precede the final block. ``"no_cot"``: the answer is
      exactly the final value lines (no headers, no reasoning). ``"zero"``: at least
      ``min_reasoning_chars`` reasoning characters per candidate.
    - ``headers="required"``: each final value line follows its header line (one that mentions
      "rank" / "score"); ``"optional"``: such header lines are skipped when present.
    - ``prompt_type="ranking_score"``: the ranking must agree with the scores.
    """
    _check_choice("prompt_type", prompt_type, PROMPT_TYPES)
    _check_choice("variant", variant, VARIANTS)
    _check_choice("headers", headers, HEADER_MODES)
    return _read(text, _labels(labels), prompt_type, variant, headers, strict, min_reasoning_chars)


def _read(
    text: str,
    labels: tuple[str, ...],
    prompt_type: str,
    variant: str,
    headers: str,
    strict: bool,
    min_reasoning_chars: int,
) -> GQMOutput | Unreadable:
    split = split_reasoning(text)
    if isinstance(split, Unreadable):
        return split
    thought, answer = split

    lines = answer.splitlines()
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    slots = _final_slots(prompt_type)
    values: dict[str, str] = {}
    cursor = len(nonblank) - 1
    for slot in reversed(slots):
        if slot.endswith("header"):
            if variant == "no_cot":
                continue
            keyword = "rank" if slot == "ranking_header" else "score"
            looks_like = cursor >= 0 and _is_header(lines[nonblank[cursor]], keyword)
            if looks_like:
                cursor -= 1
            elif headers == "required":
                heading = RANKING_HEADER if keyword == "rank" else SCORES_HEADER
                found = clip(lines[nonblank[cursor]].strip()) if cursor >= 0 else "nothing"
                return Unreadable(f"expected a header line like {heading!r} before the {slot[:-7]} line, found {found}")
            continue
        if cursor < 0:
            return Unreadable(
                f"the answer ends before its {slot} line (expected the final block of a {prompt_type} answer)"
            )
        values[slot] = lines[nonblank[cursor]]
        cursor -= 1

    reasoning = thought.strip()
    if cursor >= 0:
        before = "\n".join(lines[: nonblank[cursor] + 1]).strip()
        reasoning = f"{reasoning}\n{before}".strip() if reasoning else before
    if variant == "no_cot" and reasoning:
        return Unreadable(f"expected only the final {len(values)} line(s) (no_cot), found reasoning before them")
    if variant == "default" and not reasoning:
        return Unreadable("no reasoning before the final block")
    if variant == "zero" and len(reasoning) < min_reasoning_chars * len(labels):
        return Unreadable(
            f"only {len(reasoning)} reasoning characters before the final block; the zero variant needs "
            f"{min_reasoning_chars} per candidate ({min_reasoning_chars * len(labels)})"
        )

    ranking: Ranking | None = None
    scores: dict[str, int] | None = None
    if not strict:  # "### Final Ranking: B > A > C": a header and its value on one line
        values = {slot: _INLINE_HEADER.sub("", line) for slot, line in values.items()}
    if "ranking" in values:
        parsed = parse_ranking(values["ranking"], labels, strict=strict)
        if isinstance(parsed, Unreadable):
            return parsed
        ranking = parsed
    if "scores" in values:
        parsed_scores = parse_scores(values["scores"], labels, strict=strict)
        if isinstance(parsed_scores, Unreadable):
            return parsed_scores
        scores = parsed_scores
        if ranking is None:
            ranking = ranking_from_scores(scores)
        else:
            reason = check_consistent(ranking, scores)
            if reason:
                return reason
    assert ranking is not None
    reason = _conflicting_line(answer, values, labels, ranking, scores)
    if reason:
        return reason
    return GQMOutput(ranking=ranking, scores=scores, reasoning=reasoning)


_INLINE_HEADER = re.compile(r"^[\s#*]*(?:final\s+)?(?:rankings?|scores?)\s*\**\s*:\s*\**\s*(?=\S)", re.I)


def _conflicting_line(
    answer: str, values: dict[str, str], labels: tuple[str, ...], ranking: Ranking, scores: dict[str, int] | None
) -> Unreadable | None:
    """Why, when a line other than the final ones states a different complete ranking or scores."""
    finals = {line.strip() for line in values.values()}
    for line in without_quotes(answer).splitlines():
        if not line.strip() or line.strip() in finals:
            continue
        other = parse_ranking(line, labels, strict=False)
        if not isinstance(other, Unreadable) and other != ranking:
            return Unreadable(f"conflicting rankings: {clip(line.strip())} and the final {format_ranking(ranking)}")
        other_scores = parse_scores(line, labels, strict=False)
        if not isinstance(other_scores, Unreadable) and scores is not None and other_scores != scores:
            return Unreadable(f"conflicting scores: {clip(line.strip())} and the final ones")
    return None


def _final_slots(prompt_type: str) -> list[str]:
    if prompt_type == "ranking":
        return ["ranking_header", "ranking"]
    if prompt_type == "score":
        return ["scores_header", "scores"]
    return ["ranking_header", "ranking", "scores_header", "scores"]


def _is_header(line: str, keyword: str) -> bool:
    text = line.strip()
    # A header names the block; it is short and holds no candidate verdict of its own.
    return keyword in text.lower() and len(text) <= 60 and not re.search(r"[A-Z]\s*[>=:]\s*[A-Z0-9]", text)
