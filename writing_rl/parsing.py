"""Strict readers for what policies and judges write. Pure functions: tested by tables."""

from __future__ import annotations

import re

from .gqm import parse_scores

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

# MT-Bench / Writing-RL convention: [[A]] first response better, [[B]] second better, [[C]] tie.
VERDICTS = ("A", "B", "C")
_VERDICT_RE = re.compile(r"\[\[([ABC])\]\]")


def strip_think(text: str) -> str | None:
    """The answer part of a policy response, or None when it has none.

    A closed reasoning block is dropped: everything up to the last ``</think>`` (the opening tag may
    sit in the prompt, as with Qwen3's template). A ``<think>`` that is never closed means the model
    ran out of tokens while reasoning: no answer. An answer that is empty or blank is no answer either.
    """
    close = text.rfind(THINK_CLOSE)
    if close >= 0:
        text = text[close + len(THINK_CLOSE) :]
    elif THINK_OPEN in text:
        return None
    text = text.strip()
    return text or None


def parse_verdict(judge_output: str) -> str | None:
    """The judge's final verdict, ``"A"``, ``"B"`` or ``"C"``; None when there is none.

    The verdict is the *last* verdict token, read after the judge's own closed ``<think>`` block if it
    wrote one (a verdict it considered while thinking is not its answer). A judge output whose reasoning
    block is never closed has no verdict.
    """
    answer = _judge_answer(judge_output)
    matches = _VERDICT_RE.findall(answer) if answer is not None else []
    return matches[-1] if matches else None


_SCORES_LABEL = re.compile(r"^\s*(?:final\s+)?scores?\s*:\s*", re.I)


def parse_score_pair(judge_output: str) -> tuple[int, int] | None:
    """The judge's final scores of Response A and Response B, ``(a, b)``; None when there are none.

    They are the last non-empty line of the answer (after the judge's closed ``<think>`` block; a
    closing code fence does not count as a line), both labels once, in either order, integers 0-10:
    ``A: 7, B: 4``. Markdown emphasis and a leading ``Scores:`` / ``Final scores:`` are ignored.
    """
    answer = _judge_answer(judge_output)
    lines = [line for line in (answer or "").splitlines() if line.strip() and not line.strip().startswith("```")]
    if not lines:
        return None
    line = _SCORES_LABEL.sub("", re.sub(r"[*_`]", "", lines[-1]))
    scores = parse_scores(line, ("A", "B"), strict=False)
    return None if isinstance(scores, str) else (scores["A"], scores["B"])


def _judge_answer(judge_output: str) -> str | None:
    """The judge output after its closed reasoning block; None when the block is never closed."""
    close = judge_output.rfind(THINK_CLOSE)
    if close >= 0:
        return judge_output[close + len(THINK_CLOSE) :]
    return None if THINK_OPEN in judge_output else judge_output
