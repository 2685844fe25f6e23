"""Judge prompt templates: pairwise, asking for reasoning first and a final verdict ``[[A]]``, ``[[B]]`` or
``[[C]]`` (tie), the convention of MT-Bench and Writing-RL, so judge models trained on it work unchanged.

The placeholders, filled in one pass, and how a response goes in (``writing_rl.protocols.quoting``):
docs/judges/prompts.md.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from writing_rl.protocols.quoting import fence, plain_text

PAIRWISE_SYSTEM = "You are a careful, impartial judge of writing quality."

_PAIRWISE_TASK = """\
Two assistants answered the same writing request. Decide which answer is better.

[Request]
{prompt}

[Response A]
{response_a}

[Response B]
{response_b}
"""

_WEIGH = """
Weigh how well each response carries out the request: fidelity to what was asked, substance and \
insight, structure and coherence, and the quality of the prose. Length is not a merit in itself, and \
the order in which the responses appear says nothing about their quality.
"""

_CRITERIA_WEIGH = """
[Evaluation criteria]
{criteria}

Judge the two responses against these criteria first, then against the overall quality of the writing. \
Length is not a merit in itself, and the order in which the responses appear says nothing about their \
quality.
"""

_END_WITH_VERDICT = """
Reason step by step, {how}comparing the two responses. Then end with a line holding only your verdict: \
[[A]] if Response A is better, [[B]] if Response B is better, [[C]] if they are equally good.
"""

_END_WITH_SCORES = """
Reason step by step, {how}comparing the two responses. Then rate each response with a whole number \
from 0 (worst) to 10 (best) and end with a line holding only the two scores, as in: A: 7, B: 4
"""

Messages = list[dict[str, str]]  # a chat: what is sent to a judge


def _ending(text: str, criteria: bool) -> str:
    return text.replace("{how}", "criterion by criterion, " if criteria else "")


PAIRWISE_TEMPLATE = _PAIRWISE_TASK + _WEIGH + _ending(_END_WITH_VERDICT, False)
PAIRWISE_CRITERIA_TEMPLATE = _PAIRWISE_TASK + _CRITERIA_WEIGH + _ending(_END_WITH_VERDICT, True)
# Score-pair variants (``writing-rl select --margin score-gap``): the last line is ``A: <0-10>, B: <0-10>``.
PAIRWISE_SCORES_TEMPLATE = _PAIRWISE_TASK + _WEIGH + _ending(_END_WITH_SCORES, False)
PAIRWISE_CRITERIA_SCORES_TEMPLATE = _PAIRWISE_TASK + _CRITERIA_WEIGH + _ending(_END_WITH_SCORES, True)

_PLACEHOLDER = re.compile(r"\{(prompt|response_a|response_b|response_a_text|response_b_text|criteria)\}")


def render(template: str, **values: str) -> str:
    """Fill the placeholders of ``template`` in a single pass."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), template)


def response_values(response_a: str, response_b: str) -> dict[str, str]:
    """The placeholder values of the two responses: fenced (``{response_a}``) and unfenced (``_text``)."""
    a, b = plain_text(response_a), plain_text(response_b)
    return {"response_a": fence(a), "response_b": fence(b), "response_a_text": a, "response_b_text": b}


_SHOWN = re.compile(
    r"\[Request\]\n(?P<prompt>.*?)\n\n"
    r"\[Response A\]\n(?P<fa>`{3,})\n(?P<a>.*?)\n(?P=fa)\n\n"
    r"\[Response B\]\n(?P<fb>`{3,})\n(?P<b>.*?)\n(?P=fb)\n",
    re.S,
)


def read_pairwise_request(user_message: str) -> tuple[str, str, str] | None:
    """(request, response A, response B) as the built-in pairwise prompt shows them; None for another
    layout. Used to show what the judge saw (quickstart report) and by judge doubles in tests."""
    match = _SHOWN.search(user_message)
    return (match["prompt"], match["a"], match["b"]) if match else None


_CRITERION_TEXT = ("criteria_description", "description")
_CRITERIA_SHAPES = "a string, a list of strings, or a list of {name, criteria_description, score bands} entries"


def format_criteria(criteria: str | Mapping | Iterable[str | Mapping] | None) -> str | None:
    """Criteria as the judge reads them; None when there are none.

    A string is used as it is, unless it is JSON text holding a list or an object (a CSV cell): then that
    is rendered. A list gives one bullet per item; an item may be a WritingBench checklist entry,
    ``{"name", "criteria_description" (or "description"), "1-2": ..., "3-4": ...}``: its name and
    description on the bullet, its score bands as a list indented below. A malformed item raises
    ``ValueError`` naming it and saying what was expected.
    """
    if criteria is None:
        return None
    if isinstance(criteria, str):
        parsed = _json_criteria(criteria)
        if parsed is None:
            return criteria.strip() or None
        criteria = parsed
    if isinstance(criteria, Mapping):
        criteria = [criteria]
    if isinstance(criteria, (str, bytes)) or not isinstance(criteria, Iterable):
        raise ValueError(f"expected {_CRITERIA_SHAPES}, got {type(criteria).__name__}")
    lines = []
    for number, item in enumerate(criteria):
        lines += _criterion_lines(item, number)
    return "\n".join(lines) or None


def _json_criteria(text: str) -> list | dict | None:
    """The list or object a JSON criteria text holds; None for plain text."""
    if text.lstrip()[:1] not in ("[", "{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None  # plain text that starts with a bracket
    return value if isinstance(value, (list, dict)) else None


def _criterion_lines(item: object, number: int) -> list[str]:
    if isinstance(item, str):
        return [f"- {item.strip()}"] if item.strip() else []
    if not isinstance(item, Mapping):
        raise ValueError(
            f"item {number}: expected a string or a {{name, criteria_description}} entry, "
            f"got {type(item).__name__} {_short(item)}"
        )
    name = item.get("name")
    description = next((item[k] for k in _CRITERION_TEXT if item.get(k) is not None), None)
    if not _filled(name) or not _filled(description):
        raise ValueError(
            f"item {number}: expected a WritingBench checklist entry with a non-empty string 'name' and "
            f"'criteria_description' (or 'description'), got keys {sorted(map(str, item))}"
        )
    lines = [f"- {name.strip()}: {description.strip()}"]
    for band, text in item.items():
        if band in ("name", *_CRITERION_TEXT) or text is None:  # None: a band absent from this entry
            continue
        if not isinstance(text, str):
            raise ValueError(
                f"item {number} ('{name.strip()}'): score band '{band}' must be a string, "
                f"got {type(text).__name__} {_short(text)}"
            )
        lines.append(f"    - {band}: {text.strip()}")
    return lines


def _filled(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


@lru_cache(maxsize=16)
def load_template(path: str) -> str:
    text = Path(path).read_text(encoding="utf-8")
    for slot in ("a", "b"):
        if f"{{response_{slot}}}" not in text and f"{{response_{slot}_text}}" not in text:
            raise ValueError(
                f"judge template {path} must contain the placeholder {{response_{slot}}} (or {{response_{slot}_text}})"
            )
    return text


def pairwise_messages(
    prompt: str,
    response_a: str,
    response_b: str,
    criteria: str | None = None,
    template: str | None = None,
    system: str | None = PAIRWISE_SYSTEM,
    output: str = "verdict",
) -> Messages:
    """Chat messages asking the judge to compare A and B. ``template`` is a file path; None = built-in,
    ending with a verdict (``output="verdict"``) or a score pair (``output="scores"``)."""
    if template:
        body = load_template(template)
    elif output == "verdict":
        body = PAIRWISE_CRITERIA_TEMPLATE if criteria else PAIRWISE_TEMPLATE
    elif output == "scores":
        body = PAIRWISE_CRITERIA_SCORES_TEMPLATE if criteria else PAIRWISE_SCORES_TEMPLATE
    else:
        raise ValueError(f"output must be 'verdict' or 'scores', got {output!r}")
    user = render(body, prompt=prompt, criteria=criteria or "", **response_values(response_a, response_b))
    messages: Messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": user})
    return messages
