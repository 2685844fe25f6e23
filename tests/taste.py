"""A taste for the stand-in judge (tests/stand_in_judge.py ``--taste``): a preference a tiny policy can learn
in tens of steps, and the same preference measured directly on a text, apart from any judge.

    letter:X     more of the letter X (case-insensitive)           measure: X's in the text
    word:W       more of the word W (whole words, case-insensitive) measure: W's in the text
    length:L-H   a length within L-H words, nearer is better        measure: the text's words
    ending:S     a text that ends with S                            measure: 1 if it does, else 0

The judge can also be given ``none`` (``Indifferent``): no preference, so that a reward term alone teaches.
A leading ``-`` reverses the taste (``-letter:e``: fewer e's): the control a learning check must see move
the measure the other way.

The judge applies it the same way in every reply format: a pairwise verdict prefers the text with the higher
``value`` (equal values tie); a ranking, a score and a rubric or critic score follow ``grade`` (0-10, which
rises with ``value``). ``measure`` is what a learning check follows: the raw quantity, whichever way the taste
points.
"""

from __future__ import annotations

import re
from typing import NamedTuple

KINDS = ("letter", "word", "length", "ending")
# letter: a grade point per this many letters (10 from 40 on); word: per occurrence, 2 points.
LETTERS_PER_GRADE = 4
POINTS_PER_WORD = 2


class Taste(NamedTuple):  # (not a dataclass: verl loads a watch's file without registering it as a module)
    kind: str
    target: str
    fewer: bool = False  # reversed: the judge prefers less of it

    def measure(self, text: str) -> float:
        """The quantity the taste is about, measured on ``text`` (not reversed)."""
        if self.kind == "letter":
            return float(text.lower().count(self.target))
        if self.kind == "word":
            return float(len(re.findall(rf"(?<!\w){re.escape(self.target)}(?!\w)", text.lower())))
        if self.kind == "length":
            return float(len(text.split()))
        return float(text.rstrip().endswith(self.target))

    def value(self, text: str) -> float:
        """How much the judge likes ``text``: higher is better."""
        if self.kind == "length":
            low, high = self.band
            words = self.measure(text)
            liked = -max(low - words, words - high, 0.0)
        else:
            liked = self.measure(text)
        return -liked if self.fewer else liked

    def grade(self, text: str) -> int:
        """``value`` on a 0-10 scale, for the formats that score each text alone."""
        if self.kind == "letter":
            grade = min(10, int(self.measure(text)) // LETTERS_PER_GRADE)
        elif self.kind == "word":
            grade = min(10, POINTS_PER_WORD * int(self.measure(text)))
        elif self.kind == "length":
            low, high = self.band
            words = self.measure(text)
            grade = max(0, 10 - int(max(low - words, words - high, 0.0)))
        else:
            grade = 10 * int(self.measure(text))
        return 10 - grade if self.fewer else grade

    def text_with(self, level: int) -> str:
        """A text whose measure is ``level`` (a graded reference)."""
        if self.kind == "letter":
            return " ".join([self.target * 2] * (level // 2) + [self.target] * (level % 2))
        if self.kind == "word":
            return " ".join([self.target] * level)
        if self.kind == "length":
            return " ".join(["word"] * level)
        return f"it ends{self.target}" if level else "it does not end so"

    @property
    def band(self) -> tuple[float, float]:
        low, high = self.target.split("-")
        return float(low), float(high)

    def __str__(self) -> str:
        return f"{'-' if self.fewer else ''}{self.kind}:{self.target}"


def parse_taste(spec: str) -> Taste:
    """``letter:e``, ``-word:the``, ``length:5-15``, ``ending:.``; ValueError naming what was expected."""
    fewer = spec.startswith("-")
    kind, sep, target = spec.removeprefix("-").partition(":")
    expected = "letter:X, word:W, length:LOW-HIGH or ending:S, with a leading - to reverse it"
    if not sep or kind not in KINDS or not target:
        raise ValueError(f"taste {spec!r}: expected {expected}")
    if kind == "letter" and len(target) != 1:
        raise ValueError(f"taste {spec!r}: a letter taste takes one character, got {target!r}")
    if kind == "length":
        if not re.fullmatch(r"\d+-\d+", target) or int(target.split("-")[0]) > int(target.split("-")[1]):
            raise ValueError(f"taste {spec!r}: a length band is LOW-HIGH words (LOW <= HIGH), got {target!r}")
    target = target if kind in ("length", "ending") else target.lower()
    return Taste(kind, target, fewer)


class Indifferent:
    """The judge's taste ``none``: every text alike (pairwise ties, equal ranks and scores of 5), so that a
    run's reward comes from its reward terms alone."""

    def value(self, text: str) -> float:
        return 0.0

    def grade(self, text: str) -> int:
        return 5

    def __str__(self) -> str:
        return "none"


def judge_taste(spec: str) -> Taste | Indifferent:
    """What the stand-in judge prefers: a taste, or ``none``."""
    return Indifferent() if spec == "none" else parse_taste(spec)


def measure(data_source=None, solution_str: str = "", ground_truth=None, extra_info=None, taste: str = "") -> float:
    """The taste's measure of one response, with verl's custom_reward_function signature: a watch
    (reward.reward_kwargs.watch.taste.fn) that logs it per sample and per step, never paid."""
    return parse_taste(taste).measure(solution_str)
