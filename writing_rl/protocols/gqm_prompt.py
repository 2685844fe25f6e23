"""The GQM request, the user message a GenRM answers under the group protocol (writing_rl/protocols/gqm.py):
the task, a group of candidates, and instructions for the final block of the prompt type.

``build_prompt`` renders one request; ``GroupPrompter`` renders many orders and subsets of one group
(position shuffling, augmentation) from pieces prepared once, also as UTF-8 for dataset writers. A
``template`` replaces the built-in layout; its placeholders are ``TEMPLATE_FIELDS``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, AnyStr, Iterable, Sequence

from writing_rl.protocols.gqm import (
    LABELS,
    MAX_SCORE,
    MIN_SCORE,
    PROMPT_TYPES,
    RANKING_HEADER,
    SCORES_HEADER,
    _check_choice,
    format_ranking,
    format_scores,
    labels_for,
    ranking_from_scores,
)
from writing_rl.protocols.languages import resolve_languages
from writing_rl.protocols.quoting import fence, plain_text

_SOURCE_HEADING = {"mt": "Source text:", "writing": "Writing request:"}
CANDIDATE_NOUN = {"mt": "Translation", "writing": "Response"}

DEFAULT_TEMPLATE = "{intro}\n\n{source_heading}\n{source}\n\n{candidates}\n\n{instructions}\n"
TEMPLATE_FIELDS = (
    "intro", "source_heading", "source", "candidates", "instructions",
    "n", "first_label", "last_label", "src_lang", "trg_lang",
)  # fmt: skip
_EXAMPLE_SCORES = (7, 9, 4, 7, 2, 8, 5, 3, 6, 1)


def build_prompt(candidates: Sequence[str], **task: Any) -> str:
    """The GQM request for a group of candidates (the user message); ``task``: ``GroupPrompter``'s keyword
    arguments."""
    prompter = GroupPrompter(candidates, **task)
    return prompter.render([prompter.block(i, i) for i in range(len(candidates))])


class GroupPrompter:
    """``build_prompt`` for many orderings and subsets of one group's candidates (what augmentation and
    position shuffling need): the task and each candidate's fenced text are prepared once.

    Give ``source_text`` (machine translation; languages as codes or names, or ``lang_pair``) or
    ``writing_prompt`` (general writing). ``cot=False`` asks for the final lines only. ``template``
    replaces the layout: a text with ``{placeholders}`` among ``TEMPLATE_FIELDS``, filled in one pass
    (text inside candidates that looks like a placeholder is left alone). ``separator`` goes between
    candidate blocks (``Translation A:`` and the fenced text); with a template these two reproduce a
    published layout exactly (docs/judges/prompts.md). ``special_tokens`` (the GenRM tokenizer's) are broken
    up in the candidates besides the usual template tags (writing_rl/protocols/quoting.py).

    ``prompter.prompt(order)`` is ``build_prompt([candidates[i] for i in order], ...)``;
    ``prompter.prompts_utf8(orders)`` gives many of them encoded as UTF-8, for writers that store bytes."""

    def __init__(
        self,
        candidates: Sequence[str],
        *,
        source_text: str | None = None,
        writing_prompt: str | None = None,
        src_lang: str | None = None,
        trg_lang: str | None = None,
        lang_pair: str | None = None,
        prompt_type: str = "ranking_score",
        cot: bool = True,
        template: str | None = None,
        separator: str = "\n\n",
        special_tokens: tuple[str, ...] = (),
    ):
        _check_choice("prompt_type", prompt_type, PROMPT_TYPES)
        if (source_text is None) == (writing_prompt is None):
            raise ValueError("give exactly one of source_text (translation) or writing_prompt (writing)")
        self.kind = "mt" if source_text is not None else "writing"
        task_text = source_text if source_text is not None else writing_prompt
        if not isinstance(task_text, str) or not task_text.strip():
            what = "source text" if self.kind == "mt" else "writing prompt"
            raise ValueError(f"the {what} must be a non-empty string")
        labels_for(len(candidates))
        for i, candidate in enumerate(candidates):
            if not isinstance(candidate, str):
                raise ValueError(f"candidate {i} must be a string, got {type(candidate).__name__}")
        languages = resolve_languages(src_lang, trg_lang, lang_pair) if self.kind == "mt" else (None, None)
        self._shape = (template or DEFAULT_TEMPLATE, self.kind, *languages, prompt_type, cot)
        self._separator = separator
        self._source = fence(task_text)
        self._noun = CANDIDATE_NOUN[self.kind]
        self._fenced = [fence(plain_text(text, special_tokens)) for text in candidates]
        # Built on first use: [position][candidate] blocks, and per shown count the template text around
        # the candidates (source filled in), as str and as UTF-8.
        self._table: list[list[str]] | None = None
        self._table_utf8: list[list[bytes]] | None = None
        self._around: dict[int, list[str]] = {}
        self._around_utf8: dict[int, list[bytes]] = {}
        self._source_utf8: bytes | None = None

    def block(self, position: int, index: int) -> str:
        """Candidate ``index`` shown at ``position``: its label line and fenced text."""
        return f"{self._noun} {LABELS[position]}:\n{self._fenced[index]}"

    def prompt(self, order: Sequence[int]) -> str:
        """The request showing candidates ``order[0]``, ``order[1]``, ... as A, B, ..."""
        table = self._table or self._blocks()
        around = self._around.get(len(order)) or self._text_around(len(order))
        return self._separator.join(map(list.__getitem__, table, order)).join(around)

    def prompts_utf8(self, orders: Iterable[Sequence[int]]) -> list[bytes]:
        """``[prompt(order).encode() for order in orders]``, joined from pieces encoded once per group."""
        table = self._table_utf8
        if table is None:
            fenced = [text.encode() for text in self._fenced]
            heads = _label_lines_utf8(self._noun)[: len(fenced)]
            table = self._table_utf8 = [[head + text for text in fenced] for head in heads]
        arounds, join, pick = self._around_utf8, self._separator.encode().join, list.__getitem__
        prompts = []
        for order in orders:
            around = arounds.get(len(order)) or self._bytes_around(len(order))
            prompts.append(join(map(pick, table, order)).join(around))
        return prompts

    def render(self, blocks: list[str]) -> str:
        """The request around already-built candidate blocks (``block``), in the order shown."""
        return self._separator.join(blocks).join(self._text_around(len(blocks)))

    def _blocks(self) -> list[list[str]]:
        n = len(self._fenced)
        self._table = [[self.block(p, i) for i in range(n)] for p in range(n)]
        return self._table

    def _text_around(self, n: int) -> list[str]:
        """The filled template split where the candidates go: joining the candidate blocks with it
        (``blocks.join(around)``) gives the prompt in one call."""
        around = self._around.get(n)
        if around is None:
            around = self._around[n] = list(map(self._source.join, _layout(self._shape, n, False)))
        return around

    def _bytes_around(self, n: int) -> list[bytes]:
        """``_text_around`` as UTF-8, from template pieces encoded once per group shape."""
        if self._source_utf8 is None:
            self._source_utf8 = self._source.encode()
        around = self._around_utf8[n] = list(map(self._source_utf8.join, _layout(self._shape, n, True)))
        return around


@lru_cache(maxsize=64)
def _label_lines_utf8(noun: str) -> tuple[bytes, ...]:
    """``b"Translation A:\\n"``, ``b"Translation B:\\n"``, ...: the line above each candidate's block."""
    return tuple(f"{noun} {label}:\n".encode() for label in LABELS)


def build_messages(candidates: Sequence[str], *, system: str | None = None, **prompt_args) -> list[dict[str, str]]:
    """Chat messages for the GenRM: an optional system message, then the ``build_prompt`` request."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": build_prompt(candidates, **prompt_args)})
    return messages


@lru_cache(maxsize=256)
def instructions(prompt_type: str, n: int, cot: bool = True) -> str:
    """What the request asks the GenRM to end with, for ``n`` candidates."""
    _check_choice("prompt_type", prompt_type, PROMPT_TYPES)
    labels = labels_for(n)
    example = {label: _EXAMPLE_SCORES[i % len(_EXAMPLE_SCORES)] for i, label in enumerate(labels)}
    ranking_line = (
        f"a line that ranks all {n} candidates from best to worst: ' > ' separates quality levels, ' = ' "
        "joins equally good candidates, and each candidate appears exactly once "
        f"(format example: `{format_ranking(ranking_from_scores(example))}`)"
    )
    scores_line = f"a line that gives each candidate an integer score from {MIN_SCORE} (worst) to {MAX_SCORE} (best)"
    label_order = f"{scores_line} (format example: `{format_scores(example, labels)}`)"
    rank_order = (
        f"{scores_line}, listed in ranking order and consistent with the ranking "
        f"(format example: `{format_scores(example)}`)"
    )
    if not cot:
        ask = {"ranking": ranking_line, "score": label_order}.get(prompt_type)
        if ask:
            return f"Do not write an analysis: answer with only {ask}."
        return f"Do not write an analysis: answer with only two lines, first {ranking_line}, then {rank_order}."
    if prompt_type == "ranking":
        return f"After your analysis, write the line `{RANKING_HEADER}` and end with {ranking_line}."
    if prompt_type == "score":
        return f"After your analysis, write the line `{SCORES_HEADER}` and end with {label_order}."
    return (
        f"After your analysis, write the line `{RANKING_HEADER}` followed by {ranking_line}. Then write the "
        f"line `{SCORES_HEADER}` and end with {rank_order}."
    )


def _intro(kind: str, labels: tuple[str, ...], source: str | None, target: str | None) -> str:
    group = f"{len(labels)} candidate"
    span = f"labelled {labels[0]} {'and' if len(labels) == 2 else 'to'} {labels[-1]}"
    if kind == "mt":
        return (
            f"Compare {group} translations of the same source text{_direction(source, target)}, {span}. "
            "Work through the candidates step by step: weigh how accurately and completely each one "
            f"carries the meaning of the source, how natural and fluent it reads in {target or 'the target language'}, "
            "and how it compares with the others. Only then give your verdict."
        )
    return (
        f"Compare {group} responses to the same writing request, {span}. Work through the candidates step "
        "by step: weigh how well each one fulfils the request, the substance and originality of its "
        "content, its structure and the quality of its prose, and how it compares with the others. Length "
        "is not a merit in itself, and the order of the candidates says nothing about their quality. Only "
        "then give your verdict."
    )


def _direction(source: str | None, target: str | None) -> str:
    if source and target:
        return f" from {source} into {target}"
    if target:
        return f" into {target}"
    if source:
        return f" from {source}"
    return ""


_PLACEHOLDER = re.compile(r"\{(" + "|".join(TEMPLATE_FIELDS) + r")\}")


@lru_cache(maxsize=1024)
def _frame(
    template: str, kind: str, n: int, source: str | None, target: str | None, prompt_type: str, cot: bool
) -> tuple[str | int, ...]:
    """The template with every placeholder filled but ``{source}`` and ``{candidates}``: literal pieces,
    and 0 / 1 where the source / candidates go. One per group shape (``_layout`` splits it for joins)."""
    labels = labels_for(n)
    values = {
        "intro": _intro(kind, labels, source, target),
        "source_heading": _SOURCE_HEADING[kind],
        "instructions": instructions(prompt_type, n, cot),
        "n": str(n),
        "first_label": labels[0],
        "last_label": labels[-1],
        "src_lang": source or "the source language",
        "trg_lang": target or "the target language",
    }
    slots = {"\0source": 0, "\0candidates": 1}
    frame: list[str | int] = []
    for part in _compile(template):
        if part in slots:
            frame.append(slots[part])
            continue
        text = values[part[1:]] if part[:1] == "\0" else part
        if frame and isinstance(frame[-1], str):
            frame[-1] += text
        else:
            frame.append(text)
    return tuple(frame)


@lru_cache(maxsize=1024)
def _layout(shape: tuple, n: int, utf8: bool) -> tuple[tuple[AnyStr, ...], ...]:
    """``_frame`` for ``n`` candidates as the literal pieces between source slots, one tuple per stretch
    between candidate slots: ``source.join(stretch)`` for each stretch is the text around the candidates."""
    template, kind, source, target, prompt_type, cot = shape
    stretches: list[tuple] = []
    pieces = [""]
    for part in _frame(template, kind, n, source, target, prompt_type, cot) + (1,):
        if part == 1:  # candidates: close this stretch
            stretches.append(tuple(piece.encode() if utf8 else piece for piece in pieces))
            pieces = [""]
        elif part == 0:  # source: a join point
            pieces.append("")
        else:
            pieces[-1] += part
    return tuple(stretches)


@lru_cache(maxsize=16)
def _compile(template: str) -> tuple[str, ...]:
    """Literal pieces and placeholders (marked by a leading NUL) of a template, parsed once."""
    parts: list[str] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(template[position : match.start()])
        parts.append("\0" + match.group(1))
        position = match.end()
    parts.append(template[position:])
    if "\0candidates" not in parts:
        raise ValueError("a GQM template must contain the {candidates} placeholder")
    return tuple(p for p in parts if p)
