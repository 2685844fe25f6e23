"""A judge call's failures as the user meets them (writing_rl/judge/errors.py): their messages, their kinds (the
keys of ``judge.stats.failures``) and what a context-length refusal's message is read for."""

import json

import pytest

from writing_rl.judge.errors import (
    JudgeBudgetExceeded,
    JudgeConnectionError,
    JudgeContextLengthError,
    JudgeError,
    JudgeHTTPError,
    JudgeRateLimited,
    JudgeResponseError,
    JudgeTimeout,
    JudgeUnavailable,
    context_length_numbers,
    is_context_length_error,
)


def test_a_failure_says_where_after_how_many_attempts_and_why():
    err = JudgeTimeout("http://judge/v1", "no reply within timeout_s=5", 3)
    assert str(err) == "judge at http://judge/v1 failed after 3 attempt(s): no reply within timeout_s=5"
    assert (err.endpoint, err.cause, err.attempts) == ("http://judge/v1", "no reply within timeout_s=5", 3)
    assert JudgeError("http://judge/v1", "boom").attempts == 1
    assert (err.rate_limited, err.concurrency_limit, err.hedges) == (0, 0, 0)  # until the client sets them


@pytest.mark.parametrize(
    "error, kind",
    [
        (JudgeError("e", "c"), "error"),
        (JudgeTimeout("e", "c"), "timeout"),
        (JudgeConnectionError("e", "c"), "connection"),
        (JudgeUnavailable("e", "c"), "all_endpoints_down"),
        (JudgeRateLimited("e", "c"), "rate_limited"),
        (JudgeHTTPError("e", 500, "c"), "http"),
        (JudgeResponseError("e", "c"), "bad_response"),
        (JudgeBudgetExceeded("e", "c"), "budget"),
        (JudgeContextLengthError("e", 400, "maximum context length"), "context_length"),
    ],
)
def test_each_failure_is_counted_under_its_own_kind(error, kind):
    assert isinstance(error, JudgeError) and error.kind == kind


def test_an_http_failure_keeps_its_status_and_the_start_of_the_body():
    err = JudgeHTTPError("http://judge/v1", 502, "x" * 400 + "TAIL", 2)
    assert err.status == 502 and err.attempts == 2
    assert err.cause == "HTTP 502: " + "x" * 300 and "TAIL" not in str(err)
    assert JudgeHTTPError("http://judge/v1", 404, "no such model").attempts == 1  # (unless the client says)


def test_a_budget_refusal_says_no_call_was_sent():
    err = JudgeBudgetExceeded("http://judge/v1", "calls 10 of 10 spent")
    assert str(err) == "judge budget reached, call to http://judge/v1 not sent: calls 10 of 10 spent"
    assert err.attempts == 0 and err.cause == "calls 10 of 10 spent" and err.endpoint == "http://judge/v1"


@pytest.mark.parametrize("status", [400, 413, 422])
@pytest.mark.parametrize(
    "phrase",
    [
        "context_length_exceeded",
        "This model's MAXIMUM CONTEXT LENGTH is 8192 tokens",
        "The prompt is longer than the model's context length",
        "is longer than the maximum model length of 4096",
        "prompt is too long: 9000 tokens",
        "Input is too long for the model",
    ],
)
def test_a_context_refusal_is_read_from_any_endpoints_wording(status, phrase):
    assert is_context_length_error(status, phrase)
    assert not is_context_length_error(500, phrase) and not is_context_length_error(401, phrase)


def test_a_refusal_that_is_not_about_the_context_is_no_context_error():
    assert not is_context_length_error(400, "Invalid value for 'temperature'")


@pytest.mark.parametrize(
    "body, numbers",
    [
        ("prompt is 9000 tokens > 8192 maximum", {"max_context": 8192}),
        ("9000 tokens exceed the 8192 maximum context length", {"max_context": 8192}),
        ("you requested about 9100 tokens", {"requested": 9100}),
        ("the prompt contains 7000 tokens", {"prompt_tokens": 7000}),
        ("(7000 of text input, 10 of image input)", {"prompt_tokens": 7000}),
        ("messages resulted in 7100 tokens", {"prompt_tokens": 7100}),
        ("and 512 in the output", {"completion_tokens": 512}),
        ("MAXIMUM CONTEXT LENGTH IS 4096", {"max_context": 4096}),
        ("nothing to read here", {}),
    ],
)
def test_the_numbers_of_a_context_refusal_are_read_where_stated(body, numbers):
    expected = dict.fromkeys(("max_context", "requested", "prompt_tokens", "completion_tokens"))
    assert context_length_numbers(body) == {**expected, **numbers}


def openai_error(message: str) -> str:
    return json.dumps({"error": {"message": message, "code": "context_length_exceeded"}})


@pytest.mark.parametrize(
    "body, counts",
    [
        (
            "maximum context length is 8192; you requested 9000 tokens",
            "judge context 8192 tokens, requested 9000 tokens",
        ),
        ("you requested 9000 tokens (8488 in the messages", "requested 9000 tokens = 8488 prompt"),
        ("maximum context length is 8192 (512 in the completion", "judge context 8192 tokens, 512 completion tokens"),
        ("(8488 in the messages, 512 in the completion)", "8488 prompt + 512 completion tokens"),
        ("context_length_exceeded", "the judge's message states no token counts"),
    ],
)
def test_a_context_refusal_states_the_counts_its_judge_gave(body, counts):
    err = JudgeContextLengthError("http://judge/v1", 400, openai_error(body))
    assert f"exceed the judge's context ({counts}). Lower" in str(err)


def test_a_context_refusal_quotes_the_judges_own_words_on_one_line():
    body = openai_error("This model's maximum   context length\nis 8192 tokens. " + "y" * 300)
    err = JudgeContextLengthError("http://judge/v1", 400, body)
    assert err.said == "This model's maximum context length is 8192 tokens. " + "y" * 300
    quoted = "This model's maximum context length is 8192 tokens. " + "y" * 148
    assert str(err).endswith(f"The judge said: {quoted!r}")  # (200 characters at most)
    assert str(err).startswith("judge at http://judge/v1 failed after 1 attempt(s): HTTP 400: context length exceeded")
    long = JudgeContextLengthError("http://judge/v1", 400, openai_error("maximum context length " + "z" * 2000))
    assert long.said == ("maximum context length " + "z" * 2000)[:1000]  # kept whole up to 1,000 characters


@pytest.mark.parametrize(
    "body, said",
    [
        ('{"message": "vLLM words", "object": "error"}', "vLLM words"),  # vLLM's shape
        ('{"error": "a plain string"}', '{"error": "a plain string"}'),
        ('{"error": {"message": 42}}', '{"error": {"message": 42}}'),
        ("[1, 2]", "[1, 2]"),
        ("not json\n at all", "not json at all"),
    ],
)
def test_a_context_refusal_quotes_the_message_else_the_whole_body(body, said):
    assert JudgeContextLengthError("http://judge/v1", 413, body).said == said


def test_a_context_length_error_keeps_its_attempts_and_says_how_to_make_room():
    from writing_rl.judge.errors import JudgeContextLengthError

    err = JudgeContextLengthError("http://judge/v1", 400, '{"error": {"message": "too long"}}', attempts=3)
    assert err.attempts == 3
    assert (
        "Lower actor_rollout_ref.rollout.response_length / data.max_response_length, lower "
        "reward.reward_kwargs.judge.max_tokens, or serve the judge with a longer max_model_len. "
        "The judge said: 'too long'"
    ) in str(err)
