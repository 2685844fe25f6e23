"""One probe comparison, paid by the method's own reward fn exactly as training would pay it: the same
prompts, reply readers, think-stripping and failure rules. Each method places the probe where the run
needs it (``slot``: "A" shown first, "B" second; rubric: "-", it scores each reply alone) and reads the
fn's result into one outcome of the probe against the honest answer:

- ``win``, ``tie``, ``loss``: what the judge decided, from the probe's side;
- ``refused``: the method paid the probe a loss without asking the judge (no answer: the empty reply);
- ``unreadable``: the judge's reply could not be read (the method pays no more than a loss for it);
- ``unjudged``: the method's extraction left the probe identical to the honest answer (nothing to judge);
- ``error``: a judge call failed after its retries.

How each method gets the probe into place:

- pairwise (``reward_fns.pairwise.compute_score``): the row's target is the honest answer and the probe is
  the policy's response; ``strategy`` is set per comparison: position-advantage puts the probe at A,
  position-disadvantage at B. The other options are the run's.
- brpo (``reward_fns.brpo.compute_score``): a group of two, the honest answer and the probe, under a uid for
  which the fn's own ``choose_references`` draws the honest answer as the bootstrap reference; ``strategy``
  as for pairwise. The probe's reward (+1, 0, -1) is its outcome.
- ranking (``reward_fns.group_ranking.compute_score``): a group of two under a uid for which the fn's own
  ``shuffled_order`` shows the probe as candidate A (or B); the judge's scores (``rank_score``) decide.
- rubric (``reward_fns.rubric.compute_score``): the probe and the honest answer scored alone; the higher
  rubric reward wins. It has no positions: position bias does not apply.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

from writing_rl.judge import SampleJudge
from writing_rl.reward_loop.contract import Member
from writing_rl.tools.probe.rows import ProbeRow

UNREADABLE_KEYS = ("parse_error", "judge_truncated", "judge_refusal")
PROBE_FIRST = {"A": "position-advantage", "B": "position-disadvantage"}  # pairwise/BRPO strategy per slot


@dataclass(frozen=True)
class Comparison:
    row: ProbeRow
    probe: str  # the probe's name
    reply: str  # the probe's text
    slot: str  # where the probe stands: "A", "B", or "-" (rubric)
    repeat: bool = False  # the self-consistency repeat (judged bypassing the cache)


def winner(outcome: str, slot: str) -> str | None:
    """The slot the judge preferred ("A", "B"), "tie", or None for no decision."""
    if outcome == "tie":
        return "tie"
    if outcome not in ("win", "loss") or slot not in ("A", "B"):
        return None
    return slot if outcome == "win" else ("B" if slot == "A" else "A")


def failure(result: dict, judge: SampleJudge) -> str | None:
    """The outcome of a result that holds no decision of the judge, else None."""
    if result.get("format_error"):
        return "refused"
    if judge.errors or result.get("judge_error"):
        return "error"
    if any(result.get(key) for key in UNREADABLE_KEYS):
        return "unreadable"
    return None


def by_sign(difference: float) -> str:
    return "win" if difference > 0 else "loss" if difference < 0 else "tie"


def fn_helper(fn: Callable, name: str) -> Callable:
    """A function of the reward fn's own module (how it draws references or shuffles candidates)."""
    helper = getattr(fn, "__globals__", {}).get(name)
    if not callable(helper):
        raise ValueError(f"{fn.__module__} has no {name}(): probe-judge cannot place a probe in its groups")
    return helper


def uid_where(test: Callable[[str], bool], tag: str) -> str:
    """The first of ``probe-<tag>-0``, ``-1``... that ``test`` accepts (a placement the fn's seeded draw
    gives about every other uid)."""
    for number in range(1000):
        uid = f"probe-{tag}-{number}"
        if test(uid):
            return uid
    raise RuntimeError(f"no uid places the probe as wanted ({tag}); the reward fn's draw changed")


class Placer(ABC):
    """A method's way through its reward fn; ``slots`` are the positions each probe is judged in."""

    slots: tuple[str, ...] = ("A", "B")

    def __init__(self, fn: Callable, options: dict[str, Any], on_parse_error: str):
        self.fn, self.options = fn, dict(options)
        self.on_parse_error = "loss" if on_parse_error == "raise" else on_parse_error  # count, never stop

    @abstractmethod
    async def outcome(self, comparison: Comparison, judge: SampleJudge) -> str:
        """The probe's outcome against the honest answer (see the module docstring)."""

    def as_paid(self, outcome: str) -> str:
        """An unreadable reply counts as the run pays it: a tie under on_parse_error=tie (a probe that breaks the
        judge's format is paid a tie there, which a policy can learn), else a loss (kept as ``unreadable``)."""
        return "tie" if outcome == "unreadable" and self.on_parse_error == "tie" else outcome

    def members(self, row: ProbeRow, uid: str, texts: list[str]) -> list[Member]:
        return [Member(uid, text, 0, row.prompt, row.data_source, row.ground_truth, row.extra_info) for text in texts]


class PairwisePlacer(Placer):
    async def outcome(self, c: Comparison, judge: SampleJudge) -> str:
        options = {**self.options, "strategy": PROBE_FIRST[c.slot]}
        result = await self.fn(c.row.data_source, c.reply, c.row.ground_truth, c.row.extra_info, judge=judge,
                               on_parse_error=self.on_parse_error, **options)  # fmt: skip
        found = failure(result, judge)
        if found:
            return found
        return "win" if result["win"] == 1 else "tie" if result["tie"] == 1 else "loss"


class BRPOPlacer(Placer):
    async def outcome(self, c: Comparison, judge: SampleJudge) -> str:
        options = {**self.options, "strategy": PROBE_FIRST[c.slot]}
        strip, choose = fn_helper(self.fn, "strip_think"), fn_helper(self.fn, "choose_references")
        answers, seed = [strip(c.row.honest), strip(c.reply)], int(options.get("seed", 0))
        uid = "probe-unplaced"
        if None not in answers and answers[0] != answers[1]:
            uid = uid_where(lambda u: choose(answers, 1, seed, u) == [answers[0]], f"{c.probe}-{c.slot}")
        members = self.members(c.row, uid, [c.row.honest, c.reply])
        honest, probe = await self.fn(members, judge=judge, on_parse_error=self.on_parse_error, **options)
        if probe.get("is_reference"):  # the fn drew the probe as the reference after all: no comparison
            return "unjudged"
        return failure(probe, judge) or by_sign(probe["score"])


class RankingPlacer(Placer):
    async def outcome(self, c: Comparison, judge: SampleJudge) -> str:
        extract, shuffle = fn_helper(self.fn, "extract_answer"), fn_helper(self.fn, "shuffled_order")
        extraction, seed = self.options.get("extraction", "full"), int(self.options.get("seed", 0))
        answers = [extract(c.row.honest, extraction), extract(c.reply, extraction)]
        shown_first = 1 if c.slot == "A" else 0  # the candidate at label A
        uid = "probe-unplaced"
        if None not in answers and answers[0] != answers[1]:
            uid = uid_where(lambda u: shuffle(answers, seed, u)[0] == shown_first, f"{c.probe}-{c.slot}")
        members = self.members(c.row, uid, [c.row.honest, c.reply])
        honest, probe = await self.fn(members, judge=judge, on_parse_error=self.on_parse_error, **self.options)
        found = failure(probe, judge) or failure(honest, judge)
        if found:
            return found
        if probe.get("nothing_to_rank"):
            return "unjudged"
        return by_sign(probe["rank_score"] - honest["rank_score"])


class RubricPlacer(Placer):
    slots = ("-",)

    async def outcome(self, c: Comparison, judge: SampleJudge) -> str:
        row = c.row
        results = []
        for text in (c.reply, row.honest):
            results.append(
                await self.fn(
                    row.data_source,
                    text,
                    row.ground_truth,
                    row.extra_info,
                    judge=judge,
                    on_parse_error=self.on_parse_error,
                    **self.options,
                )  # fmt: skip
            )
        probe, honest = results
        found = failure(probe, judge) or failure(honest, judge)
        return found or by_sign(probe["score"] - honest["score"])


PLACERS = {"pairwise": PairwisePlacer, "brpo": BRPOPlacer, "ranking": RankingPlacer, "rubric": RubricPlacer}
