"""A stand-in judge for tiny training runs on a CPU (scripts/tiny_train.sh, tests/test_trainer_cpu.py):
a test double, never a judge.

It answers each of our judge prompts (pairwise, GRRM group ranking, rubric) in the judge's reply format,
with verdicts and scores taken from a hash of the texts it is shown. So they are noise, but noise that
varies within a group of rollouts: the trainer gets non-zero advantages and the whole loop (rollouts,
judge calls, rewards, advantages, a gradient step, the weights back to the rollout) runs. A tiny
untrained model, the other local judge, almost never writes a readable verdict, so every reward would
be the same loss.

    python tests/stand_in_judge.py [--port P] [--faults N]    # prints "stand-in judge: http://127.0.0.1:P/v1"
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

MODEL = "stand-in-judge"


def mark(text: str, levels: int = 10) -> int:
    """0 .. levels-1, fixed for a text."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") % levels


def pairwise_reply(shown: dict[int, str]) -> str:
    a, b = mark(shown[1], 3), mark(shown[2], 3)
    verdict = "A" if a > b else "B" if b > a else "C"
    return f"Response A rates {a}, response B rates {b}.\n[[{verdict}]]"


def ranking_reply(candidates: dict[str, str]) -> str:
    scores = {label: mark(text, 11) for label, text in candidates.items()}
    levels = sorted(set(scores.values()), reverse=True)
    ranking = " > ".join(" = ".join(sorted(label for label in scores if scores[label] == s)) for s in levels)
    line = ", ".join(f"{label}: {scores[label]}" for label in sorted(scores, key=lambda lab: (-scores[lab], lab)))
    return f"Each candidate weighed in turn.\n### Final Ranking:\n{ranking}\n### Scores:\n{line}"


def rubric_reply(user: str) -> str:
    response = user.split("[Response]\n", 1)[1].split("\n\n[", 1)[0]
    if "[Criterion]" in user:
        criterion = user.split("[Criterion]", 1)[1]
        return f'Weighed.\n{{"score": {1 + mark(response + criterion)}, "reason": "stand-in"}}'
    criteria = re.findall(r"^(\d+)\. (.*)$", user.split("[Rubric]\n", 1)[1], re.M)
    entries = ", ".join(f'{{"id": {i}, "score": {1 + mark(response + text)}}}' for i, text in criteria)
    return f'Weighed.\n{{"scores": [{entries}]}}'


# What a judge does wrong, each turned by our reward path into a named failure paid a loss.
FAULTS = (
    Reply(status=500, content=None, body=b'{"error": {"message": "stand-in fault: engine crashed"}}'),
    Reply(content="Both responses have merit."),  # no verdict
    Reply(content="Response A opens well, but", finish_reason="length"),  # cut at max_tokens
    Reply(content="I cannot help with that.", finish_reason="content_filter"),  # refused
)


def script(request: dict, index: int, faults: int = 0) -> Reply:
    user = request["messages"][-1]["content"]
    if faults and mark(user, faults) == 0:  # the same request fails the same way again when retried
        return FAULTS[mark("fault" + user, len(FAULTS))]
    candidates = gqm_candidates(user)
    if candidates:
        return Reply(content=ranking_reply(candidates))
    if "[Rubric]" in user or "[Criterion]" in user:
        return Reply(content=rubric_reply(user))
    shown = read_pairwise_request(user)
    if shown:
        return Reply(content=pairwise_reply(shown))
    return Reply(status=400, content=None, body=b'{"error": {"message": "not a prompt the stand-in judge knows"}}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument(
        "--faults", type=int, default=0, metavar="N",
        help="about one request in N fails, by a hash of its text: an HTTP 500, a reply with no verdict, one cut "
        "at max_tokens or a refusal (default 0: none)",
    )  # fmt: skip
    args = parser.parse_args()
    answer = functools.partial(script, faults=args.faults)
    server = ScriptedJudgeServer(script=answer, port=args.port, models={MODEL: None}, keep_requests=False).start()
    print(f"stand-in judge: {server.base_url}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
