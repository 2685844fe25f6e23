"""Judge prompt templates.

Pairwise templates ask for reasoning first and a final verdict ``[[A]]``, ``[[B]]`` or ``[[C]]`` (tie),
the convention of MT-Bench and Writing-RL, so judge models trained on it work unchanged.
Placeholders: ``{prompt}``, ``{response_a}``, ``{response_b}``, ``{criteria}``. They are filled in one
pass, so text inside a response that looks like a placeholder is left alone.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from .judge import Messages

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

_PAIRWISE_ASK = """
Weigh how well each response carries out the request: fidelity to what was asked, substance and \
insight, structure and coherence, and the quality of the prose. Length is not a merit in itself, and \
the order in which the responses appear says nothing about their quality.

Reason step by step, comparing the two responses. Then end with a line holding only your verdict: \
[[A]] if Response A is better, [[B]] if Response B is better, [[C]] if they are equally good.
"""

_CRITERIA_ASK = """
[Evaluation criteria]
{criteria}

Judge the two responses against these criteria first, then against the overall quality of the writing. \
Length is not a merit in itself, and the order in which the responses appear says nothing about their \
quality.

Reason step by step, criterion by criterion, comparing the two responses. Then end with a line holding \
only your verdict: [[A]] if Response A is better, [[B]] if Response B is better, [[C]] if they are \
equally good.
"""

PAIRWISE_TEMPLATE = _PAIRWISE_TASK + _PAIRWISE_ASK
PAIRWISE_CRITERIA_TEMPLATE = _PAIRWISE_TASK + _CRITERIA_ASK

_PLACEHOLDER = re.compile(r"\{(prompt|response_a|response_b|criteria)\}")


def render(template: str, **values: str) -> str:
    """Fill the placeholders of ``template`` in a single pass."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), template)


def format_criteria(criteria: str | Iterable[str] | None) -> str | None:
    """Criteria as text: a string as is, a list as one bullet per item; None when there are none."""
    if criteria is None:
        return None
    if isinstance(criteria, str):
        return criteria.strip() or None
    items = [str(c).strip() for c in criteria if str(c).strip()]
    return "\n".join(f"- {c}" for c in items) or None


@lru_cache(maxsize=16)
def load_template(path: str) -> str:
    text = Path(path).read_text(encoding="utf-8")
    if "{response_a}" not in text or "{response_b}" not in text:
        raise ValueError(f"judge template {path} must contain the placeholders {{response_a}} and {{response_b}}")
    return text


def pairwise_messages(
    prompt: str,
    response_a: str,
    response_b: str,
    criteria: str | None = None,
    template: str | None = None,
    system: str | None = PAIRWISE_SYSTEM,
) -> Messages:
    """Chat messages asking the judge to compare A and B. ``template`` is a file path; None = built-in."""
    if template:
        body = load_template(template)
    else:
        body = PAIRWISE_CRITERIA_TEMPLATE if criteria else PAIRWISE_TEMPLATE
    user = render(body, prompt=prompt, response_a=response_a, response_b=response_b, criteria=criteria or "")
    messages: Messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": user})
    return messages
