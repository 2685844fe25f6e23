"""Tournament group rewards: the distinct answers of one prompt play games judged by a pairwise judge (any
pairwise judge or GenRM, with our pairwise prompt), and each rollout's reward aggregates its games.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.tournament`` under
``writing_rl.reward_loop.group_manager.GroupRewardManager`` (hydra_configs/tournament.yaml). Options under
``reward.custom_reward_function.reward_kwargs``; the maths is in writing_rl/tournament/.

Per group: the responses are stripped of closed ``<think>`` blocks and identical answers are one player
(judged once, the copies share its reward). ``schedule`` says who meets whom: ``round_robin`` (every pair),
``k_opponents`` (each player ``opponents`` seeded siblings, balanced), ``swiss`` (``rounds`` rounds, each
pairing players of similar standing who have not met) or ``single_elimination`` (ArenaRL's: a bracket of
drawn seeds, the winners going on, d-1 games; a tied game sends the better seed on; after a reply that could
not be read each of the two answers plays one more game, against a witness, so that the one that breaks the
judge's reading is told apart and knocked out). Each game is judged in both orders (``orders: 2``)
or in one (``orders: 1``, who is shown first drawn per game, so that a position bias averages out).
``aggregation`` turns the games into a reward in [0, 1]: ``win_rate`` (the mean score, a tie half a win),
``copeland`` (pairs won, a tied pair half) or ``bradley_terry`` (the expected score against the group's
other players under a Bradley-Terry fit, ties half a win, ``prior`` virtual games for a finite score).
Seeds derive from ``seed`` and the group's uid: the same group gets the same games in any arrival order.

A failed game never pays more than losing it. Each is counted (``failed_games``) and blamed:
- a reply that cannot be read is blamed on the answer of the two whose games failed to read against more
  distinct opponents (both when as many): a text that breaks the judge's reading fails against everyone, its
  opponents only against it. For the answer blamed, the game counts as ``on_parse_error`` says (a loss, or a
  tie; ``raise`` stops the step), with ``parse_error=1``; for the other it is left out.
- a call that failed after its retries is blamed on both: it counts as a tie (the method's neutral result)
  with ``judge_error=1``, and the manager then pays ``on_judge_error`` (by default the loss).
A game counted for one answer is counted as if that answer had played it and got that result, in the same
aggregation. Under ``swiss`` and ``single_elimination`` with ``on_parse_error: loss`` an answer blamed for an
unreadable game is paid the loss outright: their rounds pair on the results so far, so a failed game changes
whom the answer meets next, and no score of the games it went on to play can promise it would not have done
worse by losing. Each verdict is read for the answer shown first, so no answer is favoured by its place in the
group. A rollout without an answer gets ``format_error_reward`` (at most the loss).
Judge calls per group: round robin d(d-1)/2, k_opponents ceil(d k / 2), swiss rounds * floor(d/2),
single_elimination d-1 games for d distinct answers, times ``orders``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any, Mapping

from writing_rl import tournament
from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import PAIRWISE_OUTPUTS, Unreadable, strip_think
from writing_rl.protocols.comparison import POINTS, comparison_messages, read_outcome
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, format_criteria
from writing_rl.reward_loop.contract import (
    Member,
    ProbePlacement,
    RewardMethod,
    by_sign,
    fallback_outcome,
    option,
    probe_failure,
    probe_group,
    read_options,
    register,
    uid_where,
    unreadable_flags,
)


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.tournament``."""

    # Who meets whom: round_robin (every pair), k_opponents (each answer `opponents` seeded siblings), swiss
    # (`rounds` rounds pairing answers of similar standing) or single_elimination (a seeded bracket: n-1 games).
    schedule: str = option("round_robin", choices=tournament.SCHEDULES)
    # The reward from the games: win_rate, copeland or bradley_terry (each in [0, 1]).
    aggregation: str = option("bradley_terry", choices=tournament.AGGREGATIONS)
    # k_opponents: the opponents each answer meets (at most the group's other answers).
    opponents: int = option(2, minimum=1)
    # swiss: the rounds; null: ceil(log2(distinct answers)).
    rounds: int | None = option(None, minimum=1)
    # Each game judged in both orders (2), or in one (1: who is shown first drawn per game).
    orders: int = option(2, choices=(1, 2))
    # bradley_terry: virtual games each answer plays against an average one (half won): keeps an unbeaten
    # answer's score finite.
    prior: float = option(1.0, minimum=0.01)
    # With the group's uid, draws the opponents, the order shown, the Swiss tie-breaks and the bracket's seeds
    # reproducibly.
    seed: int = 0
    # The reward of a rollout with no answer (an unclosed <think> block, or empty): at most the loss.
    format_error_reward: float = option(0.0, maximum=0.0)
    # A pairwise judge prompt template file; null: the built-in one (writing_rl/protocols/prompts.py).
    template: str | None = None
    # The judge's system message; null: none.
    system_prompt: str | None = PAIRWISE_SYSTEM
    # What the judge ends with: verdict ([[A]]/[[B]]/[[C]]), scores (A: 7, B: 4) or auto.
    output: str = option("auto", choices=PAIRWISE_OUTPUTS)
    # Scores this close or closer are a tie (scores output).
    tie_margin: float = option(0.0, minimum=0)


@dataclass
class Games:
    """What one group's tournament found: the games judged (as results for the pair's first player) and the
    games that failed."""

    players: int
    results: list[tournament.Result] = field(default_factory=list)
    both_orders: dict[tuple[int, int], list[float]] = field(default_factory=dict)  # (i, j) -> i's scores
    unreadable: list[tuple[tuple[int, int], Unreadable]] = field(default_factory=list)
    errors: list[tuple[int, int]] = field(default_factory=list)  # games whose judge call failed
    played: set[frozenset] = field(default_factory=set)

    def add(self, pair: tuple[int, int], outcome: float | Unreadable | JudgeError) -> None:
        self.played.add(frozenset(pair))
        if isinstance(outcome, Unreadable):
            self.unreadable.append((pair, outcome))
        elif isinstance(outcome, JudgeError):
            self.errors.append(pair)
        else:
            self.results.append(tournament.Result(*pair, outcome))
            self.both_orders.setdefault(pair, []).append(outcome)

    def games_of(self, player: int) -> int:
        return sum(player in (r.i, r.j) for r in self.results)

    def failed_games_of(self, player: int) -> int:
        return sum(player in pair for pair in [*self.errors, *(pair for pair, _ in self.unreadable)])

    def unread_in(self, pair: tuple[int, int]) -> bool:
        return any(p == pair for p, _ in self.unreadable)

    def unread_against(self, player: int) -> set[int]:
        """The opponents ``player`` had a reply fail to read against."""
        return {j if i == player else i for (i, j), _ in self.unreadable if player in (i, j)}

    def knockout_score(self, pair: tuple[int, int]) -> float | None:
        """Who goes on from a bracket game, as the pair's first player's score: the mean of the game's results
        read; after a reply that could not be read, the answer that failed against fewer opponents wins (as
        Blame blames the other); None when nothing tells them apart."""
        if self.unread_in(pair):
            first, second = (len(self.unread_against(player)) for player in pair)
            if first != second:
                return 1.0 if first < second else 0.0
        scores = self.both_orders.get(pair)
        return sum(scores) / len(scores) if scores else None

    def standings(self) -> list[float]:
        return [0.0 if w is None else w for w in tournament.win_rate(self.players, self.results)]


@dataclass
class Blame:
    """Per player, the failed games counted against it: (opponent, the score it is counted as)."""

    counted: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    unreadable: dict[int, list[Unreadable]] = field(default_factory=dict)  # its blamed unreadable replies
    judge_error: set[int] = field(default_factory=set)
    fallback: float = POINTS["loss"]  # what a blamed unreadable game counts as

    @classmethod
    def of(cls, games: Games, on_parse_error: str) -> Blame:
        blame = cls()
        against: dict[int, set[int]] = {}  # player -> the opponents it had a game fail to read against
        for (i, j), failure in games.unreadable:
            blame.fallback = POINTS[fallback_outcome(failure, on_parse_error)]  # (the policy's: never a win)
            against.setdefault(i, set()).add(j)
            against.setdefault(j, set()).add(i)
        for (i, j), failure in games.unreadable:
            most = max(len(against[i]), len(against[j]))
            for player, opponent in ((i, j), (j, i)):
                if len(against[player]) == most:
                    blame.counted.setdefault(player, []).append((opponent, blame.fallback))
                    blame.unreadable.setdefault(player, []).append(failure)
        for i, j in games.errors:
            for player, opponent in ((i, j), (j, i)):
                blame.counted.setdefault(player, []).append((opponent, POINTS["tie"]))
                blame.judge_error.add(player)
        return blame


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """One game: two rollouts of this row's prompt, as training sends it (the run's template, system prompt and
    output)."""
    options = read_options(RewardOptions, dict(reward_kwargs))
    criteria = format_criteria(row.ground_truth.get("criteria") if isinstance(row.ground_truth, dict) else None)
    return comparison_messages(row.prompt, response, response, "A", criteria=criteria, template=options.template,
                               system=options.system_prompt, output=options.output)  # fmt: skip


def failure_score(**_) -> float:
    """What a failed sample is paid (a judge call that failed, a group that never completed): a loss."""
    return 0.0


async def compute_score(
    members: list[Member], *, judge: SampleJudge, on_parse_error: str = "loss", **given: Any
) -> list[dict]:
    """``on_parse_error``: reward.reward_kwargs.on_parse_error, passed by the manager."""
    options = read_options(RewardOptions, given)
    answers = [strip_think(m.text) for m in members]
    players = sorted({a for a in answers if a is not None})  # (sorted: the same games in any arrival order)
    owner = {answer: answers.index(answer) for answer in players}  # the member whose judge records its calls
    rng = random.Random(f"{options.seed}:{members[0].uid}")
    games = Games(len(players))
    referee = _Referee(members[0], players, owner, judge, options, rng)
    for pairs in _rounds(options, len(players), games, rng):
        outcomes = await asyncio.gather(*(referee.game(pair) for pair in pairs))
        for pair, found in zip(pairs, outcomes):
            for outcome in found:
                games.add(pair, outcome)
    return _rewards(answers, players, games, options, Blame.of(games, on_parse_error))


def _witness_games(unread: list[tuple[int, int]], bracket: tournament.Bracket, games: Games) -> list:
    """A bracket game that could not be read is the only game its loser plays, so the blame (the answer that
    failed against more opponents) could not tell its two answers apart: each meets a witness, the best seed
    that has not met both (an answer that already met the witness does not meet it again). The answer that
    breaks the judge's reading fails against the witness too."""
    taken = set(games.played)
    witnessed = []
    for a, b in unread:
        for witness in sorted(range(games.players), key=bracket.seed_of.__getitem__):
            meets = [(min(p, witness), max(p, witness)) for p in (a, b) if frozenset((p, witness)) not in taken]
            if witness not in (a, b) and meets:
                taken.update(frozenset(m) for m in meets)
                witnessed += meets
                break
    return witnessed


def _rounds(options: RewardOptions, n: int, games: Games, rng: random.Random):
    """The schedule's games, a round at a time: one round for a fixed schedule; Swiss rounds, or a bracket's,
    after each other."""
    if n < 2:
        return
    if options.schedule == "round_robin":
        yield tournament.round_robin(n)
    elif options.schedule == "k_opponents":
        yield tournament.k_opponents(n, options.opponents, rng)
    elif options.schedule == "single_elimination":
        bracket = tournament.Bracket(n, rng)
        while not bracket.finished:
            pairs = bracket.games()
            yield pairs
            witnessed = _witness_games([pair for pair in pairs if games.unread_in(pair)], bracket, games)
            if witnessed:
                yield witnessed
            bracket.advance(games.knockout_score)
    else:
        for _ in range(options.rounds or tournament.swiss_rounds_default(n)):
            pairs = tournament.swiss_round(n, games.standings(), games.played, rng)
            if not pairs:
                return
            yield pairs


class _Referee:
    """Judges one game in the orders asked: each order's score for the pair's first player, or its failure."""

    def __init__(self, first: Member, players: list[str], owner: dict, judge: SampleJudge, options, rng):
        criteria = first.ground_truth.get("criteria") if isinstance(first.ground_truth, dict) else None
        self.criteria = format_criteria(criteria)
        self.prompt = first.prompt
        self.players = players
        self.owner = owner  # answer -> the member whose judge records its calls
        self.judge = judge
        self.options = options
        self.rng = rng

    async def game(self, pair: tuple[int, int]) -> list[float | Unreadable | JudgeError]:
        shown_first = pair if self.options.orders == 2 else (self.rng.choice(pair),)
        return list(await asyncio.gather(*(self._judged(pair, first) for first in shown_first)))

    async def _judged(self, pair: tuple[int, int], first: int) -> float | Unreadable | JudgeError:
        """The game with ``first`` shown first (slot A), its verdict read for ``first``: whatever a verdict
        that names no answer counts as (an ensemble's split) falls on the position, never on one answer."""
        second = pair[1] if first == pair[0] else pair[0]
        options = self.options
        messages = comparison_messages(
            self.prompt,
            self.players[first],
            self.players[second],
            "A",
            criteria=self.criteria,
            template=options.template,
            system=options.system_prompt,
            output=options.output,
        )
        judge = self.judge.member(self.owner[self.players[first]])
        try:
            reply = await judge.complete(messages)
        except JudgeError as err:
            return err
        outcome = judge.read(reply, read_outcome, "A", options.output, options.tie_margin)
        if isinstance(outcome, Unreadable):
            return outcome
        return POINTS[outcome] if first == pair[0] else 1.0 - POINTS[outcome]


def _rewards(answers, players: list[str], games: Games, options: RewardOptions, blame: Blame) -> list:
    n = len(players)
    extra = {"prior": options.prior} if options.aggregation == "bradley_terry" else {}
    scores = tournament.aggregate(options.aggregation, n, games.results, **extra)
    for player, counted in blame.counted.items():  # as if it had played its failed games with those results
        with_failures = games.results + [tournament.Result(player, opponent, s) for opponent, s in counted]
        scores[player] = tournament.aggregate(options.aggregation, n, with_failures, **extra)[player]
    if options.schedule in tournament.ADAPTIVE and blame.fallback == POINTS["loss"]:
        for player in blame.unreadable:  # its later pairings were not a loss's
            scores[player] = POINTS["loss"]
    group = _group_metrics(n, games)
    by_answer = {answer: index for index, answer in enumerate(players)}
    results = []
    for answer in answers:
        if answer is None:
            results.append(_result(options.format_error_reward, group, format_error=1))
            continue
        player = by_answer[answer]
        results.append(
            _result(
                0.0 if scores[player] is None else scores[player],  # None: no game at all (a group of one)
                group,
                games=games.games_of(player),
                failed_games=games.failed_games_of(player),
                judge_error=int(player in blame.judge_error),
                unreadable=blame.unreadable.get(player, []),
            )
        )
    return results


def _group_metrics(n: int, games: Games) -> dict[str, float]:
    consistency = tournament.position_consistency(
        (scores[0], scores[1]) for scores in games.both_orders.values() if len(scores) == 2
    )
    return {
        "intransitive_triples": float(tournament.intransitive_triples(n, games.results)),
        "position_consistent": -1.0 if consistency is None else consistency,
    }


def _result(
    score: float,
    group: dict[str, float],
    games: int = 0,
    failed_games: int = 0,
    judge_error: int = 0,
    format_error: int = 0,
    unreadable: list[Unreadable] = (),
) -> dict:
    return {
        "score": float(score),
        "games": games,
        "failed_games": failed_games,
        "judge_error": judge_error,
        "format_error": format_error,
        **group,
        **unreadable_flags(unreadable),
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/tools/preflight/)


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """The schedule's games in a group of ``group_size`` distinct answers, each judged ``orders`` times,
    shared by the group's rollouts."""
    options = read_options(RewardOptions, dict(reward_kwargs))
    return tournament.calls_per_rollout(
        options.schedule, group_size, k=options.opponents, rounds=options.rounds, orders=options.orders
    )


async def probe_outcome(c, judge: SampleJudge, options: dict, on_parse_error: str) -> str:
    """probe-judge: a group of two, the honest answer and the probe, playing one game judged in one order,
    under a uid for which the game's seeded draw shows the probe at A (or B); the probe's reward decides."""
    options = {**options, "schedule": "round_robin", "orders": 1}
    answers = [strip_think(c.row.honest), strip_think(c.reply)]
    uid = "probe-unplaced"
    if None not in answers and answers[0] != answers[1]:
        probe_player = sorted(answers).index(answers[1])  # players are the sorted distinct answers
        seed = int(options.get("seed", 0))
        uid = uid_where(lambda u: (random.Random(f"{seed}:{u}").choice((0, 1)) == probe_player) == (c.slot == "A"),
                        f"{c.probe}-{c.slot}")  # fmt: skip
    group = probe_group(c.row, uid, [c.row.honest, c.reply])
    honest, probe = await compute_score(group, judge=judge, on_parse_error=on_parse_error, **options)
    found = probe_failure(probe, judge) or probe_failure(honest, judge)
    if found:
        return found
    return "unjudged" if answers[0] == answers[1] else by_sign(probe["score"] - honest["score"])


METHOD = register(
    compute_score,
    RewardMethod(
        name="tournament",
        options=RewardOptions,
        failure_score=failure_score,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
        probe=ProbePlacement(probe_outcome, overlay="tournament"),
    ),
)
