"""Tournament group rewards, the pure part (writing_rl/tournament/): the schedules (who meets whom), the
aggregations (each answer's reward from its judged games) and the judge's consistency measures. No judge."""

import math
import random
from collections import Counter
from itertools import combinations

import pytest

from writing_rl.tournament import (
    AGGREGATIONS,
    Bracket,
    Result,
    aggregate,
    bradley_terry,
    bradley_terry_strengths,
    calls_per_rollout,
    copeland,
    intransitive_triples,
    k_opponents,
    position_consistency,
    round_robin,
    swiss_round,
    swiss_rounds_default,
    win_rate,
)

SEEDS = range(5)


def degrees(n, pairs):
    seen = Counter(p for pair in pairs for p in pair)
    return [seen[p] for p in range(n)]


def kendall_tau(xs, ys):
    concordance = [
        math.copysign(1, xs[a] - xs[b]) * math.copysign(1, ys[a] - ys[b]) for a, b in combinations(range(len(xs)), 2)
    ]
    return sum(concordance) / len(concordance)


def random_results(rng, n, games):
    results = []
    for _ in range(games):
        i, j = rng.sample(range(n), 2)
        results.append(Result(i, j, rng.choice([0.0, 0.5, 1.0])))
    return results


# ---------------------------------------------------------------- schedules


@pytest.mark.parametrize("n", range(1, 11))
def test_the_round_robin_is_every_pair_once(n):
    assert round_robin(n) == sorted(combinations(range(n), 2))


def test_k_opponents_gives_everyone_k_or_k_plus_1_games_and_no_pair_twice():
    for n in range(2, 21):
        for k in range(1, n):
            for seed in range(3):
                pairs = k_opponents(n, k, random.Random(seed))
                assert all(0 <= i < j < n for i, j in pairs), (n, k)
                assert len(set(pairs)) == len(pairs) == math.ceil(n * k / 2), (n, k)
                assert Counter(degrees(n, pairs)) == ({k: n} if n * k % 2 == 0 else {k: n - 1, k + 1: 1}), (n, k)


@pytest.mark.parametrize("n", range(1, 13))
def test_k_opponents_with_n_minus_1_opponents_or_more_is_the_round_robin(n):
    for k in (max(n - 1, 1), n + 3):
        assert k_opponents(n, k, random.Random(n)) == round_robin(n)


def test_k_opponents_is_drawn_from_the_seed():
    assert k_opponents(12, 3, random.Random(7)) == k_opponents(12, 3, random.Random(7))
    assert len({tuple(k_opponents(12, 3, random.Random(seed))) for seed in range(10)}) > 1


def test_k_opponents_refuses_fewer_than_one_opponent():
    with pytest.raises(ValueError, match="at least 1"):
        k_opponents(5, 0, random.Random(0))


@pytest.mark.parametrize("n", range(2, 13))
def test_a_first_swiss_round_pairs_neighbours_in_the_standings_and_the_last_sits_out(n):
    standings = list(random.Random(n).sample(range(100), n))
    ranked = sorted(range(n), key=lambda p: -standings[p])
    pairs = swiss_round(n, standings, set(), random.Random(0))
    assert pairs == [tuple(sorted(ranked[r : r + 2])) for r in range(0, n - 1, 2)]


def rematch_free_pairing_exists(players, played):
    if len(players) % 2:
        return any(rematch_free_pairing_exists([p for p in players if p != bye], played) for bye in players)
    if not players:
        return True
    first, rest = players[0], players[1:]
    return any(
        frozenset((first, other)) not in played and rematch_free_pairing_exists([p for p in rest if p != other], played)
        for other in rest
    )


def test_a_swiss_round_avoids_a_rematch_whenever_one_can_be_avoided():
    rng = random.Random(0)
    for _ in range(400):
        n = rng.randint(2, 9)
        played = {frozenset(pair) for pair in round_robin(n) if rng.random() < rng.choice([0.2, 0.5, 0.8])}
        standings = [rng.choice([0.0, 0.5, 1.0, 2.0]) for _ in range(n)]
        pairs = swiss_round(n, standings, played, random.Random(rng.random()))
        assert len(pairs) == n // 2 and len(set(degrees(n, pairs)) - {0, 1}) == 0, (n, pairs)
        if rematch_free_pairing_exists(list(range(n)), played):
            assert not any(frozenset(pair) in played for pair in pairs), (n, played, pairs)


def test_a_swiss_tournament_plays_its_rounds_without_rematches_and_the_leaders_meet():
    for n in range(2, 17):
        for seed in SEEDS:
            rng, points, played = random.Random(seed), [0.0] * n, set()
            for _ in range(swiss_rounds_default(n)):
                pairs = swiss_round(n, points, played, rng)
                assert len(pairs) == n // 2 and max(degrees(n, pairs)) == 1
                assert not any(frozenset(pair) in played for pair in pairs), (n, seed, pairs)
                if n == 8:
                    assert all(points[i] == points[j] for i, j in pairs), (seed, points, pairs)
                for i, j in pairs:
                    points[i] += 1.0
                    played.add(frozenset((i, j)))
            if n % 2 == 0:
                assert points[0] == swiss_rounds_default(n), (n, seed)


def test_swiss_plays_ceil_log2_n_rounds():
    assert [swiss_rounds_default(n) for n in (1, 2, 3, 4, 5, 8, 9, 16, 17, 64)] == [0, 1, 2, 2, 3, 3, 4, 4, 5, 6]


def test_calls_per_rollout_counts_each_schedules_games():
    assert calls_per_rollout("round_robin", 8) == 28 / 8
    assert calls_per_rollout("round_robin", 8, orders=2) == 7.0
    for n in range(2, 13):
        for k in range(1, n + 2):
            assert (
                calls_per_rollout("k_opponents", n, k=k, orders=2) == len(k_opponents(n, k, random.Random(0))) * 2 / n
            )
    assert calls_per_rollout("swiss", 8) == 3 * 4 / 8
    assert calls_per_rollout("swiss", 7, rounds=4, orders=2) == 4 * 3 * 2 / 7
    assert calls_per_rollout("round_robin", 1) == 0.0
    with pytest.raises(ValueError, match="needs k"):
        calls_per_rollout("k_opponents", 8)
    for n in (1, 2, 7, 8):
        assert calls_per_rollout("single_elimination", n, orders=2) == 2 * (n - 1) / n
    with pytest.raises(ValueError, match="round_robin, k_opponents, swiss, single_elimination"):
        calls_per_rollout("elimination", 8)


def knockout(n: int, seed: int, strength) -> tuple[list[list[tuple[int, int]]], int]:
    """A bracket played out with the stronger player winning each game: its rounds' games, and the champion."""
    bracket, rounds = Bracket(n, random.Random(seed)), []
    while not bracket.finished:
        rounds.append(bracket.games())
        bracket.advance(lambda pair: 1.0 if strength(pair[0]) > strength(pair[1]) else 0.0)
    return rounds, bracket.slots[0] if bracket.slots else None


@pytest.mark.parametrize("n", range(1, 18))
def test_a_bracket_plays_n_minus_1_games_everyone_once_a_round_and_the_strongest_wins(n):
    for seed in SEEDS:
        rounds, champion = knockout(n, seed, strength=lambda p: p)
        assert sum(len(games) for games in rounds) == max(n - 1, 0)
        assert len(rounds) == (n - 1).bit_length()  # ceil(log2 n) rounds
        for games in rounds:
            players = [p for game in games for p in game]
            assert len(players) == len(set(players)) and all(a < b for a, b in games)
        assert champion == (n - 1 if n else None)
        beaten = Counter(min(game) for games in rounds for game in games)  # the weaker of each game is out
        assert all(count == 1 for count in beaten.values()) and len(beaten) == max(n - 1, 0)


def test_a_seeded_bracket_keeps_the_first_seeds_apart_until_the_final():
    # players drawn into seeds; with the better seed winning every game, seeds 1 and 2 meet in the final and
    # every first-round game of a full bracket pairs seeds summing to n + 1
    for n in (4, 8, 16):
        for seed in SEEDS:
            bracket = Bracket(n, random.Random(seed))
            rank = bracket.seed_of
            first = bracket.games()
            assert {rank[a] + rank[b] for a, b in first} == {n - 1}  # 0-based seeds: s and n-1-s
            rounds, champion = knockout(n, seed, strength=lambda p, rank=rank: -rank[p])
            assert {rank[p] for p in rounds[-1][0]} == {0, 1} and rank[champion] == 0
            assert {rank[p] for game in rounds[-2] for p in game} == {0, 1, 2, 3}


def test_byes_go_to_the_first_seeds_and_a_tied_or_unread_game_sends_the_better_seed_on():
    bracket = Bracket(5, random.Random(1))
    rank = bracket.seed_of
    (game,) = bracket.games()  # 5 players in 8 slots: seeds 4 and 5 play, seeds 1-3 sit out
    assert sorted(rank[p] for p in game) == [3, 4]
    for undecided in (None, 0.5):
        again = Bracket(5, random.Random(1))
        again.advance(lambda pair, undecided=undecided: undecided)
        better = min(game, key=rank.__getitem__)
        assert better in again.slots and max(game, key=rank.__getitem__) not in again.slots
    # the better seed goes on whatever the players' numbers: draws where it is the game's higher-numbered player
    brackets = [Bracket(4, random.Random(s)) for s in range(20)]
    upsets = [b for b in brackets if min(b.games()[0], key=b.seed_of.__getitem__) == b.games()[0][1]]
    assert upsets
    for tied in upsets:
        lower, higher = tied.games()[0]
        tied.advance(lambda pair: 0.5)
        assert higher in tied.slots and lower not in tied.slots
    decided = Bracket(5, random.Random(1))
    decided.advance(lambda pair: 0.25)  # the pair's second player won on the mean of its results
    assert game[1] in decided.slots and game[0] not in decided.slots
    assert len(decided.slots) == 4 and None not in decided.slots


# ---------------------------------------------------------------- aggregations


def test_win_rate_is_the_mean_score_over_a_players_results():
    results = [Result(0, 1, 1.0), Result(1, 2, 0.5), Result(2, 0, 1.0), Result(0, 1, 1.0)]
    assert win_rate(3, results) == pytest.approx([2 / 3, 1 / 6, 3 / 4])


def test_copeland_counts_each_opponent_once_by_the_net_of_their_results():
    both_orders_split = [Result(0, 1, 1.0), Result(1, 0, 1.0), Result(0, 2, 1.0), Result(2, 0, 0.0)]
    assert copeland(3, both_orders_split) == pytest.approx([0.75, 0.5, 0.0])
    cycle = [Result(0, 1, 1.0)] * 3 + [Result(0, 1, 0.0), Result(2, 0, 1.0), Result(1, 2, 1.0)]
    assert copeland(3, cycle) == pytest.approx([0.5, 0.5, 0.5])
    assert win_rate(3, cycle) == pytest.approx([3 / 5, 2 / 5, 1 / 2])


def test_a_player_with_no_results_gets_none_from_every_aggregation():
    for name in AGGREGATIONS:
        rewards = aggregate(name, 3, [Result(0, 1, 1.0)])
        assert rewards[2] is None and rewards[0] > rewards[1], name
        assert aggregate(name, 2, []) == [None, None], name


def test_every_reward_lies_in_0_1_and_is_none_only_without_results():
    rng = random.Random(0)
    for _ in range(60):
        n = rng.randint(2, 10)
        results = random_results(rng, n, rng.randint(0, 3 * n))
        present = {p for r in results for p in (r.i, r.j)}
        for name in AGGREGATIONS:
            for p, reward in enumerate(aggregate(name, n, results)):
                assert (reward is None) == (p not in present), name
                assert reward is None or 0.0 <= reward <= 1.0, name
        assert all(r is None or 0.0 < r < 1.0 for r in bradley_terry(n, results))


def test_aggregate_dispatches_by_name_and_names_the_choices_for_an_unknown_one():
    results = random_results(random.Random(1), 5, 12)
    assert aggregate("win_rate", 5, results) == win_rate(5, results)
    assert aggregate("copeland", 5, results) == copeland(5, results)
    assert aggregate("bradley_terry", 5, results, prior=3.0) == bradley_terry(5, results, prior=3.0)
    with pytest.raises(ValueError, match="'elo'.*win_rate, copeland, bradley_terry"):
        aggregate("elo", 5, results)


@pytest.mark.parametrize("bad", [Result(1, 1, 1.0), Result(0, 3, 1.0), Result(-1, 0, 0.0), Result(0, 1, 1.5)])
def test_a_malformed_result_is_refused(bad):
    for name in AGGREGATIONS:
        with pytest.raises(ValueError, match="result"):
            aggregate(name, 3, [bad])


# ---------------------------------------------------------------- Bradley-Terry


@pytest.mark.parametrize("n", range(2, 13))
def test_bradley_terry_orders_a_strict_round_robin(n):
    rewards = bradley_terry(n, [Result(i, j, 1.0) for i, j in round_robin(n)])
    assert all(a > b for a, b in zip(rewards, rewards[1:])), rewards


def test_the_prior_keeps_an_unbeaten_player_finite_and_below_1():
    strengths = bradley_terry_strengths(2, [Result(0, 1, 1.0)])
    assert strengths[0] * strengths[1] == pytest.approx(1.0)
    assert 0.75 < bradley_terry(2, [Result(0, 1, 1.0)])[0] < 0.85
    assert bradley_terry(2, [Result(0, 1, 1.0)], prior=10.0)[0] < 0.6
    unbeaten = bradley_terry(4, [Result(i, j, 1.0) for i, j in round_robin(4)])
    assert 0.85 < unbeaten[0] < 0.92 and 0.08 < unbeaten[3] < 0.15
    assert bradley_terry_strengths(3, [Result(0, 1, 1.0)])[2] == 1.0


def test_bradley_terry_is_the_maximum_likelihood_fit_with_the_prior():
    """At the maximum each player's expected wins (virtual games included) equal its wins: the gradient is 0."""
    rng = random.Random(3)
    for prior in (0.5, 1.0, 4.0):
        n = 6
        results = random_results(rng, n, 40)
        p = bradley_terry_strengths(n, results, prior=prior)
        for i in range(n):
            wins = prior / 2 + sum(r.score for r in results if r.i == i) + sum(1 - r.score for r in results if r.j == i)
            expected = prior * p[i] / (p[i] + 1) + sum(
                p[i] / (p[i] + p[r.j if r.i == i else r.i]) for r in results if i in (r.i, r.j)
            )
            assert expected == pytest.approx(wins, rel=1e-6), (prior, i)


def test_bradley_terry_recovers_the_order_of_known_strengths():
    for seed in range(3):
        rng = random.Random(seed)
        truth = [math.exp(x) for x in (-2.0, -1.4, -0.8, -0.3, 0.3, 0.8, 1.4, 2.0)]
        rng.shuffle(truth)
        results = [
            Result(i, j, float(rng.random() < truth[i] / (truth[i] + truth[j])))
            for i, j in round_robin(8)
            for _ in range(20)
        ]
        assert kendall_tau(bradley_terry(8, results), truth) >= 0.8, seed


def test_bradley_terry_counts_a_tie_as_half_a_win_to_each_side():
    assert bradley_terry(2, [Result(0, 1, 0.5)]) == pytest.approx([0.5, 0.5])
    tied_pair = bradley_terry(3, [Result(0, 1, 0.5), Result(1, 0, 0.5), Result(0, 2, 1.0), Result(2, 1, 0.0)])
    assert tied_pair[0] == pytest.approx(tied_pair[1]) and tied_pair[2] < tied_pair[0]
    assert bradley_terry(3, [Result(0, 1, 0.5), Result(0, 1, 0.5), Result(1, 2, 1.0)]) == pytest.approx(
        bradley_terry(3, [Result(0, 1, 1.0), Result(0, 1, 0.0), Result(1, 2, 1.0)])
    )


# ---------------------------------------------------------------- measures of the judge


def test_intransitive_triples_counts_each_cycle_once_by_the_pairs_net_outcomes():
    rock_paper_scissors = [Result(0, 1, 1.0), Result(1, 2, 1.0), Result(2, 0, 1.0)]
    assert intransitive_triples(3, rock_paper_scissors) == 1
    assert intransitive_triples(3, [Result(j, i, s) for i, j, s in rock_paper_scissors]) == 1
    assert intransitive_triples(3, [Result(0, 1, 1.0), Result(1, 2, 1.0), Result(0, 2, 1.0)]) == 0
    assert intransitive_triples(3, rock_paper_scissors[:2] + [Result(2, 0, 0.5)]) == 0
    assert intransitive_triples(3, rock_paper_scissors + [Result(0, 2, 1.0)] * 2) == 0
    shifted = [Result(i + 3, j + 3, s) for i, j, s in rock_paper_scissors]
    assert intransitive_triples(6, rock_paper_scissors + shifted + [Result(0, 3, 1.0)]) == 2


def test_a_total_order_has_no_intransitive_triples_however_labelled():
    for seed in SEEDS:
        order = list(range(9))
        random.Random(seed).shuffle(order)
        results = [Result(order[a], order[b], 1.0) for a, b in round_robin(9)]
        assert intransitive_triples(9, results) == 0


def test_position_consistency_is_the_share_of_pairs_whose_two_orders_agree():
    assert position_consistency([(1.0, 1.0), (1.0, 0.0), (0.5, 0.5), (0.0, 1.0)]) == 0.5
    assert position_consistency([(0.0, 0.0)]) == 1.0
    assert position_consistency([]) is None
