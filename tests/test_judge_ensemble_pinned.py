"""An ensemble's call (writing_rl/judge/ensemble.py): which failures stop the step, what its reply and stats add
up, the members' names and shares. Against the scripted judge server, or judges that stand in for the members'
HTTP clients where a count (a hedge, a retry) must be set exactly."""

import asyncio
import time
from collections import Counter

import pytest

from writing_rl.judge import JudgeContextLengthError, JudgeError, JudgeHTTPError, JudgeReply, SampleJudge
from writing_rl.judge import ensemble as ensemble_module
from writing_rl.judge.calls import JudgeStats, Spent
from writing_rl.judge.config import PREFIX, JudgeConfig
from writing_rl.judge.ensemble import EnsembleFailed, EnsembleJudge
from writing_rl.protocols.comparison import read_outcome
from writing_rl.reward_loop.failures import FailurePolicy, JudgeFailure
from writing_rl.settings import ConfigError, build

from judge_server import Reply
from waiting import until

MESSAGES = [{"role": "user", "content": "Compare the two responses. [[A]] or [[B]]?"}]
A = "I weighed both.\nFinal verdict:\n[[A]]"
CONFIGURATION_STATUSES = (401, 403, 404)  # a wrong key, permission, model or URL
LOSS = FailurePolicy(on_judge_error="loss", on_parse_error="loss", loss=0.0)


def judge_config(server=None, members=None, quorum=1, **judge) -> JudgeConfig:
    raw = {
        "base_url": server.base_url if server else "http://127.0.0.1:9/v1",
        "model": "a",
        "backoff_base_s": 0.01,
        "max_retries": 0,
        "hedge_after": 0,
        **judge,
    }
    if members is not None:
        listed = [m if isinstance(m, dict) else {"name": m, "model": m} for m in members]
        raw["ensemble"] = {"members": listed, "quorum": quorum}
    return build(JudgeConfig, raw, PREFIX).validate()


def by_model(answers: dict):
    return lambda request, index: answers[request["model"]]


async def judged(client):
    """(the outcome read, or the JudgeError raised; the sample)."""
    sample = SampleJudge(client)
    try:
        try:
            return sample.read(await sample.complete(MESSAGES), read_outcome, "A"), sample
        except JudgeError as err:
            return err, sample
    finally:
        await client.close()


def refusal(status: int) -> Reply:
    return Reply(status=status, body=b'{"error": {"message": "The model `c` does not exist."}}')


# ---------------------------------------------------------------- failures that stop the step


@pytest.mark.parametrize("status", CONFIGURATION_STATUSES)
def test_one_judge_answering_a_configuration_failure_stops_the_step_whatever_on_judge_error_says(judge_server, status):
    from writing_rl.judge.http import OpenAIJudge

    server = judge_server(script=lambda request, index: refusal(status))
    err, sample = asyncio.run(judged(OpenAIJudge(judge_config(server, max_retries=3))))
    assert isinstance(err, JudgeHTTPError) and err.status == status and server.count == 1  # never retried
    with pytest.raises(JudgeFailure, match=f"HTTP {status}.*The step stops whatever on_judge_error says"):
        LOSS.check_calls(sample)


@pytest.mark.parametrize("status", [400, 422, 500])
def test_one_judge_failing_otherwise_is_paid_under_on_judge_error_loss(judge_server, status):
    from writing_rl.judge.http import OpenAIJudge

    server = judge_server(script=lambda request, index: refusal(status))
    err, sample = asyncio.run(judged(OpenAIJudge(judge_config(server))))
    assert isinstance(err, JudgeHTTPError) and err.status == status
    LOSS.check_calls(sample)  # returns: the sample is paid the loss


@pytest.mark.parametrize("status", CONFIGURATION_STATUSES)
def test_one_ensemble_judge_answering_a_configuration_failure_stops_the_step_whatever_the_others_answered(
    judge_server, status
):
    server = judge_server(script=by_model({"a": Reply(content=A), "b": refusal(status), "c": Reply(content=A)}))
    err, sample = asyncio.run(judged(EnsembleJudge(judge_config(server, "abc"))))
    assert isinstance(err, JudgeHTTPError) and err.status == status and sample.errors == [err]
    with pytest.raises(JudgeFailure, match=f"HTTP {status}"):
        LOSS.check_calls(sample)


@pytest.mark.parametrize("status", [400, 422, 500])
def test_one_ensemble_judge_failing_otherwise_is_left_out_and_the_others_decide(judge_server, status):
    server = judge_server(script=by_model({"a": Reply(content=A), "b": refusal(status), "c": Reply(content=A)}))
    outcome, sample = asyncio.run(judged(EnsembleJudge(judge_config(server, "abc"))))
    assert outcome == "win" and not sample.errors
    assert sample.metrics()["judge/ensemble/b/failures_total"] == 1


def test_a_prompt_over_one_ensemble_judges_context_stops_the_step(judge_server):
    too_long = Reply(status=400, body=b'{"error": {"message": "This model\'s maximum context length is 8192 tokens"}}')
    server = judge_server(script=by_model({"a": Reply(content=A), "b": Reply(content=A), "c": too_long}))
    err, sample = asyncio.run(judged(EnsembleJudge(judge_config(server, "abc"))))
    assert isinstance(err, JudgeContextLengthError) and err.max_context == 8192
    with pytest.raises(JudgeFailure):
        LOSS.check_calls(sample)


# ---------------------------------------------------------------- names


def test_three_unnamed_members_of_one_model_are_three_judges_with_three_names(judge_server):
    server = judge_server(script=lambda request, index: Reply(content=A))
    config = judge_config(server, [{}, {}, {}], model="org/m")
    client = EnsembleJudge(config)
    assert client.judge_names == ("m", "m-2", "m-3")
    outcome, sample = asyncio.run(judged(client))
    assert outcome == "win" and server.count == 3
    metrics = sample.metrics()
    assert [metrics[f"judge/ensemble/{name}/calls_total"] for name in ("m", "m-2", "m-3")] == [1, 1, 1]
    assert metrics["judge/ensemble/agreement"] == 1.0


def test_an_unnamed_member_steps_round_a_name_already_given_and_a_name_given_twice_is_refused():
    config = judge_config(None, [{"name": "m-2"}, {}, {}], model="org/m")
    assert EnsembleJudge(config).judge_names == ("m-2", "m", "m-3")
    with pytest.raises(ConfigError, match=r"members\[1\]\.name='m': another member has that name"):
        judge_config(None, [{}, {"name": "m"}], model="org/m")


# ---------------------------------------------------------------- what a call adds up


def test_an_ensembles_cost_and_tokens_are_its_judges_added_up(judge_server):
    usage = {
        name: {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1}
        for name, n in zip("abc", (10, 20, 30))
    }
    said = Counter()

    def script(request, index):  # c says B in the second judgment
        model = request["model"]
        said[model] += 1
        verdict = A.replace("[[A]]", "[[B]]") if model == "c" and said[model] == 2 else A
        return Reply(content=verdict, usage=usage[model])

    server = judge_server(script=script)
    members = [
        {"name": "a", "model": "a", "price": {"prompt_per_mtok": 100_000, "completion_per_mtok": 1_000_000}},
        {"name": "b", "model": "b", "price": {"prompt_per_mtok": 200_000}},
        {"name": "c", "model": "c", "price": {"prompt_per_mtok": 0, "completion_per_mtok": 3_000_000}},
    ]
    client = EnsembleJudge(judge_config(server, members))

    async def two_judgments():
        sample = SampleJudge(client)
        try:
            replies = [await sample.complete(MESSAGES) for _ in range(2)]
        finally:
            await client.close()
        return replies, sample, [sample.read(reply, read_outcome, "A") for reply in replies]

    (reply, _), sample, outcomes = asyncio.run(two_judgments())
    assert reply.cost == pytest.approx(2.0 + 4.0 + 3.0)
    assert (reply.tokens, reply.prompt_tokens, reply.completion_tokens) == (63, 60, 3)
    assert client.stats.spent.cost == pytest.approx(18.0) and client.stats.spent.tokens == 126
    by_judge = {key.split()[0]: spent.cost for key, spent in client.stats.spent_by_endpoint.items()}
    assert by_judge == pytest.approx({"a": 4.0, "b": 8.0, "c": 6.0})
    metrics = sample.metrics()
    assert metrics["judge_cost"] == pytest.approx(18.0) and metrics["judge_tokens"] == 126
    costs = [metrics[f"judge/ensemble/{name}/cost_total"] for name in "abc"]
    assert costs == pytest.approx([4.0, 8.0, 6.0]) and metrics["judge/ensemble/c/tokens_total"] == 62
    assert outcomes == ["win", "win"] and metrics["judge/ensemble/agreement"] == 0.5  # c read otherwise once


class StandIn:
    """In a member's place (``OpenAIJudge``): answers every call with the ``JudgeReply`` or ``JudgeError`` that
    ``PLAYS`` gives its model, after ``GATES[model]`` opens when there is one."""

    PLAYS: dict = {}
    GATES: dict = {}
    STATS: dict = {}

    def __init__(self, config, concurrency=None, sleep=None, workers=None, upstream_group=""):
        self.model = config.model
        self.endpoint = f"http://{config.model}"
        self.concurrency_limit = self.STATS.get(config.model, JudgeStats()).concurrency_limit or 8
        self.spend = type("Spend", (), {"budget": None})()
        self.waiting = self.cancelled = False

    @property
    def stats(self) -> JudgeStats:
        return self.STATS[self.model]

    async def complete(self, messages):
        try:
            if self.model in self.GATES:
                self.waiting = True
                await self.GATES[self.model].wait()
        except asyncio.CancelledError:
            for _ in range(3):  # (an HTTP request's cleanup: its connection and slot released)
                await asyncio.sleep(0)
            self.cancelled = True
            raise
        played = self.PLAYS[self.model]
        if isinstance(played, BaseException):
            raise played
        return played

    async def close(self):
        pass


@pytest.fixture
def stand_ins(monkeypatch):
    monkeypatch.setattr(ensemble_module, "OpenAIJudge", StandIn)
    monkeypatch.setattr(StandIn, "PLAYS", {})
    monkeypatch.setattr(StandIn, "GATES", {})
    monkeypatch.setattr(StandIn, "STATS", {})
    return StandIn


def replied(model, attempts=1, rate_limited=0, hedges=0, concurrency_limit=0, estimated=False) -> JudgeReply:
    return JudgeReply(
        A, "stop", 0.1, attempts, tokens=3, prompt_tokens=2, completion_tokens=1, tokens_estimated=estimated,
        cost=0.25, endpoint=f"http://{model}", rate_limited=rate_limited, concurrency_limit=concurrency_limit,
        hedges=hedges,
    )  # fmt: skip


def failure(attempts, rate_limited=0, hedges=0) -> JudgeError:
    err = JudgeHTTPError("http://x", 500, "boom", attempts)
    err.rate_limited, err.hedges = rate_limited, hedges
    return err


def test_an_ensembles_retries_429s_and_hedges_are_its_judges_added_up_failed_calls_included(stand_ins):
    stand_ins.PLAYS.update(
        a=replied("a", attempts=3, rate_limited=1, hedges=1, concurrency_limit=8),
        b=replied("b", estimated=True, concurrency_limit=4),
        c=replied("c"),  # (a client with no limit of its own)
        d=failure(attempts=3, rate_limited=2, hedges=1),
        e=failure(attempts=1, rate_limited=1),
    )

    async def timed():
        start = time.perf_counter()
        reply = await EnsembleJudge(judge_config(None, "abcde")).complete(MESSAGES)
        return reply, time.perf_counter() - start

    reply, took_s = asyncio.run(timed())
    assert 0 <= reply.latency_s <= took_s and reply.text == ""  # the whole call's; each judge's text is read
    assert reply.attempts - 1 == 2 + 2  # a's two retries and d's
    assert (reply.rate_limited, reply.hedges, reply.concurrency_limit) == (4, 2, 4)
    assert reply.tokens_estimated and reply.endpoint == "http://a, http://b, http://c"
    assert (reply.tokens, reply.prompt_tokens, reply.completion_tokens, reply.cost) == (9, 6, 3, 0.75)
    assert [(a.name, a.error is None) for a in reply.answers] == [
        ("a", True), ("b", True), ("c", True), ("d", False), ("e", False)
    ]  # fmt: skip
    assert reply.transcript.startswith(f"[a] {A}\n\n[b] ") and "[d] (failed: judge at http://x" in reply.transcript


def test_too_few_answers_fail_the_call_with_what_the_judges_that_answered_met(stand_ins):
    stand_ins.PLAYS.update(a=replied("a", rate_limited=1, hedges=1, concurrency_limit=6), b=failure(2, 1), c=failure(1))
    client = EnsembleJudge(judge_config(None, "abc", quorum=2))
    with pytest.raises(EnsembleFailed) as info:
        asyncio.run(client.complete(MESSAGES))
    err = info.value
    assert "1 of the ensemble's 3 judges answered, under judge.ensemble.quorum=2: b: judge at" in str(err)
    assert "; c: judge at http://x" in str(err) and "a (http://a), b (http://b), c (http://c)" in str(err)
    assert (err.rate_limited, err.hedges, err.concurrency_limit, err.attempts) == (2, 1, 6, 2)
    assert err.reply.cost == 0.25 and [a.name for a in err.reply.answers] == ["a", "b", "c"]


def test_a_call_no_judge_answered_reports_no_concurrency_limit(stand_ins):
    stand_ins.PLAYS.update(a=failure(1), b=failure(1))
    with pytest.raises(EnsembleFailed) as info:
        asyncio.run(EnsembleJudge(judge_config(None, "ab")).complete(MESSAGES))
    assert info.value.concurrency_limit == 0 and info.value.reply.endpoint == ""


def test_a_quorum_met_exactly_is_an_answer(stand_ins):
    stand_ins.PLAYS.update(a=replied("a"), b=replied("b"), c=failure(1))
    reply = asyncio.run(EnsembleJudge(judge_config(None, "abc", quorum=2)).complete(MESSAGES))
    assert [a.reply is not None for a in reply.answers] == [True, True, False]


def test_a_call_that_breaks_in_one_judge_leaves_no_other_judges_call_running(stand_ins):
    async def run():
        stand_ins.GATES["b"] = asyncio.Event()  # b never answers
        stand_ins.PLAYS.update(a=RuntimeError("a bug in a judge"), b=replied("b"))
        client = EnsembleJudge(judge_config(None, "ab"))
        with pytest.raises(RuntimeError, match="a bug in a judge"):
            await client.complete(MESSAGES)
        return client.judges["b"].cancelled

    assert asyncio.run(run())


def test_a_cancelled_call_cancels_every_judges_call(stand_ins):
    async def run():
        stand_ins.GATES.update(a=asyncio.Event(), b=asyncio.Event())
        client = EnsembleJudge(judge_config(None, "ab"))
        call = asyncio.ensure_future(client.complete(MESSAGES))
        await until(lambda: all(judge.waiting for judge in client.judges.values()))
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return [judge.cancelled for judge in client.judges.values()]

    assert asyncio.run(run()) == [True, True]


def test_an_ensembles_stats_are_its_judges_added_up_and_its_limit_the_least(stand_ins):
    stand_ins.STATS.update(
        a=JudgeStats(2, 1, Counter(http=1), 1, 8, 1, Spent(calls=2, replies=1, tokens=5, cost=0.5),
                     {"http://a": Spent(calls=2, replies=1, tokens=5, cost=0.5)}),
        b=JudgeStats(3, 0, Counter(http=1, timeout=2), 4, 3, 2, Spent(calls=3, replies=3, tokens=7, cost=1.0),
                     {"http://a": Spent(calls=3, replies=3, tokens=7, cost=1.0)}),
    )  # fmt: skip
    client = EnsembleJudge(judge_config(None, "ab"))
    stats = client.stats
    assert (stats.requests, stats.retries, stats.rate_limited, stats.limit_decreases) == (5, 1, 5, 3)
    assert stats.failures == Counter(http=2, timeout=2) and stats.concurrency_limit == client.concurrency_limit == 3
    assert (stats.spent.calls, stats.spent.replies, stats.spent.tokens, stats.spent.cost) == (5, 4, 12, 1.5)
    assert {key: spent.calls for key, spent in stats.spent_by_endpoint.items()} == {"a http://a": 2, "b http://a": 3}


# ---------------------------------------------------------------- shares of the judges' limits


def test_each_member_gets_the_workers_share_of_its_own_concurrency_never_none():
    members = [
        {"name": "same"},
        {"name": "half", "max_concurrency": 4},
        {"name": "five", "max_concurrency": 5},
        {"name": "one", "max_concurrency": 1},
    ]
    config = judge_config(None, members, max_concurrency=8)
    shares = {name: judge.concurrency for name, judge in EnsembleJudge(config, concurrency=4).judges.items()}
    assert shares == {"same": 4, "half": 2, "five": 2, "one": 1}  # (five: 2.5 of its slots, rounded down)
    assert all(isinstance(share, int) for share in shares.values())
    own = {name: judge.concurrency for name, judge in EnsembleJudge(config).judges.items()}
    assert own == {"same": 8, "half": 4, "five": 5, "one": 1}


def test_a_members_unset_api_key_is_named_under_its_own_key(monkeypatch):
    monkeypatch.delenv("WRITING_RL_TEST_UNSET_KEY", raising=False)
    config = judge_config(None, [{"name": "x"}, {"name": "y", "api_key_env": "WRITING_RL_TEST_UNSET_KEY"}])
    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.judge\.ensemble\.members\[1\]\.api_key_env names"):
        EnsembleJudge(config)


def test_the_judges_budget_is_split_between_the_workers_sharing_the_judge(judge_server):
    server = judge_server(script=lambda request, index: Reply(content=A))
    config = judge_config(server, "ab", budget={"calls": 4}, max_concurrency=8)

    async def judgments(client):
        made = 0
        try:
            while True:
                await client.complete(MESSAGES)
                made += 1
        except JudgeError:
            return made
        finally:
            await client.close()

    assert asyncio.run(judgments(EnsembleJudge(config))) == 2  # one client: the whole budget
    assert asyncio.run(judgments(EnsembleJudge(config, concurrency=4))) == 1  # half of max_concurrency: half
    assert asyncio.run(judgments(EnsembleJudge(config, concurrency=1, workers=2))) == 1  # as the caller says
    assert server.count == 8


def test_an_ensembles_judges_wait_through_the_sleep_it_is_given(judge_server):
    said = Counter()

    def script(request, index):  # b fails its first request
        said[request["model"]] += 1
        return refusal(500) if request["model"] == "b" and said["b"] == 1 else Reply(content=A)

    server = judge_server(script=script)
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    client = EnsembleJudge(judge_config(server, "ab", max_retries=1), sleep=sleep)
    outcome, sample = asyncio.run(judged(client))
    assert outcome == "win" and len(waits) == 1 and server.count == 3
    assert sample.metrics()["judge/ensemble/b/failures_total"] == 0


def test_an_ensemble_checks_a_config_it_is_handed_unchecked():
    from writing_rl.judge.ensemble_config import EnsembleConfig

    config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", ensemble=EnsembleConfig([{}, {}], split="win"))
    with pytest.raises(ConfigError, match=r"judge\.ensemble\.split='win'"):
        EnsembleJudge(config)


def test_a_shadow_ensemble_on_the_training_judges_url_keeps_its_own_endpoint_limits(judge_server):
    """A shadow judge must not have its room taken, or its limit cut, by the training judge's 429s."""
    said = Counter()

    def script(request, index):  # each judge's first request is refused
        said[request["model"]] += 1
        return (
            Reply(status=429, body=b"busy", headers={"Retry-After": "0"})
            if said[request["model"]] == 1
            else Reply(content=A)
        )

    server = judge_server(script=script)
    config = judge_config(server, "ab", max_concurrency=4)

    async def both():
        training, shadow = EnsembleJudge(config), EnsembleJudge(config, upstream_group="shadow")
        try:
            await training.complete(MESSAGES)
            await shadow.complete(MESSAGES)
            return training.concurrency_limit, shadow.concurrency_limit
        finally:
            await training.close()
            await shadow.close()

    assert asyncio.run(both()) == (3, 4) and server.count == 6
