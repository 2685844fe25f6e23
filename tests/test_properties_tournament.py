"""Properties of tournament rewards (writing_rl/tournament/, reward_fns/tournament.py) on arbitrary groups,
judges and failure patterns, drawn by hypothesis with a fixed seed (the same examples in every run)."""

from __future__ import annotations

import asyncio
import math
import random
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_fns.tournament import compute_score, failure_score
from writing_rl import tournament
from writing_rl.judge import SampleJudge
from writing_rl.reward_loop.contract import Member

from offline_helpers import TableJudge

PROPERTY = settings(
    derandomize=True, database=None, deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
)
FEW = settings(PROPERTY, max_examples=50)  # Bradley-Terry fits, and whole groups' tournaments

SCORES = st.sampled_from([0.0, 0.5, 1.0])
OPTION_SETS = st.fixed_dictionaries(
    {
        "schedule": st.sampled_from(tournament.SCHEDULES),
        "aggregation": st.sampled_from(tournament.AGGREGATIONS),
        "orders": st.sampled_from([1, 2]),
        "opponents": st.integers(1, 4),
    }
)


# ---------------------------------------------------------------- the pure maths


def schedule_games(schedule: str, n: int, k: int, rng: random.Random) -> list[tuple[int, int]]:
    """A fixed schedule's games (Swiss and a bracket: the first round)."""
    if schedule == "round_robin":
        return tournament.round_robin(n)
    if schedule == "k_opponents":
        return tournament.k_opponents(n, k, rng)
    if schedule == "single_elimination":
        return tournament.Bracket(n, rng).games()
    return tournament.swiss_round(n, [0.0] * n, set(), rng)


@st.composite
def played(draw, schedules=tournament.SCHEDULES, min_n=2):
    """(n, results): a schedule's games, each judged in one or two orders with any scores in {0, 0.5, 1}."""
    n = draw(st.integers(min_n, 7))
    schedule = draw(st.sampled_from(schedules))
    games = schedule_games(schedule, n, draw(st.integers(1, n)), random.Random(draw(st.integers(0, 999))))
    orders = draw(st.sampled_from([1, 2]))
    scores = draw(st.lists(SCORES, min_size=len(games) * orders, max_size=len(games) * orders))
    return n, [tournament.Result(i, j, s) for (i, j), s in zip(games * orders, scores)]


def present(results) -> set[int]:
    return {p for r in results for p in (r.i, r.j)}


@PROPERTY
@given(played(schedules=("round_robin",)))
def test_under_a_round_robin_the_win_rates_and_copeland_scores_of_a_group_average_one_half(case):
    """Every result pays its two players 1 between them and every player plays as many results."""
    n, results = case
    for name in ("win_rate", "copeland"):
        assert sum(tournament.aggregate(name, n, results)) / n == pytest.approx(0.5, abs=1e-12), name


@FEW
@given(played(), st.floats(0.01, 10.0))
def test_bradley_terry_rewards_average_one_half_over_the_players_with_results_under_any_schedule(case, prior):
    """sum over i != j of p_i / (p_i + p_j) is half the ordered pairs, whatever the strengths."""
    n, results = case
    rewards = tournament.bradley_terry(n, results, prior=prior)
    played_by = present(results)
    assert [r is None for r in rewards] == [i not in played_by for i in range(n)]
    assert all(0.0 < rewards[i] < 1.0 for i in played_by)
    assert sum(rewards[i] for i in played_by) / len(played_by) == pytest.approx(0.5, abs=1e-9)


@FEW
@given(played(schedules=("round_robin",)), st.floats(0.01, 10.0))
def test_in_a_balanced_round_robin_bradley_terry_ranks_as_the_win_rates_for_any_prior(case, prior):
    """Each player meets the same opponents as often (and the prior's virtual one), so a higher strength means a
    higher expected score: the fit's order is the order of the scores won. The prior sets the spread only."""
    n, results = case  # (every pair judged in as many orders: balanced)
    wins = tournament.win_rate(n, results)
    bt = tournament.bradley_terry(n, results, prior=prior)
    for a, b in combinations(range(n), 2):
        if abs(wins[a] - wins[b]) < 1e-12:
            assert bt[a] == pytest.approx(bt[b], abs=1e-6)
        else:
            assert (bt[a] > bt[b]) == (wins[a] > wins[b]), (a, b, wins, bt)


@PROPERTY
@given(played(), st.data())
def test_every_aggregation_is_blind_to_the_players_labels_and_to_which_side_a_result_is_written_from(case, data):
    n, results = case
    perm = data.draw(st.permutations(range(n)))
    relabelled = [tournament.Result(perm[r.i], perm[r.j], r.score) for r in results]
    flipped = [tournament.Result(r.j, r.i, 1.0 - r.score) for r in results]
    for name in tournament.AGGREGATIONS:
        base = tournament.aggregate(name, n, results)
        moved = tournament.aggregate(name, n, relabelled)
        turned = tournament.aggregate(name, n, flipped)
        for i in range(n):
            assert moved[perm[i]] == pytest.approx(base[i], abs=1e-7), name
            assert turned[i] == pytest.approx(base[i], abs=1e-7), name


@PROPERTY
@given(played(), st.data())
def test_a_lost_game_never_pays_more_than_any_other_result_of_that_game(case, data):
    """What the tournament counts a failed game as (a loss) is the floor of what the game could have paid."""
    n, results = case
    player, opponent = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    other = data.draw(st.floats(0.0, 1.0))
    for name in tournament.AGGREGATIONS:
        lost = tournament.aggregate(name, n, [*results, tournament.Result(player, opponent, 0.0)])[player]
        got = tournament.aggregate(name, n, [*results, tournament.Result(player, opponent, other)])[player]
        assert lost <= got + 1e-7, (name, lost, got)


# ---------------------------------------------------------------- whole groups, through the reward function


def members(texts, uid="group-1"):
    return [Member(uid, t, len(t), "Write a toast.", "writing", {"prompt": "Write a toast."}, {}) for t in texts]


def run(texts, table, uid="group-1", **options):
    judge = TableJudge(table)
    return asyncio.run(compute_score(members(texts, uid), judge=SampleJudge(judge), **options)), judge


def texts_of(n: int) -> list[str]:
    return [f"toast number {i}" for i in range(n)]


@st.composite
def verdict_tables(draw, texts, verdicts=("A", "B", "C")):
    """Any judge over these texts: a verdict per ordered pair, so also one that follows the position."""
    pairs = [(a, b) for a in texts for b in texts if a != b]
    return dict(zip(pairs, draw(st.lists(st.sampled_from(verdicts), min_size=len(pairs), max_size=len(pairs)))))


def losing(table, player: str, opponents) -> dict:
    """The table with ``player`` losing every game against ``opponents``, in both orders."""
    table = dict(table)
    for other in opponents:
        table[(player, other)], table[(other, player)] = "B", "A"
    return table


def recomputed(texts, judge: TableJudge, aggregation: str, prior: float) -> list[float]:
    """Each text's reward from the judge's own replies (all readable) over the games it was asked about."""
    index = {t: i for i, t in enumerate(texts)}
    score = {"A": 1.0, "B": 0.0, "C": 0.5}
    results = [tournament.Result(index[a], index[b], score[judge.table[(a, b)]]) for a, b in judge.asked]
    extra = {"prior": prior} if aggregation == "bradley_terry" else {}
    return [0.0 if s is None else s for s in tournament.aggregate(aggregation, len(texts), results, **extra)]


@FEW
@given(st.data(), OPTION_SETS)
def test_breaking_the_judge_in_any_of_its_games_never_pays_an_answer_more_than_losing_them(data, options):
    """The exploit a policy would look for, under every schedule, aggregation and order, against any judge: text
    that makes the judge's replies unreadable in a chosen set of its games. Under the fixed schedules those games
    are counted exactly as losses; under Swiss and a bracket, whose later rounds pair on the results so far (so a
    failed game changes the answer's later opponents), an answer blamed for one is paid the loss outright."""
    texts = texts_of(data.draw(st.integers(2, 6)))
    table = data.draw(verdict_tables(texts))
    me = data.draw(st.sampled_from(texts))
    chosen = data.draw(st.sets(st.sampled_from([t for t in texts if t != me]), min_size=1))
    garbled = dict(table)
    for other in chosen:
        garbled[(me, other)] = garbled[(other, me)] = "garbled"
    failed, judge = run(texts, garbled, **options)
    lost, _ = run(texts, losing(table, me, chosen), **options)
    mine = texts.index(me)
    assert failed[mine]["score"] <= lost[mine]["score"] + 1e-9, (failed[mine], lost[mine])
    met = {b if a == me else a for a, b in judge.asked if me in (a, b)} & chosen
    assert failed[mine]["parse_error"] == int(bool(met))
    if options["schedule"] in tournament.ADAPTIVE:
        assert failed[mine]["score"] == 0.0 or not met
    else:
        assert failed[mine]["score"] == pytest.approx(lost[mine]["score"], abs=1e-6)


@FEW
@given(st.data(), OPTION_SETS, st.integers(0, 10**6))
def test_an_answer_that_breaks_every_reading_is_the_only_one_blamed_and_costs_no_other_its_games(data, options, seed):
    """With three answers or more, the answer whose every game fails to read is blamed and paid at most what
    losing every game pays. Under a round robin and a bracket every other answer meets another opponent and is
    not blamed: a bracket's unread game is followed by a game of each of its two answers against a witness, so
    the breaker is told apart. (Under k_opponents and Swiss an answer may fail to read only against the breaker
    as often as the breaker fails: both are blamed.)"""
    texts = texts_of(data.draw(st.integers(3, 7)))
    breaker = data.draw(st.sampled_from(texts))
    table = data.draw(verdict_tables(texts))
    broken = {pair: "garbled" if breaker in pair else verdict for pair, verdict in table.items()}
    results, judge = run(texts, broken, seed=seed, **options)
    lost, _ = run(texts, losing(table, breaker, texts), seed=seed, **options)
    mine = texts.index(breaker)
    assert results[mine]["parse_error"] == 1 and results[mine]["score"] <= lost[mine]["score"] + 1e-9
    if options["schedule"] not in ("round_robin", "single_elimination"):
        return  # (k_opponents and Swiss may leave an answer whose failed games all were against the breaker)
    for text, result in zip(texts, results):
        met = {a if b == text else b for a, b in judge.asked if text in (a, b)}
        if text != breaker:
            assert met - {breaker} and result["parse_error"] == 0, (text, met, result)


def test_under_swiss_breaking_the_judge_in_a_game_it_would_lose_pays_no_more_than_losing_it():
    """Three answers, the judge preferring 0 to 1 to 2 in both orders: 1 breaks the judge's reading against 0."""
    texts = texts_of(3)
    quality = {t: -i for i, t in enumerate(texts)}
    table = {(a, b): "A" if quality[a] > quality[b] else "B" for a in texts for b in texts if a != b}
    me, stronger = texts[1], texts[0]
    garbled = {**table, (me, stronger): "garbled", (stronger, me): "garbled"}
    options = {"schedule": "swiss", "aggregation": "win_rate", "orders": 2, "seed": 0}
    failed, _ = run(texts, garbled, **options)  # round 2: all level, 0 sits out, 1 beats 2 (0.5 were it counted)
    lost, _ = run(texts, table, **options)  # round 2: 0 leads, 1 sits out: 0.0
    assert failed[1]["score"] <= lost[1]["score"]
    assert failed[1]["parse_error"] == 1 and failed[1]["score"] == 0.0


@FEW
@given(st.data(), OPTION_SETS)
def test_under_any_failure_pattern_each_answer_is_paid_for_the_failures_blamed_on_it_as_losses(data, options):
    """Unreadable games are blamed on the answer of the two that failed to read against more distinct opponents
    (both when as many) and counted for it as losses; a failed call flags both answers (the manager pays the
    loss); every reward stays in [0, 1]; the answers not blamed are scored as if the game had not been played."""
    texts = texts_of(data.draw(st.integers(2, 6)))
    table = data.draw(verdict_tables(texts))
    failing = data.draw(st.sets(st.sampled_from(list(combinations(texts, 2))), min_size=1))
    errors = data.draw(st.sets(st.sampled_from(sorted(failing))))
    broken = dict(table)
    for a, b in failing:
        broken[(a, b)] = broken[(b, a)] = "fail" if (a, b) in errors else "garbled"
    results, judge = run(texts, broken, **options)
    asked = {frozenset(p) for p in judge.asked}
    unread = [tuple(p) for p in asked if tuple(sorted(p)) in failing and tuple(sorted(p)) not in errors]
    called_off = {t for p in asked if tuple(sorted(p)) in errors for t in p}
    against = {t: {u for p in unread if t in p for u in p if u != t} for t in texts}
    blamed = {t: set() for t in texts}
    for a, b in unread:
        most = max(len(against[a]), len(against[b]))
        for x, y in ((a, b), (b, a)):
            if len(against[x]) == most:
                blamed[x].add(y)
    for i, text in enumerate(texts):
        assert 0.0 <= results[i]["score"] <= 1.0
        assert results[i]["judge_error"] == int(text in called_off)
        assert results[i]["parse_error"] == int(bool(blamed[text]))
    assert failure_score() == 0.0  # what the manager pays a judge_error under on_judge_error=loss: the floor
    if options["schedule"] in tournament.ADAPTIVE:
        return
    me = data.draw(st.sampled_from(texts))
    if not blamed[me]:
        return
    lost, _ = run(texts, losing(broken, me, blamed[me]), **options)
    assert results[texts.index(me)]["score"] == pytest.approx(lost[texts.index(me)]["score"], abs=1e-6)


@FEW
@given(st.data(), st.sampled_from(["win_rate", "copeland", "bradley_terry"]), st.sampled_from([1, 2]))
def test_a_group_of_distinct_answers_averages_one_half_under_round_robin_win_rate_bradley_terry_and_copeland(
    data, aggregation, orders
):
    texts = texts_of(data.draw(st.integers(2, 6)))
    table = data.draw(verdict_tables(texts))
    results, _ = run(texts, table, schedule="round_robin", aggregation=aggregation, orders=orders)
    assert sum(r["score"] for r in results) / len(texts) == pytest.approx(0.5, abs=1e-9)


@FEW
@given(st.data(), OPTION_SETS)
def test_identical_answers_are_one_player_and_share_its_reward(data, options):
    distinct = texts_of(data.draw(st.integers(1, 4)))
    copies = data.draw(st.lists(st.sampled_from(distinct), min_size=len(distinct), max_size=8))
    group = data.draw(st.permutations(distinct + copies))
    shown = [data.draw(st.sampled_from([t, f"<think>draft {k}</think>{t}", f"  {t}\n"])) for k, t in enumerate(group)]
    table = data.draw(verdict_tables(distinct))
    results, judge = run(shown, table, **options)
    for a, b in combinations(range(len(group)), 2):
        if group[a] == group[b]:
            assert results[a]["score"] == results[b]["score"]
            assert results[a]["games"] == results[b]["games"]
    assert all(a != b for a, b in judge.asked)
    assert len(judge.asked) == len(set(judge.asked))  # no pair of texts judged twice in one order


@FEW
@given(st.data(), OPTION_SETS, st.integers(0, 10**6), st.integers(0, 10**6))
def test_the_seed_and_the_uid_only_draw_the_games_and_the_order_shown(data, options, seed, other_seed):
    """Each seed's games are a valid draw of the schedule, and the rewards are the aggregation of the judge's
    replies over them and nothing else; a round robin in both orders draws nothing, so pays the same; the same
    seed and uid draw the same games whatever order the rollouts arrive in."""
    texts = texts_of(data.draw(st.integers(2, 6)))
    table = data.draw(verdict_tables(texts))
    n, k = len(texts), min(options["opponents"], len(texts) - 1)
    runs = {}
    for s, uid in ((seed, "group-1"), (other_seed, "group-2")):
        results, judge = run(texts, table, uid=uid, seed=s, **options)
        games = [frozenset(p) for p in judge.asked]
        per_game = {g: games.count(g) for g in games}
        assert set(per_game.values()) == {options["orders"]}
        if options["schedule"] == "round_robin":
            assert len(per_game) == n * (n - 1) // 2
        elif options["schedule"] == "k_opponents":
            assert len(per_game) == math.ceil(n * k / 2)
            assert {sum(t in g for g in per_game) for t in texts} <= {k, k + 1}
        elif options["schedule"] == "single_elimination":
            assert len(per_game) == n - 1
        else:
            assert len(per_game) <= tournament.swiss_rounds_default(n) * (n // 2)
        assert [r["score"] for r in results] == pytest.approx(recomputed(texts, judge, options["aggregation"], 1.0))
        runs[uid] = [r["score"] for r in results], sorted(judge.asked)
    if options["schedule"] == "round_robin" and options["orders"] == 2:
        assert runs["group-1"] == runs["group-2"]
    order = data.draw(st.permutations(range(n)))
    again, judge = run([texts[i] for i in order], table, uid="group-1", seed=seed, **options)
    assert sorted(judge.asked) == runs["group-1"][1]
    assert [again[order.index(i)]["score"] for i in range(n)] == pytest.approx(runs["group-1"][0], abs=1e-9)


@FEW
@given(st.data(), OPTION_SETS, st.floats(0.01, 20.0))
def test_the_prior_changes_only_bradley_terrys_spread(data, options, prior):
    """The prior is bradley_terry's virtual games: the games asked never change, the other aggregations pay the
    same, and Bradley-Terry's rewards are the fit with that prior of the same replies."""
    texts = texts_of(data.draw(st.integers(2, 6)))
    table = data.draw(verdict_tables(texts))
    base, judge = run(texts, table, **options)
    moved, judge_moved = run(texts, table, prior=prior, **options)
    assert judge_moved.asked == judge.asked
    if options["aggregation"] != "bradley_terry":
        assert [r["score"] for r in moved] == [r["score"] for r in base]
    else:
        assert [r["score"] for r in moved] == pytest.approx(recomputed(texts, judge_moved, "bradley_terry", prior))
