"""A noisy scripted judge for bench/reward_fidelity.py: it reads each answer's hidden quality and judges it
through a noise model, on 127.0.0.1 (tests/judge_server.py's ScriptedJudgeServer, in its own process).

Every answer of the benchmark carries its true quality as a token ``Q=0.7310`` in its text; only this
judge reads it. Two kinds of request, told apart as tests/judge_server.py's default script does:

  pairwise   (reward_fns/pairwise.py, brpo.py, tournament.py: the pairwise prompt, read back with
             writing_rl.protocols.prompts.read_pairwise_request). A latent draw
                 d = (qA - qB) / temperature + position_bias + Logistic(0, 1)
             gives [[A]] when d > tie_band, [[B]] when d < -tie_band, [[C]] (a tie) in between: a
             Bradley-Terry judge, P(A wins) = sigmoid((qA - qB)/temperature + position_bias) at
             tie_band 0, with Rao-Kupper ties (a tie band in logit units) otherwise.
  listwise   (reward_fns/group_ranking.py: the GQM prompt). Each candidate is scored
             round(5 + score_scale * (q + N(0, score_noise))), clipped to 0-10, and ranked by its
             score (equal scores are tied in the ranking line).
  pointwise  (reward_fns/pointwise.py: one answer scored alone): the listwise score, clipped to 1-10,
             written as {"score": s}.

temperature 0 is a noiseless judge (the better answer always wins; equal qualities tie); temperature
inf a judge that answers at random (pairwise: the verdict ignores the qualities; listwise: uniform
scores). ``score_noise`` null: temperature x pi / sqrt(6), so a listwise score difference is as noisy as
a pairwise latent draw.

The randomness of a reply is seeded by the judge's ``seed`` and a hash of the request's messages: a run is
reproducible, distinct requests (the same pair in the other order included) draw independently, and the
very same request asked twice gets the same reply (as a judge at temperature 0 would).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import subprocess
import sys
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

QUALITY_RE = re.compile(r"Q=(-?\d+(?:\.\d+)?)")
POINTWISE_ANSWER = re.compile(r"\[Answer\]\n(`{3,})\n(.*?)\n\1\n", re.S)  # reward_fns/pointwise.py's request


@dataclass(frozen=True)
class JudgeNoise:
    """The judge's noise model (see the module docstring)."""

    temperature: float = 0.5
    position_bias: float = 0.3
    tie_band: float = 0.5
    score_noise: float | None = None
    score_scale: float = 2.0
    seed: int = 0

    @property
    def listwise_noise(self) -> float:
        if self.score_noise is not None:
            return self.score_noise
        return self.temperature * math.pi / math.sqrt(6)


RANDOM_JUDGE = JudgeNoise(temperature=math.inf, position_bias=0.0, tie_band=0.0)
ENSEMBLE_SIZE = 3


def quality_of(text: str) -> float:
    """The hidden quality an answer carries (its first ``Q=`` token); 0 when it has none."""
    found = QUALITY_RE.search(text)
    return float(found.group(1)) if found else 0.0


def request_rng(request: dict, seed: int) -> random.Random:
    """A generator seeded by the judge's seed and the request's messages."""
    content = json.dumps(request.get("messages", []), sort_keys=True)
    digest = hashlib.sha256(f"{seed}:{content}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def logistic(rng: random.Random) -> float:
    u = min(max(rng.random(), 1e-12), 1 - 1e-12)
    return math.log(u / (1 - u))


def pairwise_verdict(q_a: float, q_b: float, noise: JudgeNoise, rng: random.Random) -> str:
    """A, B or C (tie) for answers of qualities q_a (shown first) and q_b."""
    if math.isinf(noise.temperature):
        mean = noise.position_bias
    elif noise.temperature <= 0:
        mean = math.copysign(math.inf, q_a - q_b) if q_a != q_b else noise.position_bias
    else:
        mean = (q_a - q_b) / noise.temperature + noise.position_bias
    draw = mean + logistic(rng)
    if abs(draw) <= noise.tie_band and not math.isinf(draw):
        return "C"
    return "A" if draw > 0 else "B"


def listwise_scores(qualities: dict[str, float], noise: JudgeNoise, rng: random.Random) -> dict[str, int]:
    """A 0-10 integer score per label."""
    if math.isinf(noise.temperature):
        return {label: rng.randint(0, 10) for label in sorted(qualities)}
    spread = noise.listwise_noise
    scores = {}
    for label in sorted(qualities):
        value = 5 + noise.score_scale * (qualities[label] + rng.gauss(0.0, spread))
        scores[label] = max(0, min(10, round(value)))
    return scores


def make_script(noise: JudgeNoise):
    """The ScriptedJudgeServer script of this noise model."""
    sys.path.insert(0, str(REPO / "tests"))
    from writing_rl.protocols.prompts import read_pairwise_request

    from judge_server import Reply, gqm_answer, gqm_candidates

    def script(request: dict, index: int) -> Reply:
        user = request["messages"][-1]["content"]
        rng = request_rng(request, noise.seed)
        alone = POINTWISE_ANSWER.search(user)
        if alone:
            score = listwise_scores({"A": quality_of(alone.group(2))}, noise, rng)["A"]
            return Reply(content=f'Scored the answer alone.\n{{"score": {max(1, score)}}}')
        if "### Final Ranking:" in user:
            candidates = gqm_candidates(user)
            scores = listwise_scores({lab: quality_of(text) for lab, text in candidates.items()}, noise, rng)
            return Reply(content=gqm_answer(scores))
        shown = read_pairwise_request(user)
        if not shown:
            return Reply(content="I cannot find two responses. [[C]]")
        verdict = pairwise_verdict(quality_of(shown[1]), quality_of(shown[2]), noise, rng)
        return Reply(content=f"Both responses weighed.\nFinal verdict:\n[[{verdict}]]")

    return script


def start_fidelity_judge(noise: JudgeNoise) -> tuple[subprocess.Popen, str]:
    """This judge in its own process, as bench/judge_throughput.py's start_judge runs its own: (process,
    base_url). Stop it with ``process.kill()``."""
    proc = subprocess.Popen(
        [sys.executable, __file__, json.dumps(asdict(noise))],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
    )
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the fidelity judge did not start (said {url!r})")
    return proc, url


def judge_calls(base_url: str) -> int:
    """Requests the judge has received so far (its /stats)."""
    with urllib.request.urlopen(base_url.replace("/v1", "/stats")) as resp:
        return int(resp.read())


class Judges:
    """The judge processes the rows need, started on first use."""

    def __init__(self, noise: JudgeNoise):
        ensemble = [JudgeNoise(**{**vars(noise), "seed": noise.seed + 1 + i}) for i in range(ENSEMBLE_SIZE)]
        self.noise = {"main": [noise], "random": [RANDOM_JUDGE], "ensemble": ensemble}
        self.started: dict[str, list] = {}

    def urls(self, kind: str) -> list[str]:
        if kind not in self.started:
            self.started[kind] = [start_fidelity_judge(noise) for noise in self.noise[kind]]
        return [url for _, url in self.started[kind]]

    def stop(self) -> None:
        for procs in self.started.values():
            for proc, _ in procs:
                proc.kill()
                proc.wait()


def _serve(spec: str) -> None:
    import time

    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests"))
    from judge_server import ScriptedJudgeServer

    noise = JudgeNoise(**json.loads(spec))
    server = ScriptedJudgeServer(script=make_script(noise), keep_requests=False).start()
    print(server.base_url, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    _serve(sys.argv[1])
