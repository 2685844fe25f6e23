"""One answer rated alone, 1 to 10: the calls of the judge benchmarks that rate answers one at a time
(RewardBench 2's rated mode and its Ties subset, RM-Bench's generative judges).

Two readers, each a prompt and the way its reply is read:

- ``rating``: our prompt, which asks for the rating alone on the last line; the reply read as RewardBench 2 reads it,
  the integer 1-10 at the very end of the stripped reply (its regex ``\\b([1-9]|10)\\b\\s*$``), else ``UNRATED``.
  Its Ties variant tells the judge that depth and detail need not be weighed, as the benchmark's Ties prompt does.
- ``pointwise``: exactly what our pointwise reward sends and reads in training (``writing_rl.protocols.pointwise``:
  ``{"score": n}`` on the judge's last line), so a GenRM trained on it is evaluated with the prompt it served.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from writing_rl.protocols.pointwise import pointwise_messages, read_final_score
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM
from writing_rl.protocols.quoting import fence, plain_text
from writing_rl.protocols.text import Unreadable

READERS = ("rating", "pointwise")
UNRATED = -1  # no rating could be read (the benchmarks' own -1)

_INSTRUCTIONS = """\
Weigh how helpful, relevant and accurate the answer is{extra}. Explain your judgement briefly first. Then give \
your rating, a whole number from 1 (worst) to 10 (best), alone on the last line: no markdown, nothing after it.
"""
_BODY = """\
Rate how well an AI assistant answered the request below, on a scale of 1 to 10.

[Request]
{{prompt}}

[Answer]
{{response}}

{instructions}"""
RATING_TEMPLATE = _BODY.format(
    instructions=_INSTRUCTIONS.format(extra=", and also its depth, its creativity and its level of detail")
)
TIES_TEMPLATE = _BODY.format(
    instructions=_INSTRUCTIONS.format(extra="; its depth and level of detail need not be weighed")
)
# {response}: the answer in a fence it cannot close (our prompts); {completion}: the answer as it is (the
# placeholder of RewardBench 2's own prompts, so that they can be passed with --template unchanged).
_PLACEHOLDER = re.compile(r"\{(prompt|response|completion)\}")
_TRAILING_RATING = re.compile(r"\b([1-9]|10)\b\s*$")


def rating_messages(
    prompt: str,
    answer: str,
    reader: str = "rating",
    template: str | None = None,
    system_prompt: str | None = None,
    ties: bool = False,
) -> list[dict]:
    """The judge call that rates ``answer`` to ``prompt`` alone. ``template``: a prompt file (None: the reader's
    own prompt; for ``rating``, the Ties variant when ``ties``). ``system_prompt``: None gives the reader's
    default (``rating``: none, as RewardBench 2 sends; ``pointwise``: the one training sends by default), an
    empty string none."""
    _check(reader)
    if reader == "pointwise":  # the training prompt has no Ties variant: the GenRM is asked what it was taught
        system = PAIRWISE_SYSTEM if system_prompt is None else system_prompt
        return pointwise_messages(prompt, answer, None, template, system)
    body = rating_template(template) if template else TIES_TEMPLATE if ties else RATING_TEMPLATE
    values = {"prompt": prompt, "response": fence(plain_text(answer)), "completion": answer}
    user = _PLACEHOLDER.sub(lambda m: values[m.group(1)], body)  # one pass: an answer's own "{prompt}" stays
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*system, {"role": "user", "content": user}]


def read_rating(text: str | None, reader: str = "rating", answer: str = "") -> int | float:
    """The rating in a judge's reply, 1 to 10, or ``UNRATED`` when none can be read (``text`` None: a reply cut
    at the token limit or refused). ``answer``: the rated answer, which the pointwise reader needs (an answer
    holding a score object of its own gets no score read). The rating reader reads whole numbers only; the
    pointwise one reads what training reads, a fractional score included."""
    _check(reader)
    if not isinstance(text, str):
        return UNRATED
    if reader == "pointwise":
        score = read_final_score(text, answer)
        if isinstance(score, Unreadable):
            return UNRATED
        return int(score) if score.is_integer() else score
    found = _TRAILING_RATING.search(text.strip())
    return int(found.group(1)) if found else UNRATED


@lru_cache(maxsize=16)
def rating_template(path: str) -> str:
    """A rating prompt file of the user's, with {prompt} and the answer as {response} (fenced) or {completion}
    (as it is)."""
    text = Path(path).expanduser().read_text(encoding="utf-8")
    if "{response}" not in text and "{completion}" not in text:
        raise ValueError(
            f"rating template {path} must contain the placeholder {{response}} (the fenced answer) or {{completion}} "
            "(the answer as it is)"
        )
    return text


def _check(reader: str) -> None:
    if reader not in READERS:
        raise ValueError(f"reader must be one of {', '.join(READERS)}, got {reader!r}")
