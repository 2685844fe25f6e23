"""The shared failure policy and the run-level guard on failure rates."""

import pytest

from writing_rl.protocols import Unreadable
from writing_rl.reward_loop.failure_guard import FailureGuard, FailureRateExceeded
from writing_rl.reward_loop.failures import UnreadableJudgeReply, fallback_outcome, raise_if_asked, unreadable_flags
from writing_rl.settings import ConfigError


def test_an_unreadable_reply_is_never_a_win():
    why = Unreadable("no verdict")
    assert fallback_outcome(why, "loss") == "loss" and fallback_outcome(why, "tie") == "tie"
    with pytest.raises(UnreadableJudgeReply, match="no verdict"):
        fallback_outcome(why, "raise")


def test_the_rules_name_the_setting_and_what_to_do():
    why = Unreadable("no verdict")
    with pytest.raises(ConfigError) as refused:
        raise_if_asked(why, "sideways")
    assert str(refused.value) == (
        "reward.reward_kwargs.on_parse_error='sideways': expected one of ('loss', 'tie', 'raise')"
    )
    with pytest.raises(UnreadableJudgeReply) as stopped:
        raise_if_asked(why, "raise")
    assert str(stopped.value) == (
        "a judge reply could not be read (parse_error: no verdict); stopping the step "
        "(reward.reward_kwargs.on_parse_error=raise). Set it to loss to score such replies as losses."
    )
    assert raise_if_asked(why, "loss") is None and raise_if_asked(why, "tie") is None


def test_flags_say_which_kinds_failed():
    assert unreadable_flags([]) == {"parse_error": 0, "judge_truncated": 0, "judge_refusal": 0}
    failed = [Unreadable("cut", "judge_truncated"), Unreadable("x")]
    assert unreadable_flags(failed) == {"parse_error": 1, "judge_truncated": 1, "judge_refusal": 0}
    refused = [Unreadable("content filter", "judge_refusal")]
    assert unreadable_flags(refused) == {"parse_error": 1, "judge_truncated": 0, "judge_refusal": 1}
    with pytest.raises(ValueError, match="kind"):
        Unreadable("x", "timeout")


LIMITS = {"judge_error": 0.2, "parse_error": 0.2, "group_incomplete": 0.2}


def guard_of(window=100, min_samples=10, **limits):
    return FailureGuard({**LIMITS, **limits}, window, min_samples)


def feed(guard, flags, kind="parse_error"):
    for flag in flags:
        guard.add({kind: flag})


def test_the_guard_waits_for_enough_samples_then_trips_with_an_example_and_a_cause():
    guard = guard_of(min_samples=10)
    feed(guard, [1, 1, 1, 0, 0, 0, 0, 0, 0])  # 3 of 9: too few samples to judge
    guard.remember([("Response A opens with a long", Unreadable("cut", "judge_truncated"))])
    with pytest.raises(FailureRateExceeded) as info:
        guard.add({"parse_error": 0})  # 3 of 10 = 30% > 20%
    message = str(info.value)
    assert "3 of the last 10 samples this reward worker scored (30%)" in message
    assert "max_parse_error_rate=0.2" in message and "failure_window=100" in message
    assert "raise reward.reward_kwargs.judge.max_tokens" in message and "Response A opens with a long" in message


def test_the_window_rolls_so_a_burst_of_failures_long_ago_does_not_count():
    guard = guard_of(window=20, min_samples=20)
    feed(guard, [1] * 4 + [0] * 16)  # 4 of 20: at the limit, not above
    feed(guard, [0] * 20)  # the burst has left the window
    feed(guard, [1] * 4)  # 4 of 20 again, never 8 of 20
    assert guard.counts["parse_error"] == 4 and len(guard.recent) == 20


def test_each_kind_has_its_own_limit_and_names_an_example():
    guard = guard_of(min_samples=5, judge_error=0.5, parse_error=1.0)
    feed(guard, [1] * 50)  # unreadable replies: that check is off
    guard.example("judge_error", "judge at http://j/v1 failed after 5 attempt(s): HTTP 500")
    feed(guard, [1, 0], kind="judge_error")
    with pytest.raises(FailureRateExceeded) as info:
        feed(guard, [1] * 50, kind="judge_error")
    message = str(info.value)
    assert "(judge_error), above reward.reward_kwargs.max_judge_error_rate=0.5" in message
    assert "Example: judge at http://j/v1 failed after 5 attempt(s): HTTP 500" in message


def test_incomplete_groups_are_a_kind_of_their_own():
    guard = guard_of(min_samples=2, group_incomplete=0.4)
    guard.example("group_incomplete", "group u1: 3 of 8 rollouts arrived within groups.timeout_s=1800")
    with pytest.raises(FailureRateExceeded, match="max_group_incomplete_rate=0.4.*group u1: 3 of 8"):
        feed(guard, [0, 1, 1], kind="group_incomplete")


@pytest.mark.parametrize(
    "reason, cause",
    [
        ("conflicting verdicts [[A]], [[B]] in one reply", "quotes verdict tokens the policy writes"),
        ("the only verdict tokens are inside quoted material", "policy may be writing verdict tokens"),
        ("no verdict [[A]], [[B]] or [[C]] after the reasoning", "check the judge model, its template"),
    ],
)
def test_the_guard_names_a_likely_cause(reason, cause):
    guard = guard_of(min_samples=1, parse_error=0.0)
    guard.remember([("reply", Unreadable(reason))])
    with pytest.raises(FailureRateExceeded, match=cause):
        guard.add({"parse_error": 1})
