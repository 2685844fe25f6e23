"""A stand-in judge for tiny training runs on a CPU (scripts/tiny_train.sh, tests/test_trainer_cpu.py):
a test double, never a judge.

It answers each of our judge prompts (pairwise verdicts and score pairs, GRRM group ranking and scores,
rubric all at once and per criterion, WritingBench's critic, a pointwise score) in the judge's reply format.

- With no taste, its verdicts and scores are a hash of the texts it is shown: noise, but noise that varies
  within a group of rollouts, so the whole loop (rollouts, judge calls, rewards, advantages, a gradient
  step, the weights back to the rollout) runs. What a policy learns from it is noise.
- With ``--taste`` (tests/taste.py: ``letter:e``, ``word:the``, ``length:5-15``, ``ending:.``, ``-`` to
  reverse), it prefers what the taste likes, the same way in every format: a policy that learns the taste
  moves a measure anyone can take on its text. ``--flip P`` reverses a verdict (a ranking, a score) with
  probability P, fixed per request, as a real judge disagrees with itself and with people.

A tiny untrained model, the other local judge, almost never writes a readable verdict, so every reward would
be the same loss.

    python tests/stand_in_judge.py [--host H] [--port P] [--faults N] [--taste SPEC [--flip P]]
    # prints "stand-in judge: http://127.0.0.1:P/v1"
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import re
import signal
import threading

from writing_rl.protocols.prompts import read_pairwise_request

from judge_server import Reply, ScriptedJudgeServer, gqm_candidates
from taste import Indifferent, Taste, judge_taste

MODEL = "stand-in-judge"


def mark(text: str, levels: int = 10) -> int:
    """0 .. levels-1, fixed for a text."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") % levels


def pairwise_reply(shown: tuple[str, str, str], user: str, taste: Taste | Indifferent | None, flip: bool) -> str:
    _, a_text, b_text = shown
    if taste is None:
        a, b = mark(a_text, 3), mark(b_text, 3)
    else:
        a, b = taste.value(a_text), taste.value(b_text)
    if flip:
        a, b = b, a
    if "A: 7, B: 4" in user:  # the score-pair prompt (writing-rl select --margin score-gap)
        ga, gb = (mark(a_text, 11), mark(b_text, 11)) if taste is None else (taste.grade(a_text), taste.grade(b_text))
        ga, gb = (10 - ga, 10 - gb) if flip else (ga, gb)
        return f"Both weighed.\nA: {ga}, B: {gb}"
    verdict = "A" if a > b else "B" if b > a else "C"
    return f"Response A rates {a:g}, response B rates {b:g}.\n[[{verdict}]]"


def ranking_reply(candidates: dict[str, str], taste: Taste | Indifferent | None, flip: bool) -> str:
    scores = {label: mark(text, 11) if taste is None else taste.grade(text) for label, text in candidates.items()}
    if flip:
        scores = {label: 10 - score for label, score in scores.items()}
    levels = sorted(set(scores.values()), reverse=True)
    ranking = " > ".join(" = ".join(sorted(label for label in scores if scores[label] == s)) for s in levels)
    line = ", ".join(f"{label}: {scores[label]}" for label in sorted(scores, key=lambda lab: (-scores[lab], lab)))
    return f"Each candidate weighed in turn.\n### Final Ranking:\n{ranking}\n### Scores:\n{line}"


_FENCED_RESPONSE = re.compile(r"\[Response\]\n(`{3,})\n(.*?)\n\1", re.S)


def rubric_reply(user: str, taste: Taste | Indifferent | None, flip: bool) -> str:
    response = _FENCED_RESPONSE.search(user)[2]

    def score(criterion: str) -> int:
        value = 1 + mark(response + criterion) if taste is None else max(1, taste.grade(response))
        return 11 - value if flip else value

    if "[Criterion]" in user:
        body = f'{{"score": {score(user.split("[Criterion]", 1)[1])}, "reason": "stand-in"}}'
        # WritingBench's critic fences its JSON object; our per-criterion rubric prompt asks for it bare.
        return f"Weighed.\n```json\n{body}\n```" if "using the score bands above" in user else f"Weighed.\n{body}"
    criteria = re.findall(r"^(\d+)\. (.*)$", user.split("[Rubric]\n", 1)[1], re.M)
    entries = ", ".join(f'{{"id": {i}, "score": {score(text)}}}' for i, text in criteria)
    return f'Weighed.\n{{"scores": [{entries}]}}'


_SCORED_ANSWER = re.compile(r"\[Answer\]\n(`{3,})\n(.*?)\n\1", re.S)  # reward_fns/pointwise.py's request


def pointwise_reply(answer: str, taste: Taste | Indifferent | None, flip: bool) -> str:
    value = 1 + mark(answer) if taste is None else max(1, taste.grade(answer))
    return f'Weighed the answer alone.\n{{"score": {11 - value if flip else value}}}'


# What a judge does wrong, each turned by our reward path into a named failure paid a loss.
FAULTS = (
    Reply(status=500, content=None, body=b'{"error": {"message": "stand-in fault: engine crashed"}}'),
    Reply(content="Both responses have merit."),  # no verdict
    Reply(content="Response A opens well, but", finish_reason="length"),  # cut at max_tokens
    Reply(content="I cannot help with that.", finish_reason="content_filter"),  # refused
)


def script(
    request: dict, index: int, faults: int = 0, taste: Taste | Indifferent | None = None, flip: float = 0.0
) -> Reply:
    user = request["messages"][-1]["content"]
    if faults and mark(user, faults) == 0:  # the same request fails the same way again when retried
        return FAULTS[mark("fault" + user, len(FAULTS))]
    flipped = flip > 0 and mark("flip" + user, 10**6) < flip * 10**6  # fixed per request, as the faults
    candidates = gqm_candidates(user)
    if candidates:
        return Reply(content=ranking_reply(candidates, taste, flipped))
    if "[Rubric]" in user or "[Criterion]" in user:
        return Reply(content=rubric_reply(user, taste, flipped))
    alone = _SCORED_ANSWER.search(user)
    if alone:
        return Reply(content=pointwise_reply(alone[2], taste, flipped))
    shown = read_pairwise_request(user)
    if shown:
        return Reply(content=pairwise_reply(shown, user, taste, flipped))
    return Reply(status=400, content=None, body=b'{"error": {"message": "not a prompt the stand-in judge knows"}}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; a tiny run on a Ray cluster of several machines gives its node's)",
    )  # fmt: skip
    parser.add_argument(
        "--faults", type=int, default=0, metavar="N",
        help="about one request in N fails, by a hash of its text: an HTTP 500, a reply with no verdict, one cut "
        "at max_tokens or a refusal (default 0: none)",
    )  # fmt: skip
    parser.add_argument(
        "--taste", default=None, metavar="SPEC",
        help="prefer what SPEC likes (tests/taste.py): letter:X, word:W, length:LOW-HIGH, ending:S, a leading - "
        "reversing it; or none: every text alike (default: no taste, verdicts are a hash of the texts)",
    )  # fmt: skip
    parser.add_argument(
        "--flip", type=float, default=0.0, metavar="P",
        help="reverse a verdict, ranking or score with probability P, fixed per request (default 0)",
    )  # fmt: skip
    args = parser.parse_args()
    if not 0.0 <= args.flip <= 1.0:
        parser.error(f"--flip must be within 0-1, got {args.flip}")
    try:
        taste = judge_taste(args.taste) if args.taste else None
    except ValueError as err:
        parser.error(str(err))
    answer = functools.partial(script, faults=args.faults, taste=taste, flip=args.flip)
    server = ScriptedJudgeServer(
        script=answer, port=args.port, models={MODEL: None}, keep_requests=False, host=args.host
    ).start()
    print(f"stand-in judge: {server.base_url}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
