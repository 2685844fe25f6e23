"""Degraded copies of a real answer, each worse than it by a rule rather than by a judge's opinion.

A GenRM that learns from another judge's labels learns that judge's taste and blind spots; here the label comes
from how the copy was made: a model's own answer beats the same answer damaged in a known way. Each damage
(``SEVERITY``, mildest first) returns the copy, or None when it does not apply or would change nothing.
``degraded_copies`` seeds each one's generator with the seed, its name and the text, so reruns give the same
copies and adding a damage does not change the others' draws. Pure: no model, no I/O. Where the copies go:
docs/genrm/training.md#real-text-with-labels-no-judge-gave.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Sequence

ORIGINAL = "original"

# Mildest damage first. The order is how much of what the answer gives a reader each damage takes away:
# a repeated sentence only adds redundancy (every word of the answer is still there, in order); a shuffle
# keeps all the content but breaks the thread from one sentence to the next; a cut loses most of the content
# and stops mid-sentence; a swap keeps nothing that answers the prompt. It is the rule, not a measured
# preference: a pair (original, copy) and a group ranked by it are labelled by construction.
SEVERITY = ("repeated", "shuffled", "cut", "swapped")

# GQM scores (integers 0-10) for a ranked group: strictly decreasing along the severity order.
RANK_SCORES = {ORIGINAL: 9, "repeated": 7, "shuffled": 5, "cut": 3, "swapped": 1}

# A critique naming the damage and where it is, for SFT rows whose reply reasons before the verdict; the
# damage comes first and the response last, so the reply names what is wrong before it must say where.
CRITIQUES = {
    "repeated": "A sentence is said twice in Response {slot}.",
    "shuffled": "The sentences are out of order in Response {slot}.",
    "cut": "The text is cut short in Response {slot}.",
    "swapped": "An answer to a different request is in Response {slot}.",
}

CUT_FRACTION = 0.4  # share of the words a cut copy keeps
MIN_SHUFFLED_SENTENCES = 3  # with 2 sentences a "shuffle" is a swap of the two, which can still read well
_SHUFFLE_TRIES = 50  # draws before deciding that no order reads differently (all sentences alike)

# Where one sentence ends and the next begins: white space after . ! ? (alone or before a closing quote or
# bracket, and not after a digit, so "1. Preheat" stays whole), or a line break (poems, lists) with the white
# space around it (tried first, so "end. \nNext" is one gap, not two around an empty sentence).
_SENTENCE_GAP = re.compile(r"\s*\n\s*|(?:(?<=[^\d\s][.!?])|(?<=[.!?][\"'\u201d\u2019)\]]))[ \t]+")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Sentences:
    """A text as its sentences and the gaps after them: ``gaps[i]`` follows ``sentences[i]`` (the last gap is
    empty). Reordering the sentences while the gaps stay in place keeps the text's line layout."""

    sentences: list[str]
    gaps: list[str]

    def text(self, order: Sequence[int] | None = None) -> str:
        order = range(len(self.sentences)) if order is None else order
        return "".join(self.sentences[i] + gap for i, gap in zip(order, self.gaps))


def split_sentences(text: str) -> Sentences:
    """The stripped text's sentences and the white space between them (an empty text has none)."""
    stripped = text.strip()
    if not stripped:
        return Sentences([], [])
    sentences, gaps, start = [], [], 0
    for gap in _SENTENCE_GAP.finditer(stripped):
        sentences.append(stripped[start : gap.start()])
        gaps.append(gap.group())
        start = gap.end()
    sentences.append(stripped[start:])
    gaps.append("")
    return Sentences(sentences, gaps)


def sentence_count(text: str) -> int:
    return len(split_sentences(text).sentences)


def _changed(copy: str, text: str) -> str | None:
    """``copy``, or None when it reads the same as ``text``."""
    return copy if copy.strip() != text.strip() else None


def repeated(text: str, rng: random.Random) -> str | None:
    """A random sentence followed by itself; a one-sentence text doubled. None for an empty text."""
    parts = split_sentences(text)
    n = len(parts.sentences)
    if n == 0:
        return None
    i = rng.randrange(n)
    between = parts.gaps[i] or (parts.gaps[i - 1] if i else " ")  # after the last sentence: the gap before it
    sentences = parts.sentences[: i + 1] + parts.sentences[i:]
    gaps = parts.gaps[:i] + [between] + parts.gaps[i:]
    return _changed(Sentences(sentences, gaps).text(), text)


def shuffled(text: str, rng: random.Random) -> str | None:
    """The sentences in a random order that reads differently; None under 3 sentences or when every order
    reads the same (identical sentences)."""
    parts = split_sentences(text)
    n = len(parts.sentences)
    if n < MIN_SHUFFLED_SENTENCES or len(set(parts.sentences)) == 1:
        return None
    order = list(range(n))
    for _ in range(_SHUFFLE_TRIES):
        rng.shuffle(order)
        if [parts.sentences[i] for i in order] != parts.sentences:
            return _changed(parts.text(order), text)
    return None


def cut(text: str, fraction: float = CUT_FRACTION) -> str | None:
    """The text up to the end of its first ``fraction`` of words (at least one word), layout kept; None when
    that is the whole text. No draw: the same text is always cut at the same word."""
    words = list(_WORD.finditer(text.strip()))
    keep = max(1, math.floor(fraction * len(words)))
    if keep >= len(words):
        return None
    return _changed(text.strip()[: words[keep - 1].end()], text)


def swapped(text: str, rng: random.Random, others: Sequence[str] = ()) -> str | None:
    """One of ``others`` (answers to other prompts) at random; None when none differs from ``text``."""
    candidates = sorted({o for o in others if o.strip() and o.strip() != text.strip()})
    return rng.choice(candidates) if candidates else None


def critique(name: str, slot: str) -> str:
    """The critique of a pair whose ``name`` copy sits in ``slot`` (A or B): what the rule did, and where."""
    if name not in CRITIQUES or slot not in ("A", "B"):
        raise ValueError(f"critique: expected a damage of {SEVERITY} and slot A or B, got {name!r}, {slot!r}")
    return CRITIQUES[name].format(slot=slot)


def _rng(seed: int, name: str, text: str) -> random.Random:
    return random.Random(f"{seed}\x00{name}\x00{text}")  # str seeds hash the same in every process


def degraded_copies(text: str, others: Sequence[str] = (), seed: int = 0) -> dict[str, str]:
    """Every damage that applies to ``text``, by name, mildest first; ``others``: answers to other prompts
    (for ``swapped``). Copies that read the same as one already made are left out, so the copies differ from
    the original and from each other."""
    made = {
        "repeated": repeated(text, _rng(seed, "repeated", text)),
        "shuffled": shuffled(text, _rng(seed, "shuffled", text)),
        "cut": cut(text),
        "swapped": swapped(text, _rng(seed, "swapped", text), others),
    }
    copies: dict[str, str] = {}
    seen = {text.strip()}
    for name in SEVERITY:
        copy = made[name]
        if copy is not None and copy.strip() not in seen:
            copies[name] = copy
            seen.add(copy.strip())
    return copies


# What a finished sentence may end with: . ! ? or an ellipsis, alone or before closing quotes and brackets.
_FINISHED = re.compile(r"(?:[.!?\u2026]|\.\.\.)[\"'\u201d\u2019)\]]*$")


def damage(text: str) -> float:
    """The marks of the damages a text shows on its own, 0.0 for none: the share of its sentences that repeat an
    earlier one word for word (``repeated``) plus 1 when its last sentence is unfinished (``cut``). A shuffled or
    swapped copy is told apart only beside its original, so neither is counted. The measure the pairs were
    labelled by, for a policy trained against a GenRM learned from them: it never asks a judge."""
    sentences = [s.strip() for s in split_sentences(text).sentences]
    if not sentences:
        return 1.0  # nothing written: as bad as a text cut before it began
    repeats = sum(s in sentences[:i] for i, s in enumerate(sentences))
    return repeats / len(sentences) + float(not _FINISHED.search(sentences[-1]))


def damage_watch(data_source=None, solution_str: str = "", ground_truth=None, extra_info=None, **_) -> float:
    """``damage`` with verl's custom_reward_function signature: a watch (``reward.reward_kwargs.watch.damage.fn =
    {path: pkg://writing_rl.data.degrade, name: damage_watch}``), logged per sample and step, never paid."""
    return damage(solution_str)
