"""The built-in reward terms. Each is a frozen dataclass of its settings (``weight`` first: 0 = off) with
``value(sample) -> float``; ``check(prefix)`` raises a ``ConfigError`` naming the key of a bad setting.

Each term's value, as a formula: docs/reward-terms.md. Lengths and n-grams count words and CJK characters
(``text.py``), after the reasoning block is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from writing_rl.protocols import THINK_CLOSE, strip_think
from writing_rl.protocols.languages import LANGUAGES, lang_pair_parts, language_name
from writing_rl.settings import require
from writing_rl.terms.langid import identifier, identify
from writing_rl.terms.sample import TermInput, reference_text
from writing_rl.terms.text import repeated_share, units, visible


def answer_of(sample: TermInput) -> str:
    return strip_think(sample.response) or ""


@dataclass(frozen=True)
class Overlong:
    """DAPO's soft overlong punishment: 0 up to L_max - L_cache tokens, then down to -1 at L_max."""

    # What one unit of the term's value adds to the reward; 0 = off.
    weight: float = 0.0
    # L_cache: the last this many tokens before L_max are penalised, linearly down to -1 at L_max.
    buffer: int = 1024
    # L_max; null = actor_rollout_ref.rollout.response_length.
    max_length: int | None = None

    def check(self, prefix: str) -> None:
        require(self.max_length is not None, f"{prefix}.max_length is not set and no rollout.response_length")
        require(
            0 < self.buffer < self.max_length,
            f"{prefix}.buffer must be within 1-{self.max_length - 1} (below max_length), got {self.buffer}",
        )

    def value(self, sample: TermInput) -> float:
        start = self.max_length - self.buffer
        n = sample.response_length
        return 0.0 if n <= start else (start - n) / self.buffer


@dataclass(frozen=True)
class Length:
    """Length control against the reference answer: 0 inside the ratio band, negative outside it."""

    # What one unit of the term's value adds to the reward; 0 = off.
    weight: float = 0.0
    # The band of answer length / reference length that costs nothing.
    min_ratio: float = 0.5
    max_ratio: float = 1.5
    # Units (words, CJK characters) to compare with when a row has no reference answer; null: such a row
    # is a counted failure of the term.
    target_length: int | None = None

    def check(self, prefix: str) -> None:
        require(
            0 <= self.min_ratio <= self.max_ratio and self.max_ratio > 0,
            f"{prefix}: need 0 <= min_ratio <= max_ratio and max_ratio > 0, got {self.min_ratio}, {self.max_ratio}",
        )
        require(self.target_length is None or self.target_length > 0, f"{prefix}.target_length must be > 0")

    def value(self, sample: TermInput) -> float:
        reference = reference_text(sample.ground_truth)
        if reference is not None:
            target = len(units(reference))
        elif self.target_length is not None:
            target = self.target_length
        else:
            raise ValueError("the row has no reference answer and terms.length.target_length is not set")
        if target == 0:
            raise ValueError("the row's reference answer has no words")
        ratio = len(units(answer_of(sample))) / target
        if ratio > self.max_ratio:
            return -min(1.0, (ratio - self.max_ratio) / self.max_ratio)
        if ratio < self.min_ratio:
            return -min(1.0, (self.min_ratio - ratio) / self.min_ratio)
        return 0.0


@dataclass(frozen=True)
class Repetition:
    """Minus the share of the answer's word n-grams that repeat an earlier one."""

    # What one unit of the term's value adds to the reward; 0 = off.
    weight: float = 0.0
    n: int = 3  # words per n-gram (a CJK character is a word)

    def check(self, prefix: str) -> None:
        require(self.n >= 1, f"{prefix}.n must be >= 1, got {self.n}")

    def value(self, sample: TermInput) -> float:
        return -repeated_share(units(answer_of(sample)), self.n)


# Chat-template tags a model writes as text when it imitates a turn: <|im_start|>, <|eot_id|>, [INST] ...
_TEMPLATE_TAG = re.compile(r"<\|[^|<>\s]{1,40}\|>|\[/?INST\]|</?s>|<(?:start|end)_of_turn>", re.IGNORECASE)


@dataclass(frozen=True)
class Format:
    """-1 for an empty answer, an unclosed <think> block or chat-template tags written as text; else 0."""

    # What one unit of the term's value adds to the reward; 0 = off.
    weight: float = 0.0
    # The policy is expected to think first: a response without a closed </think> is malformed.
    think: bool = False

    def check(self, prefix: str) -> None:
        pass

    def value(self, sample: TermInput) -> float:
        text = visible(sample.response)
        if strip_think(text) is None:  # empty, blank, or a <think> never closed
            return -1.0
        if self.think and THINK_CLOSE not in text:
            return -1.0
        return -1.0 if _TEMPLATE_TAG.search(text) else 0.0


_CODES = {name.lower(): code for code, name in LANGUAGES.items()}


@dataclass(frozen=True)
class Language:
    """-1 when the answer is not in the expected language (a translation row's target, else the prompt's)."""

    # What one unit of the term's value adds to the reward; 0 = off.
    weight: float = 0.0
    # Answers with fewer visible characters than this are not identified (too short to tell): 0.
    min_chars: int = 20
    # ISO 639-1 codes the identifier chooses among (all of py3langid's 97 when empty): fewer is more accurate.
    languages: list = field(default_factory=list)

    def check(self, prefix: str) -> None:
        require(self.min_chars >= 1, f"{prefix}.min_chars must be >= 1")
        require(all(isinstance(c, str) and c for c in self.languages), f"{prefix}.languages must be codes like 'en'")
        identifier(tuple(self.languages), prefix)  # unknown codes fail at start

    def value(self, sample: TermInput) -> float:
        answer = visible(answer_of(sample))
        if len("".join(answer.split())) < self.min_chars:
            return 0.0
        expected = expected_language(sample)
        if expected is None:
            prompt = visible(sample.prompt)
            if len("".join(prompt.split())) < self.min_chars:
                return 0.0  # too short to tell the prompt's language
            expected = identify(prompt, tuple(self.languages))
        elif self.languages and expected not in self.languages:
            raise ValueError(f"the row's target language {expected!r} is not in terms.language.languages")
        return 0.0 if identify(answer, tuple(self.languages)) == expected else -1.0


def expected_language(sample: TermInput) -> str | None:
    """A translation row's target language as an ISO 639-1 code (``trg_lang`` or ``lang_pair`` in
    extra_info or the ground truth); None for other rows."""
    for source in (sample.extra_info, sample.ground_truth):
        if not isinstance(source, dict):
            continue
        target: Any = source.get("trg_lang")
        if not target and source.get("lang_pair"):
            target = lang_pair_parts(source["lang_pair"])[1]
        if target:
            name = language_name(str(target))
            code = _CODES.get(str(name).lower())
            if code is None:
                raise ValueError(f"target language {target!r} has no ISO 639-1 code the identifier knows")
            return code
    return None


BUILTIN = {"overlong": Overlong, "length": Length, "repetition": Repetition, "format": Format, "language": Language}
