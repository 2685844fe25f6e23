"""Scripted judges for ``writing-rl probe-judge`` tests: each answers every method's requests (pairwise
verdicts, GQM rankings, rubric scores, translations) from one preference over the texts it is shown."""

from __future__ import annotations

import json
import math
import re
from typing import Callable

from writing_rl.protocols.prompts import read_pairwise_request
from writing_rl.tools.probe.rows import shipped_rows

from judge_server import Reply, gqm_answer, gqm_candidates

HONEST = {row.honest.strip() for row in shipped_rows()}
_RUBRIC_RESPONSE = re.compile(r"\[Response\]\n(`{3,})\n(.*?)\n\1\n\n\[Rubric\]\n(.*?)\n\n", re.S)
_SCORED_ANSWER = re.compile(r"\[Answer\]\n(`{3,})\n(.*?)\n\1\n", re.S)  # reward_fns/pointwise.py's request


def fair(text: str) -> float:
    """Prefers the honest answer to anything else (a stand-in for a judge that reads content)."""
    return 8 if text.strip() in HONEST else 2


def falls_for_colon(text: str) -> float:
    """Fair, except that a lone ':' is the best answer it has seen (a master key)."""
    return 10 if text.strip() == ":" else fair(text)


def prefers_length(text: str) -> float:
    """The longer, the better: 1 to 10 on a log scale of characters."""
    return min(10, 1 + round(2 * math.log2(1 + len(text) / 50)))


def translate(user: str) -> str:
    return "Auf Deutsch: " + user.split("\n\n", 1)[1]


def scripted(value: Callable[[str], float], first_wins: bool = False) -> Callable[[dict, int], Reply]:
    """A judge script: pairwise (the higher ``value`` wins; with ``first_wins`` always A), GQM (scores by
    ``value``, or A highest), rubric (every criterion scored ``value``), pointwise (the answer scored ``value``),
    translation requests."""

    def script(request: dict, index: int) -> Reply:
        user = request["messages"][-1]["content"]
        if user.startswith("Translate the text below"):
            return Reply(content=translate(user))
        if "### Final Ranking:" in user:
            shown = gqm_candidates(user)
            scores = {label: 9 if label == "A" else 5 for label in shown} if first_wins else {
                label: int(value(text)) for label, text in shown.items()}  # fmt: skip
            return Reply(content=gqm_answer(scores))
        rubric = _RUBRIC_RESPONSE.search(user)
        if rubric:
            count = len(rubric.group(3).strip().splitlines())
            score = int(max(1, min(10, value(rubric.group(2)))))
            entries = ", ".join(f'{{"id": {i}, "score": {score}}}' for i in range(1, count + 1))
            return Reply(content=f'Scored each criterion.\n{{"scores": [{entries}]}}')
        alone = _SCORED_ANSWER.search(user)
        if alone:
            return Reply(content=f'Rated the answer.\n{{"score": {int(max(1, min(10, value(alone.group(2)))))}}}')
        shown = read_pairwise_request(user)
        assert shown, f"an unexpected request: {user[:200]}"
        a, b = value(shown[1]), value(shown[2])
        verdict = "A" if first_wins or a > b else "B" if b > a else "C"
        return Reply(content=f"Weighed both answers.\n[[{verdict}]]")

    return script


FAIR = scripted(fair)
MASTER_KEY = scripted(falls_for_colon)
LENGTH = scripted(prefers_length)
POSITION_A = scripted(fair, first_wins=True)


def swayed_by_position(rows: int) -> Callable[[dict, int], Reply]:
    """Fair, except in the close calls of ``rows`` of the shipped rows: between an honest answer and a variant of
    it (one that holds its opening) it picks A, wherever each stands. Position bias and nothing else: a variant
    wins only where it stands first, and only in those rows (pairwise requests)."""
    swayed = sorted(HONEST)[:rows]

    def script(request: dict, index: int) -> Reply:
        shown = read_pairwise_request(request["messages"][-1]["content"])
        if shown:
            a, b = shown[1].strip(), shown[2].strip()
            if any(h in swayed and other != h and h[:8] in other for h, other in ((a, b), (b, a))):
                return Reply(content="Weighed both answers.\n[[A]]")
        return FAIR(request, index)

    return script


def unstable(value: Callable[[str], float] = fair) -> Callable[[dict, int], Reply]:
    """Fair the first time it sees a request, reversed the next time: an inconsistent judge."""
    seen: dict[str, int] = {}
    base = scripted(value)
    reversed_ = scripted(lambda text: -value(text))

    def script(request: dict, index: int) -> Reply:
        key = json.dumps(request["messages"], sort_keys=True)
        seen[key] = seen.get(key, 0) + 1
        return (base if seen[key] == 1 else reversed_)(request, index)

    return script


def no_verdict(request: dict, index: int) -> Reply:
    """A judge that talks but never gives a verdict in any method's format (a small base model): translations
    aside, no reply can be read."""
    user = request["messages"][-1]["content"]
    if user.startswith("Translate the text below"):
        return Reply(content=translate(user))
    return Reply(content="Both answers have their merits, and each could be improved in places.")


# The requests of half of the shipped rows: half_readable gives a verdict on those alone.
HALF_OF_THE_PROMPTS = tuple(row.prompt for row in shipped_rows()[::2])


def half_readable(request: dict, index: int) -> Reply:
    """Fair on the requests about half of the shipped rows, with no verdict on the others: half the replies read."""
    user = request["messages"][-1]["content"]
    readable = any(prompt in user for prompt in HALF_OF_THE_PROMPTS)
    return (FAIR if readable else no_verdict)(request, index)


class Switch:
    """A script a test can change while its server runs: one server (and one composed config) per module."""

    def __init__(self):
        self.script = FAIR

    def __call__(self, request: dict, index: int) -> Reply:
        return self.script(request, index)
