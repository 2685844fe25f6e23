"""Tournament group rewards: the distinct answers of one prompt play games judged by a pairwise judge (any
pairwise judge or GenRM, with our pairwise prompt), and each rollout's reward aggregates its games.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.tournament`` under
``writing_rl.reward_loop.group_manager.GroupRewardManager`` (hydra_configs/tournament.yaml). Options under
``reward.custom_reward_function.reward_kwargs``; the maths is in writing_rl/tournament/.

Per group: the responses are stripped of closed ``<think>`` blocks and identical answers are one player
(judged once, the copies share its reward). ``schedule`` says who meets whom: ``round_robin`` (every pair),
``k_opponents`` (each player ``opponents`` seeded siblings, balanced) or ``swiss`` (``rounds`` rounds, each
pairing players of similar standing who have not met). Each game is judged in both orders (``orders: 2``)
or in one (``orders: 1``, who is shown first drawn per game, so that a position bias averages out).
``aggregation`` turns the games into a reward in [0, 1]: ``win_rate`` (the mean score, a tie half a win),
``copeland`` (pairs won, a tied pair half) or ``bradley_terry`` (the expected score against the group's
other players under a Bradley-Terry fit, ties half a win, ``prior`` virtual games for a finite score).
Seeds derive from ``seed`` and the group's uid: the same group gets the same games in any arrival order.

Failures never pay more than a loss (0). A game whose call failed or whose reply cannot be read is left out
and counted (``failed_games``); a player every one of whose games failed to read is the culprit and gets 0
with ``parse_error=1`` (under ``on_parse_error=loss``; ``tie`` gives it 0.5 like a tie, ``raise`` stops the
step), and a player with no game left (all its calls failed) gets 0 with ``judge_error=1``. A rollout
without an answer gets ``format_error_reward``.
Judge calls per group: round robin d(d-1)/2, k_opponents ceil(d k / 2), swiss rounds * floor(d/2) games for
d distinct answers, times ``orders``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any, Mapping

from writing_rl import tournament
from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import PAIRWISE_OUTPUTS, Unreadable, strip_think
from writing_rl.protocols.comparison import SLOTS, comparison_messages, read_outcome
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM, format_criteria, pairwise_messages
from writing_rl.reward_loop.contract import (
    Member,
    RewardMethod,
    option,
    raise_if_asked,
    read_options,
    register,
    unreadable_flags,
)

SCORE = {"win": 1.0, "tie": 0.5, "loss": 0.0}  # the first-named player's score in a game


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.tournament``."""

    # Who meets whom: round_robin (every pair), k_opponents (each answer `opponents` seeded siblings) or
    # swiss (`rounds` rounds pairing answers of similar standing).
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
    # With the group's uid, draws the opponents, the order shown and the Swiss tie-breaks reproducibly.
    seed: int = 0
    # The reward of a rollout with no answer (an unclosed <think> block, or empty).
    format_error_reward: float = 0.0
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
    """What one group's tournament found: the games judged and what failed, per player."""

    players: int
    results: list[tournament.Result] = field(default_factory=list)
    both_orders: dict[tuple[int, int], list[float]] = field(default_factory=dict)  # (i, j) -> i's scores
    unreadable: dict[int, list[Unreadable]] = field(default_factory=dict)
    failed: dict[int, int] = field(default_factory=dict)  # player -> games left out (any failure)
    judge_errors: dict[int, int] = field(default_factory=dict)
    played: set[frozenset] = field(default_factory=set)

    def add(self, pair: tuple[int, int], outcome: str | Unreadable | JudgeError) -> None:
        i, j = pair
        self.played.add(frozenset(pair))
        if not isinstance(outcome, (Unreadable, JudgeError)):  # (an Unreadable is a str too)
            self.results.append(tournament.Result(i, j, SCORE[outcome]))
            self.both_orders.setdefault(pair, []).append(SCORE[outcome])
            return
        for player in pair:
            self.failed[player] = self.failed.get(player, 0) + 1
            if isinstance(outcome, JudgeError):
                self.judge_errors[player] = self.judge_errors.get(player, 0) + 1
            else:
                self.unreadable.setdefault(player, []).append(outcome)

    def games_of(self, player: int) -> int:
        return sum(player in (r.i, r.j) for r in self.results)

    def standings(self) -> list[float]:
        return [0.0 if w is None else w for w in tournament.win_rate(self.players, self.results)]


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
    play = _Player(members[0], players, owner, judge, options, rng)
    for pairs in _rounds(options, len(players), games, rng):
        outcomes = await asyncio.gather(*(play.game(pair) for pair in pairs))
        for pair, found in zip(pairs, outcomes):
            for outcome in found:
                games.add(pair, outcome)
    return _rewards(answers, players, games, options, on_parse_error)


def _rounds(options: RewardOptions, n: int, games: Games, rng: random.Random):
    """The schedule's games, a round at a time: one round for a fixed schedule, Swiss rounds after each other."""
    if n < 2:
        return
    if options.schedule == "round_robin":
        yield tournament.round_robin(n)
    elif options.schedule == "k_opponents":
        yield tournament.k_opponents(n, options.opponents, rng)
    else:
        for _ in range(options.rounds or tournament.swiss_rounds_default(n)):
            pairs = tournament.swiss_round(n, games.standings(), games.played, rng)
            if not pairs:
                return
            yield pairs


class _Player:
    """Judges one game in the orders asked: each order's outcome for the pair's first player, or its failure."""

    def __init__(self, first: Member, players: list[str], owner: dict, judge: SampleJudge, options, rng):
        criteria = first.ground_truth.get("criteria") if isinstance(first.ground_truth, dict) else None
        self.criteria = format_criteria(
            list(criteria) if criteria is not None and not isinstance(criteria, str) else criteria
        )
        self.prompt, self.players, self.owner, self.judge, self.options, self.rng = (
            first.prompt,
            players,
            owner,
            judge,
            options,
            rng,
        )

    async def game(self, pair: tuple[int, int]) -> list[str | Unreadable | JudgeError]:
        slots = SLOTS if self.options.orders == 2 else (self.rng.choice(SLOTS),)
        return list(await asyncio.gather(*(self._judged(pair, slot) for slot in slots)))

    async def _judged(self, pair: tuple[int, int], slot: str) -> str | Unreadable | JudgeError:
        candidate, other = (self.players[p] for p in pair)
        options = self.options
        messages = comparison_messages(
            self.prompt,
            candidate,
            other,
            slot,
            criteria=self.criteria,
            template=options.template,
            system=options.system_prompt,
            output=options.output,
        )
        try:
            reply = await self.judge.member(self.owner[candidate]).complete(messages)
        except JudgeError as err:
            return err
        return self.judge.read(reply, read_outcome, slot, options.output, options.tie_margin)


def _rewards(answers, players: list[str], games: Games, options: RewardOptions, on_parse_error: str) -> list:
    culprits = _culprits(games, on_parse_error)
    kept = [r for r in games.results if r.i not in culprits and r.j not in culprits]
    extra = {"prior": options.prior} if options.aggregation == "bradley_terry" else {}
    scores = tournament.aggregate(options.aggregation, len(players), kept, **extra)
    group = _group_metrics(len(players), kept, games)
    by_answer = {answer: index for index, answer in enumerate(players)}
    results = []
    for answer in answers:
        if answer is None:
            results.append(_result(options.format_error_reward, group, format_error=1))
            continue
        player = by_answer[answer]
        unreadable = games.unreadable.get(player, [])
        common = dict(games=games.games_of(player), failed_games=games.failed.get(player, 0), unreadable=unreadable)
        if player in culprits:
            results.append(_result(_culprit_score(on_parse_error), group, parse_error=1, **common))
        elif scores[player] is None:  # no game left: every call it was in failed (or a group of one)
            failed = games.failed.get(player, 0) > 0
            results.append(_result(0.0, group, judge_error=int(failed and not unreadable), **common))
        else:
            results.append(_result(scores[player], group, **common))
    return results


def _culprits(games: Games, on_parse_error: str) -> set[int]:
    """Players every one of whose games failed to read, with at least one unreadable reply: their text, not
    the judge, broke the reading (a judge that breaks on every game makes every player one, all paid 0)."""
    for failures in games.unreadable.values():
        raise_if_asked(failures[0], on_parse_error)
    return {p for p, found in games.unreadable.items() if found and games.games_of(p) == 0}


def _culprit_score(on_parse_error: str) -> float:
    return SCORE["tie"] if on_parse_error == "tie" else SCORE["loss"]


def _group_metrics(n: int, results: list, games: Games) -> dict[str, float]:
    consistency = tournament.position_consistency(
        (scores[0], scores[1]) for scores in games.both_orders.values() if len(scores) == 2
    )
    return {
        "intransitive_triples": float(tournament.intransitive_triples(n, results)),
        "position_consistency": -1.0 if consistency is None else consistency,
    }


def _result(
    score: float,
    group: dict[str, float],
    games: int = 0,
    failed_games: int = 0,
    judge_error: int = 0,
    format_error: int = 0,
    parse_error: int = 0,
    unreadable: list[Unreadable] = (),
) -> dict:
    flags = unreadable_flags(unreadable if parse_error else ())
    flags["parse_error"] = max(flags["parse_error"], parse_error)
    return {
        "score": float(score),
        "games": games,
        "failed_games": failed_games,
        "judge_error": judge_error,
        "format_error": format_error,
        **group,
        **flags,
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/tools/preflight/)


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """One game: two rollouts of this row's prompt."""
    truth = row.ground_truth if isinstance(row.ground_truth, dict) else {}
    criteria = truth.get("criteria")
    criteria = format_criteria(list(criteria) if criteria is not None and not isinstance(criteria, str) else criteria)
    system = reward_kwargs.get("system_prompt", PAIRWISE_SYSTEM)
    return pairwise_messages(
        row.prompt, response, response, criteria=criteria, template=reward_kwargs.get("template"), system=system
    )


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """The schedule's games in a group of ``group_size`` distinct answers, each judged ``orders`` times,
    shared by the group's rollouts."""
    options = read_options(RewardOptions, dict(reward_kwargs))
    return tournament.calls_per_rollout(
        options.schedule, group_size, k=options.opponents, rounds=options.rounds, orders=options.orders
    )


METHOD = register(
    compute_score,
    RewardMethod(
        name="tournament",
        options=RewardOptions,
        failure_score=failure_score,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
    ),
)
