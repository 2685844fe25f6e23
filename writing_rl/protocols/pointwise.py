"""The pointwise score protocol: one answer shown alone, scored 1 to 10 with ``{"score": n}`` on the judge's last
line. The reward ``reward_fns.pointwise`` sends and reads it in training; ``writing-rl eval`` sends and reads the
same, so that a GenRM trained on it is evaluated with the prompt and reader it served.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from writing_rl.protocols.pairwise import read_json_score
from writing_rl.protocols.prompts import format_criteria
from writing_rl.protocols.quoting import fence, plain_text
from writing_rl.protocols.text import Unreadable, split_reasoning

LOW, HIGH = 1, 10

TEMPLATE = """\
An assistant answered the writing request below. Rate its answer.

[Request]
{prompt}
{criteria}
[Answer]
{response}

Weigh how well the answer carries out the request: fidelity to what was asked, substance and insight, \
structure and coherence, and the quality of the prose. Length is not a merit in itself. Reason step by step, \
then end with a JSON object holding only your score, a whole number from 1 (worst) to 10 (best), as in: \
{"score": 7}
"""
_PLACEHOLDER = re.compile(r"\{(prompt|response|criteria)\}")


@lru_cache(maxsize=16)
def template_text(path: str) -> str:
    """A prompt template file of the user's; it must show the answer."""
    text = Path(path).expanduser().read_text(encoding="utf-8")
    if "{response}" not in text:
        raise ValueError(f"judge template {path} must contain the placeholder {{response}} (the fenced answer)")
    return text


def pointwise_messages(
    prompt: str, answer: str, criteria: Any = None, template: str | None = None, system_prompt: str | None = None
) -> list[dict]:
    """The judge call that scores ``answer`` alone: ``template`` a template file (None: ``TEMPLATE``),
    ``system_prompt`` the system message (None or empty: none)."""
    body = template_text(template) if template else TEMPLATE
    listed = format_criteria(criteria)
    values = {
        "prompt": prompt,
        "response": fence(plain_text(answer)),
        "criteria": f"\n[Evaluation criteria]\n{listed}\n" if listed else "",
    }
    user = _PLACEHOLDER.sub(lambda m: values[m.group(1)], body)  # one pass: an answer's own "{prompt}" stays
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*system, {"role": "user", "content": user}]


_SCORE_OBJECT = re.compile(r'\{\s*"score"\s*:')


def read_final_score(reply: str, answer: str) -> float | Unreadable:
    """The judge's score: the JSON object on the last line of its reply, 1 to 10. A score anywhere else (the judge
    quoting the answer while it reasons) is not read; and an answer that holds a score object of its own gets none
    read at all, since the judge's last line could be the answer's, quoted."""
    if _SCORE_OBJECT.search(answer):
        return Unreadable("the answer holds a score object of its own: the judge's cannot be told from it")
    split = split_reasoning(reply)
    if isinstance(split, Unreadable):
        return split
    lines = [line for line in split[1].splitlines() if line.strip()]
    if not lines:
        return Unreadable("no answer after the reasoning")
    return read_json_score(lines[-1], "score", LOW, HIGH)
