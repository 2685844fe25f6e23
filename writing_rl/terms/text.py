"""The text units the length and repetition terms count: words, and each CJK character as one unit.

Units keep the terms honest (docs/reward-terms.md): padding buys no length and dilutes no repetition, invisible
format characters are dropped before counting (they cannot split a repeated word into "new" ones), full-width
and compatibility forms fold to their plain letters (NFKC), and case is ignored.
"""

from __future__ import annotations

import re
import unicodedata

# Han (with extensions A and compatibility ideographs), Hiragana, Katakana and Hangul syllables.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_UNIT = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


# Blank letters (Hangul fillers) read as spaces; invisible marks (the grapheme joiner, variation selectors)
# are dropped like format characters.
_BLANK_LETTERS = re.compile("[\u115f\u1160\u3164\uffa0]")
_INVISIBLE_MARKS = re.compile("[\u034f\u17b4\u17b5\u180b-\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")


def visible(text: str) -> str:
    """``text`` in NFKC form without default-ignorable characters: format characters (zero-width spaces and
    joiners, bidi marks) and invisible marks are dropped, blank letters become spaces."""
    text = _BLANK_LETTERS.sub(" ", unicodedata.normalize("NFKC", text))
    text = _INVISIBLE_MARKS.sub("", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def units(text: str) -> list[str]:
    """The words of ``text`` (case-folded), with each CJK character a word of its own."""
    return _UNIT.findall(visible(text).casefold())


def repeated_share(tokens: list[str], n: int) -> float:
    """The share of ``tokens``' word n-grams that repeat an earlier one (0 when there are none)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    if not grams:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)
