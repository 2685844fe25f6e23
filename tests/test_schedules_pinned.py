"""Tournament schedules (writing_rl/tournament/schedules.py) pinned at their edges: empty groups, the errors'
exact messages, the Swiss bye and the pairing accepted when no rematch-free one exists."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from writing_rl.tournament import schedules
from writing_rl.tournament.schedules import SCHEDULES, calls_per_rollout, k_opponents, swiss_round, swiss_rounds_default


def test_no_player_or_one_plays_no_swiss_round():
    assert swiss_rounds_default(0) == 0 and swiss_rounds_default(1) == 0 and swiss_rounds_default(2) == 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_empty_group_makes_no_judge_call(schedule):
    assert calls_per_rollout(schedule, 0, k=3) == 0.0


def test_the_errors_name_what_is_wrong_exactly():
    with pytest.raises(ValueError, match=r"^calls_per_rollout: k_opponents needs k$"):
        calls_per_rollout("k_opponents", 8)
    with pytest.raises(ValueError, match=r"^swiss_round: 2 standings for 3 players$"):
        swiss_round(3, [1.0, 0.0], set(), random.Random(0))


class Seated:
    """An rng that leaves the seats in order: seat s holds player s."""

    def shuffle(self, seats):
        pass


def test_with_an_odd_group_and_odd_k_the_cycles_first_seat_plays_one_extra_game():
    """n=5: the circle joins neighbours; the odd game goes along the cycle of jumps of 2 seats (0 2 4 1 3), every
    other step of it ((0,2), (4,1)), and the one left out (3) plays the cycle's first seat (0)."""
    assert k_opponents(5, 1, Seated()) == [(0, 2), (0, 3), (1, 4)]
    assert k_opponents(5, 3, Seated()) == [(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 4), (2, 3), (3, 4)]
    for n in (3, 7, 9):
        for k in range(1, n - 1, 2):
            games = Counter(p for pair in k_opponents(n, k, Seated()) for p in pair)
            assert games[0] == k + 1 and all(games[p] == k for p in range(1, n)), (n, k)


def test_the_bye_goes_to_the_lowest_ranked_of_those_who_met_the_most_opponents():
    standings = [5.0, 4.0, 3.0, 2.0, 1.0]  # ranked 0 1 2 3 4
    played = {frozenset((0, 1))}
    # 0 and 1 met someone; 1 is the lower-ranked of them: it sits out, though 4 is ranked last
    assert swiss_round(5, standings, played, random.Random(0)) == [(0, 2), (3, 4)]


def test_when_no_pairing_avoids_a_rematch_each_player_from_the_top_takes_the_nearest_it_has_not_met():
    standings = [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    played = {frozenset((0, p)) for p in range(1, 6)} | {frozenset((2, 4))}  # 0 has met everyone
    # 0 meets the nearest-ranked (1) again; then 2 takes 3 (not 4, met), and 4 takes 5
    assert swiss_round(6, standings, played, random.Random(0)) == [(0, 1), (2, 3), (4, 5)]


def test_the_search_for_a_rematch_free_pairing_spends_at_most_its_budget_of_pairing_steps(monkeypatch):
    """Ranked 0 1 2 3, 2 and 3 have met: the search tries (0,1), then (2,3) (a rematch), backs up to (0,2), then
    (1,3): four pairing steps. Within 4 it finds that pairing; within 3 it accepts the top-down one, a rematch."""
    standings, played = [4.0, 3.0, 2.0, 1.0], {frozenset((2, 3))}
    monkeypatch.setattr(schedules, "SEARCH_BUDGET", 4)
    assert swiss_round(4, standings, played, random.Random(0)) == [(0, 2), (1, 3)]
    monkeypatch.setattr(schedules, "SEARCH_BUDGET", 3)
    assert swiss_round(4, standings, played, random.Random(0)) == [(0, 1), (2, 3)]
