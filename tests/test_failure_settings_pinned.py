"""Every failure setting under reward.reward_kwargs (on_judge_error, on_parse_error, failure_score), each of its
values, through verl's own RewardLoopWorker (in this process, no Ray) hosting our ParallelRewardManager and
the pairwise reward. The tables must name every value the setting declares: a new value fails until pinned."""

from __future__ import annotations

import pytest

from writing_rl.judge import JudgeError, JudgeHTTPError
from writing_rl.reward_loop.config import ON_JUDGE_ERROR
from writing_rl.reward_loop.failures import ON_PARSE_ERROR, JudgeFailure, UnreadableJudgeReply

from conftest import compose_writing_rl, score_in_reward_worker, writing_row
from judge_server import Reply, default_script

FN = "reward.custom_reward_function.reward_kwargs"
# Against the row's reference "a plain story" the default judge: "a good story" wins, "a bad story" loses.
HEALTHY = "a good story"


def judge_script(failing: Reply | None = None):
    """The default judge, except for responses holding "broken": those get ``failing``, or a reply
    with no verdict (unreadable) when it is None."""

    def script(request: dict, index: int) -> Reply:
        if "broken" in request["messages"][-1]["content"]:
            return failing or Reply(content="Both have merits; I will not choose.")
        return default_script(request, index)

    return script


def score(tokenizer, config, texts: list[str]) -> list[dict]:
    """verl's RewardLoopWorker's outputs for ``texts``, each the answer to its own Writing-RL row."""
    return score_in_reward_worker(tokenizer, config, [writing_row(i) for i in range(len(texts))], texts)


def configured(tokenizer_dir, server, *overrides: str):
    return compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.num_workers=1", "reward.reward_kwargs.judge.max_retries=0", *overrides
    )


FAILED_CALL = Reply(status=500, body=b'{"error": {"message": "engine crashed"}}')
# on_judge_error -> what a sample whose judge call failed is paid (loss_score=-0.25 is the method's failure
# score; neutral_reward=0.3), or None: the step stops.
ON_JUDGE_ERROR_PAYS = {"loss": -0.25, "neutral": 0.3, "raise": None}


def test_the_on_judge_error_table_names_every_value_the_setting_takes():
    assert set(ON_JUDGE_ERROR_PAYS) == set(ON_JUDGE_ERROR)


@pytest.mark.parametrize("value", ON_JUDGE_ERROR)
def test_each_on_judge_error_value_decides_what_a_failed_judge_call_does(value, judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=judge_script(FAILED_CALL))
    config = configured(
        tokenizer_dir,
        server,
        f"reward.reward_kwargs.on_judge_error={value}",
        f"{FN}.loss_score=-0.25",
        f"+{FN}.neutral_reward=0.3",
    )
    texts = [HEALTHY, "a broken story"]
    pays = ON_JUDGE_ERROR_PAYS[value]
    if pays is None:
        with pytest.raises(JudgeFailure, match="on_judge_error=raise") as stopped:
            score(tokenizer, config, texts)
        message = str(stopped.value)
        assert "HTTP 500" in message and "engine crashed" in message
        # the advice, whole: what to check, and the setting that goes on paying failed samples a loss
        assert message.endswith(
            "check the endpoint, or set on_judge_error=loss to pay failed samples a loss with judge_error=1 and go on."
        ), message
        assert isinstance(stopped.value.__cause__, JudgeHTTPError)
        return
    healthy, failed = score(tokenizer, config, texts)
    assert healthy["reward_score"] == 1.0 and healthy["reward_extra_info"]["judge_error"] == 0
    assert failed["reward_score"] == pytest.approx(pays)
    assert failed["reward_extra_info"]["judge_error"] == 1


def test_under_on_judge_error_loss_a_failed_call_keeps_a_fn_result_below_the_loss(
    judge_server, tokenizer_dir, tokenizer
):
    """The loss is a ceiling, not a fixed payment: the fn's own result for the sample pays when it is lower."""
    server = judge_server(script=judge_script(FAILED_CALL))
    config = configured(
        tokenizer_dir, server, "reward.reward_kwargs.on_judge_error=loss", f"+{FN}.neutral_reward=-0.75"
    )
    healthy, failed = score(tokenizer, config, [HEALTHY, "a broken story"])
    assert failed["reward_score"] == pytest.approx(-0.75) and failed["reward_extra_info"]["judge_error"] == 1
    assert healthy["reward_score"] == 1.0


def test_under_on_judge_error_loss_a_healthy_sample_below_the_loss_keeps_its_score(
    judge_server, tokenizer_dir, tokenizer
):
    server = judge_server(script=judge_script(FAILED_CALL))
    config = configured(
        tokenizer_dir, server, "reward.reward_kwargs.on_judge_error=loss", "reward.reward_kwargs.failure_score=0.25"
    )
    lost, won = score(tokenizer, config, ["a bad story", HEALTHY])
    assert lost["reward_score"] == 0.0 and won["reward_score"] == 1.0  # neither capped at 0.25


# failure_score -> what a failed judge call pays under on_judge_error=loss (loss_score=-0.25, the neutral
# reward 0.5): null is the method's failure score (its loss_score); a number is paid, but never more than the
# fn's own result.
FAILURE_SCORE_PAYS = {None: -0.25, -2.0: -2.0, 0.9: 0.5}


@pytest.mark.parametrize("failure_score", list(FAILURE_SCORE_PAYS), ids=str)
def test_failure_score_is_what_a_failed_judge_call_pays(failure_score, judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=judge_script(FAILED_CALL))
    setting = "null" if failure_score is None else failure_score
    config = configured(
        tokenizer_dir,
        server,
        "reward.reward_kwargs.on_judge_error=loss",
        f"reward.reward_kwargs.failure_score={setting}",
        f"{FN}.loss_score=-0.25",
    )
    (failed,) = score(tokenizer, config, ["a broken story"])
    assert failed["reward_score"] == pytest.approx(FAILURE_SCORE_PAYS[failure_score])
    assert failed["reward_extra_info"]["judge_error"] == 1


# on_parse_error -> what a reply with no verdict pays (win 1, tie 0.5, loss 0), or None: the step stops.
ON_PARSE_ERROR_PAYS = {"loss": 0.0, "tie": 0.5, "raise": None}


def test_the_on_parse_error_table_names_every_value_the_setting_takes():
    assert set(ON_PARSE_ERROR_PAYS) == set(ON_PARSE_ERROR)


@pytest.mark.parametrize("value", ON_PARSE_ERROR)
def test_each_on_parse_error_value_reaches_the_reward_fn(value, judge_server, tokenizer_dir, tokenizer):
    server = judge_server(script=judge_script())
    config = configured(tokenizer_dir, server, f"reward.reward_kwargs.on_parse_error={value}")
    texts = [HEALTHY, "a broken story"]
    pays = ON_PARSE_ERROR_PAYS[value]
    if pays is None:
        with pytest.raises(UnreadableJudgeReply, match="on_parse_error=raise"):
            score(tokenizer, config, texts)
        return
    healthy, unreadable = score(tokenizer, config, texts)
    assert healthy["reward_score"] == 1.0 and healthy["reward_extra_info"]["parse_error"] == 0
    assert unreadable["reward_score"] == pytest.approx(pays)
    assert unreadable["reward_extra_info"]["parse_error"] == 1
    assert unreadable["reward_extra_info"]["judge_error"] == 0


# Failures no response causes: they stop the step whatever on_judge_error says.
CONFIGURATION_FAILURES = {
    "wrong key (401)": Reply(status=401, body=b'{"error": {"message": "invalid api key"}}'),
    "no permission (403)": Reply(status=403, body=b'{"error": {"message": "forbidden"}}'),
    "wrong model or URL (404)": Reply(status=404, body=b'{"error": {"message": "model not found"}}'),
    "prompt over the context (400)": Reply(
        status=400,
        body=b'{"error": {"message": "This model\'s maximum context length is 64 tokens. However, you requested '
        b'900 tokens (800 in the messages, 100 in the completion)."}}',
    ),
}


@pytest.mark.parametrize("on_judge_error", ["loss", "neutral"])
@pytest.mark.parametrize("failure", list(CONFIGURATION_FAILURES))
def test_a_failure_no_response_causes_stops_the_step_whatever_on_judge_error_says(
    failure, on_judge_error, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server(script=judge_script(CONFIGURATION_FAILURES[failure]))
    config = configured(tokenizer_dir, server, f"reward.reward_kwargs.on_judge_error={on_judge_error}")
    with pytest.raises(JudgeFailure, match="The step stops whatever on_judge_error says") as stopped:
        score(tokenizer, config, [HEALTHY, "a broken story"])
    assert isinstance(stopped.value.__cause__, JudgeError)


@pytest.mark.parametrize("on_judge_error", ["loss", "neutral"])
def test_a_spent_judge_budget_stops_the_step_whatever_on_judge_error_says(
    on_judge_error, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server()
    config = configured(
        tokenizer_dir,
        server,
        f"reward.reward_kwargs.on_judge_error={on_judge_error}",
        "reward.reward_kwargs.judge.budget.calls=1",
    )
    with pytest.raises(JudgeFailure, match="The step stops whatever on_judge_error says"):
        score(tokenizer, config, [HEALTHY, "a bad story"])
    assert len(server.requests) <= 1  # the second call was refused, never sent
