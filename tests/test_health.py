"""reward_loop/health/metrics.py: a step's judge health from the samples' extra info, as tables."""

import math

import numpy as np
import pytest

from writing_rl.reward_loop.health.metrics import HealthInputError, judge_health, pearson, rows_from_columns


def sample(**keys):
    base = {"judge_error": 0, "parse_error": 0, "judge_truncated": 0, "judge_refusal": 0, "format_error": 0}
    base.update({"position_consistent": -1, "judge_latency_s": 1.0, "judge_calls": 2})
    return {**base, **keys}


@pytest.mark.parametrize(
    "rows, expected",
    [
        # rates are shares of samples
        (
            [sample(judge_error=1), sample(), sample(), sample()],
            {"judge/error_rate": 0.25, "judge/parse_error_rate": 0.0, "judge/samples_total": 4.0},
        ),
        (
            [sample(parse_error=1), sample(judge_refusal=1), sample(), sample(format_error=1)],
            {
                "judge/parse_error_rate": 0.25,
                "judge/refusal_rate": 0.25,
                "judge/truncated_rate": 0.0,
                "judge/unreadable_rate": 0.5,
                "judge/format_error_rate": 0.25,
            },
        ),
        # counts add up; per-sample means alongside
        (
            [sample(judge_calls=2), sample(judge_calls=0), sample(judge_calls=4)],
            {"judge/calls_total": 6.0, "judge/calls_per_sample": 2.0},
        ),
        (
            [
                sample(judge_retries=3, judge_rate_limited=2, judge_tokens=100, judge_hedges=1),
                sample(judge_retries=0, judge_tokens=50, judge_hedges=0),
            ],
            {
                "judge/hedges_total": 1.0,  # copies of slow requests: paid calls hedging added
                "judge/hedges_per_sample": 0.5,
                "judge/retries_total": 3.0,
                "judge/rate_limited_total": 2.0,
                "judge/rate_limited_per_sample": 2.0,  # over the one sample that reports it
                "judge/tokens_total": 150.0,
                "judge/tokens_per_sample": 75.0,
            },
        ),
        (
            [sample(judge_concurrency_limit=8), sample(judge_concurrency_limit=32)],
            {"judge/concurrency_limit_min": 8.0, "judge/concurrency_limit_max": 32.0},
        ),
        # position consistency over the samples judged in both orders (-1: not checked)
        (
            [sample(position_consistent=1), sample(position_consistent=0), sample(), sample(position_consistent=1)],
            {"judge/position_consistency": 2 / 3, "judge/position_checked_total": 3.0},
        ),
        # latency percentiles leave out samples that made no call
        (
            [sample(judge_latency_s=v) for v in (1.0, 2.0, 3.0, 4.0)] + [sample(judge_latency_s=0.0, judge_calls=0)],
            {"judge/latency_p50_s": 2.5, "judge/latency_p95_s": pytest.approx(3.85)},
        ),
    ],
)
def test_metrics(rows, expected):
    metrics = judge_health(rows)
    for key, value in expected.items():
        assert metrics[key] == value, key


@pytest.mark.parametrize(
    "rows, absent",
    [
        # keys no sample carries give no metric (judge client keys not in the run yet)
        ([sample()], ["judge/retries_total", "judge/tokens_total", "judge/concurrency_limit_min"]),
        # no sample judged in both orders
        ([sample(), sample()], ["judge/position_consistency"]),
        # no calls at all
        ([sample(judge_calls=0, judge_latency_s=0.0)], ["judge/latency_p50_s"]),
        # a rule-based fn: no judge keys at all
        ([{"acc": 1.0}], ["judge/error_rate", "judge/unreadable_rate", "judge/calls_total"]),
    ],
)
def test_absent_keys_give_no_metric(rows, absent):
    metrics = judge_health(rows)
    for key in absent:
        assert key not in metrics


def test_rows_with_none_are_left_out_of_that_key():
    # verl's v1 validation fills a key a sample lacks with None
    metrics = judge_health([sample(judge_error=1), sample(judge_error=None), sample(judge_error=0)])
    assert metrics["judge/error_rate"] == 0.5 and metrics["judge/samples_total"] == 3.0


def test_no_rows_no_metrics():
    assert judge_health([]) == {}


@pytest.mark.parametrize(
    "lengths, scores, expected",
    [
        ([10, 20, 30, 40], [0.0, 0.5, 0.5, 1.0], pytest.approx(0.9487, abs=1e-4)),
        ([10, 20, 30], [1.0, 0.5, 0.0], pytest.approx(-1.0)),
        ([10, 20, 30], [0.5, 0.5, 0.5], None),  # constant reward: r undefined
        ([10], [1.0], None),
    ],
)
def test_pearson(lengths, scores, expected):
    assert pearson(lengths, scores) == expected
    metrics = judge_health([sample() for _ in lengths], scores, lengths)
    if expected is None:
        assert "judge/reward_length_corr" not in metrics
    else:
        assert metrics["judge/reward_length_corr"] == expected


def test_pearson_matches_numpy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    assert math.isclose(pearson(x, y), float(np.corrcoef(x, y)[0, 1]), rel_tol=1e-9)


def test_a_value_that_is_not_a_number_names_the_key():
    with pytest.raises(HealthInputError, match="judge_error='x': expected a number"):
        judge_health([sample(judge_error="x")])


def test_rows_from_columns():
    rows = rows_from_columns({"judge_error": np.array([0, 1]), "win": [1.0, 0.0]}, 2)
    assert rows == [{"judge_error": 0, "win": 1.0}, {"judge_error": 1, "win": 0.0}]
    assert type(rows[0]["judge_error"]) is int
    with pytest.raises(HealthInputError, match="win: 1 values for 2 samples"):
        rows_from_columns({"win": [1.0]}, 2)


def composed(*overrides):
    from writing_rl.offline.compose import compose

    return compose(
        "writing_rl", ["actor_rollout_ref.model.path=/m", "reward.reward_kwargs.judge.base_url=http://j/v1", *overrides]
    )


def test_the_overlays_report_judge_health_to_the_tracker():
    from writing_rl.reward_loop.health.metrics import reports_health

    assert reports_health(composed())
    assert not reports_health(composed("trainer.use_v1=false"))  # v0: verl never builds the sampler
    assert not reports_health(composed("trainer.v1.sampler.custom_sampler.path=null"))


@pytest.mark.parametrize(
    "dapo", ["algorithm.filter_groups.enable=true", "trainer.v1.sampler.sync_refill_failed_groups=true"]
)
def test_dapo_with_the_health_sampler_is_refused_not_silently_dropped(dapo, tokenizer_dir):
    from writing_rl.reward_loop.health.metrics import reports_health
    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.config_checks import run_check

    with pytest.raises(ConfigError, match="custom_sampler.path=null"):
        reports_health(composed(dapo))
    overrides = [f"actor_rollout_ref.model.path={tokenizer_dir}", "reward.reward_kwargs.judge.base_url=http://j/v1"]
    overrides.append("reward.reward_kwargs.judge.model=m")
    with pytest.raises(ConfigError, match="filter_groups"):
        run_check("writing_rl", [*overrides, dapo])
    assert any("judge health" in line for line in run_check("writing_rl", overrides))


def test_watches_and_the_curriculum_level_reach_the_step_metrics():
    """watch/<name>_mean over the samples a watch measured (NaN: it failed), its error rate; Writing-RL's
    curriculum/level as curriculum/level_mean and _max."""
    nan = float("nan")
    rows = [
        sample(**{"watch/taste": 4.0, "watch_error": 0, "curriculum/level": 0}),
        sample(**{"watch/taste": nan, "watch_error": 1, "curriculum/level": 2}),
        sample(**{"watch/taste": 8.0, "watch_error": 0, "curriculum/level": 1}),
    ]
    metrics = judge_health(rows)
    assert metrics["watch/taste_mean"] == 6.0
    assert metrics["watch/error_rate"] == pytest.approx(1 / 3)
    assert metrics["curriculum/level_mean"] == 1.0 and metrics["curriculum/level_max"] == 2.0
    assert not any(key.startswith(("watch/", "curriculum/")) for key in judge_health([sample()]))
