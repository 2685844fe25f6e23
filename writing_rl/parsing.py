"""Strict readers for what policies and judges write. Pure functions: tested by tables."""

from __future__ import annotations

import re

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
    answer = judge_output
    close = answer.rfind(THINK_CLOSE)
    if close >= 0:
        answer = answer[close + len(THINK_CLOSE) :]
    elif THINK_OPEN in answer:
        return None
    matches = _VERDICT_RE.findall(answer)
    return matches[-1] if matches else None
