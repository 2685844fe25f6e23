"""Judge ensembles (writing_rl/judge/ensemble.py, votes.py, ensemble_config.py): every judge asked each judgment,
the readings combined, failures left out and counted, the counts in the tracker's metrics. Against one scripted
judge server on 127.0.0.1 whose judges are told apart by the model each request names."""

import asyncio

import pytest

from reward_fns.pairwise import compute_score
from writing_rl.judge import JudgeBudgetExceeded, JudgeError, JudgeHTTPError, NoJudge, SampleJudge, judge_client
from writing_rl.judge.cache import CachedJudge
from writing_rl.judge.config import PREFIX, JudgeConfig
from writing_rl.judge.ensemble import EnsembleFailed, EnsembleJudge, EnsembleReply
from writing_rl.judge.votes import combine
from writing_rl.protocols import Unreadable, read_gqm_output
from writing_rl.protocols.comparison import read_outcome
from writing_rl.protocols.rubric import read_criterion_score, read_rubric_scores
from writing_rl.reward_loop.config import ShadowConfig
from writing_rl.reward_loop.health.metrics import judge_health
from writing_rl.reward_loop.shadow.scoring import ShadowScoring
from writing_rl.settings import ConfigError, build

from judge_server import Reply, preference_verdict
from waiting import until

MESSAGES = [{"role": "user", "content": "Compare the two responses. [[A]] or [[B]]?"}]
A, B, C = (f"I weighed both.\nFinal verdict:\n[[{v}]]" for v in "ABC")


def score_reply(score: int) -> str:
    return f'Weighed the criterion.\n```json\n{{"score": {score}, "reason": "r"}}\n```'


def by_model(answers: dict):
    """A script answering each judge (the request's model) with its text, or its ``Reply``."""

    def script(request: dict, index: int) -> Reply:
        answer = answers[request["model"]]
        return Reply(content=answer) if isinstance(answer, str) else answer

    return script


def ensemble(server, judges=("a", "b", "c"), split="tie", quorum=1, **judge) -> JudgeConfig:
    raw = {
        "base_url": server.base_url,
        "model": judges[0],
        "backoff_base_s": 0.01,
        "max_retries": 0,
        "hedge_after": 0,
        "ensemble": {"members": [{"name": j, "model": j} for j in judges], "split": split, "quorum": quorum},
        **judge,
    }
    return build(JudgeConfig, raw, PREFIX).validate()


async def judged(config: JudgeConfig, reader, *args):
    """(the reading, or the JudgeError the call raised; the sample's record)."""
    client = judge_client(config)
    sample = SampleJudge(client)
    try:
        try:
            reply = await sample.complete(MESSAGES)
        except JudgeError as err:
            return err, sample
        return sample.read(reply, reader, *args), sample
    finally:
        await client.close()


def test_the_majority_verdict_decides_and_every_judge_is_counted(judge_server):
    server = judge_server(script=by_model({"a": A, "b": A, "c": B}))
    config = ensemble(server)
    assert isinstance(judge_client(config), EnsembleJudge)
    outcome, sample = asyncio.run(judged(config, read_outcome, "A"))
    assert outcome == "win" and server.count == 3
    assert sorted(r["model"] for r in server.requests) == ["a", "b", "c"]
    metrics = sample.metrics()
    assert metrics["judge_calls"] == 3 and metrics["judge_error"] == 0 and metrics["judge_tokens"] == 6
    for name in "abc":
        assert metrics[f"judge/ensemble/{name}/calls_total"] == 1
        assert metrics[f"judge/ensemble/{name}/failures_total"] == 0
        assert metrics[f"judge/ensemble/{name}/tokens_total"] == 2
    assert metrics["judge/ensemble/judgments_total"] == 1 and metrics["judge/ensemble/splits_total"] == 0
    assert metrics["judge/ensemble/agreement"] == 0.0  # (c read otherwise)
    assert "[a]" in sample.transcripts()[0]["reply"] and "[c]" in sample.transcripts()[0]["reply"]


def test_the_judges_are_asked_at_once(judge_server):
    server = judge_server(script=lambda request, index: Reply(content=A, hold=True))

    async def run():
        client = judge_client(ensemble(server))
        try:
            call = asyncio.ensure_future(client.complete(MESSAGES))
            await until(lambda: server.in_flight == 3)  # all three before any has answered
            server.release()
            return await call
        finally:
            await client.close()

    reply = asyncio.run(run())
    assert isinstance(reply, EnsembleReply) and [a.name for a in reply.answers] == ["a", "b", "c"]


def test_scores_are_averaged_and_agreement_needs_equal_readings(judge_server):
    server = judge_server(script=by_model({"a": score_reply(6), "b": score_reply(8), "c": score_reply(10)}))
    value, sample = asyncio.run(judged(ensemble(server), read_criterion_score))
    assert value == pytest.approx(8.0) and sample.metrics()["judge/ensemble/agreement"] == 0.0
    same = judge_server(script=lambda request, index: Reply(content=score_reply(7)))
    value, sample = asyncio.run(judged(ensemble(same), read_criterion_score))
    assert value == 7.0 and sample.metrics()["judge/ensemble/agreement"] == 1.0


def test_combining_numbers_element_wise_where_shapes_agree():
    assert combine([[6.0, 9.0], [8.0, 5.0]], "tie") == ([7.0, 7.0], False)
    assert combine([{"A": 8, "B": 2}, {"A": 6, "B": 4}], "tie") == ({"A": 7.0, "B": 3.0}, False)
    # Shapes that differ cannot be averaged: the majority of equal values, else a split (unreadable).
    assert combine([[1.0], [1.0], [1.0, 2.0]], "tie") == ([1.0], False)
    value, was_split = combine([[1.0], [1.0, 2.0]], "tie")
    assert was_split and isinstance(value, Unreadable) and value.kind == "parse_error"
    # GRRM's ranking: its scores averaged, its ranking the majority's.
    text = "Weighed.\n### Final Ranking:\n{}\n### Scores:\n{}"
    rankings = [read_gqm_output(text.format(r, s), 2, headers="optional", strict=False) for r, s in
                [("A > B", "A: 8, B: 3"), ("A > B", "A: 6, B: 5"), ("B > A", "A: 4, B: 7")]]  # fmt: skip
    value, was_split = combine(rankings, "tie")
    assert value.scores == {"A": 6.0, "B": 5.0} and value.ranking == (("A",), ("B",)) and not was_split


@pytest.mark.parametrize(
    "split, replies, slot, expected",
    [
        ("tie", (A, B), "A", "tie"),
        ("tie", (A, C), "A", "tie"),
        ("loss", (A, B), "A", "loss"),
        ("loss", (A, C), "B", "loss"),
    ],
)
def test_a_split_counts_as_the_declared_rule_says_never_more_than_a_tie(judge_server, split, replies, slot, expected):
    server = judge_server(script=by_model(dict(zip("ab", replies))))
    outcome, sample = asyncio.run(judged(ensemble(server, ("a", "b"), split=split), read_outcome, slot))
    assert outcome == expected
    metrics = sample.metrics()
    assert metrics["judge/ensemble/splits_total"] == 1 and metrics["judge/ensemble/agreement"] == 0.0


def test_a_split_under_the_unreadable_rule_is_an_unreadable_reply(judge_server):
    server = judge_server(script=by_model({"a": A, "b": B}))
    outcome, sample = asyncio.run(judged(ensemble(server, ("a", "b"), split="unreadable"), read_outcome, "A"))
    assert isinstance(outcome, Unreadable) and outcome.kind == "parse_error" and "split" in outcome
    assert sample.unreadable == [(sample.calls[0].reply, outcome)]  # the parse-error guard sees it


def test_a_split_over_values_the_rule_cannot_count_is_unreadable():
    assert combine(["A", "B"], "tie") == ("C", True)  # verdict letters: a tie is C
    value, was_split = combine(["A", "B"], "loss")  # whose loss? not told by a verdict letter
    assert was_split and isinstance(value, Unreadable)
    assert combine(["win", "win", "loss"], "loss") == ("win", False)


def test_one_judge_failing_leaves_the_others_to_decide_and_is_counted(judge_server):
    failing = Reply(status=500, body=b'{"error": {"message": "boom"}}')
    server = judge_server(script=by_model({"a": A, "b": A, "c": failing}))
    outcome, sample = asyncio.run(judged(ensemble(server), read_outcome, "A"))
    assert outcome == "win" and not sample.errors
    metrics = sample.metrics()
    assert metrics["judge_error"] == 0 and metrics["judge_calls"] == 3
    assert metrics["judge/ensemble/c/failures_total"] == 1 and metrics["judge/ensemble/a/failures_total"] == 0
    assert metrics["judge/ensemble/agreement"] == 1.0  # the two that read agreed


def test_one_judge_unreadable_makes_the_judgment_unreadable_so_a_text_cannot_silence_the_strict_judge(judge_server):
    """A text that breaks one judge's reply (the strictest, say) must not leave the lenient ones to decide: the
    judgment is unreadable, and the reward's on_parse_error rule pays it (never more than a loss or a tie)."""
    cut = Reply(content="Response A opens well, but", finish_reason="length")
    server = judge_server(script=by_model({"a": A, "b": A, "c": cut}))
    outcome, sample = asyncio.run(judged(ensemble(server), read_outcome, "A"))
    assert isinstance(outcome, Unreadable) and outcome.kind == "judge_truncated" and "1 of the ensemble's 3" in outcome
    assert len(sample.unreadable) == 1  # the parse-error guard sees it
    assert sample.metrics()["judge/ensemble/c/unreadable_total"] == 1


def test_a_quorum_turns_too_few_answers_into_a_failed_call_and_an_unread_reply_into_unreadable(judge_server):
    failing = Reply(status=500, body=b"{}")
    server = judge_server(script=by_model({"a": A, "b": failing, "c": failing}))
    err, sample = asyncio.run(judged(ensemble(server, quorum=2), read_outcome, "A"))
    assert isinstance(err, EnsembleFailed) and "1 of the ensemble's 3 judges answered" in str(err)
    assert sample.metrics()["judge_error"] == 1 and sample.metrics()["judge_tokens"] == 2  # a's reply was paid
    unread = judge_server(script=by_model({"a": A, "b": "no verdict", "c": "none either"}))
    outcome, _ = asyncio.run(judged(ensemble(unread, quorum=2), read_outcome, "A"))
    assert isinstance(outcome, Unreadable) and "2 of the ensemble's 3 judges' replies could not be read" in outcome


def test_every_judge_failing_is_a_judge_error_and_every_reply_unreadable_an_unreadable_one(judge_server):
    server = judge_server(script=lambda request, index: Reply(status=500, body=b"{}"))
    err, sample = asyncio.run(judged(ensemble(server), read_outcome, "A"))
    assert isinstance(err, JudgeError) and sample.errors == [err]
    metrics = sample.metrics()
    assert metrics["judge_error"] == 1 and metrics["judge_calls"] == 3
    assert all(metrics[f"judge/ensemble/{n}/failures_total"] == 1 for n in "abc")
    cut = judge_server(script=lambda request, index: Reply(content="A is", finish_reason="length"))
    outcome, sample = asyncio.run(judged(ensemble(cut), read_outcome, "A"))
    assert isinstance(outcome, Unreadable) and outcome.kind == "judge_truncated"  # the kind they share
    assert len(sample.unreadable) == 1


def test_a_failure_no_reply_causes_stops_whatever_the_others_answered(judge_server):
    wrong_key = Reply(status=401, body=b'{"error": {"message": "bad key"}}')
    server = judge_server(script=by_model({"a": A, "b": A, "c": wrong_key}))
    err, _ = asyncio.run(judged(ensemble(server), read_outcome, "A"))
    assert isinstance(err, JudgeHTTPError) and err.status == 401


def test_the_judges_share_one_budget(judge_server):
    server = judge_server(script=lambda request, index: Reply(content=A))
    client = judge_client(ensemble(server, ("a", "b"), budget={"calls": 4}))

    async def run():
        try:
            first = [await client.complete(MESSAGES) for _ in range(2)]
            with pytest.raises(JudgeBudgetExceeded, match="the 2 judges of its ensemble together"):
                await client.complete(MESSAGES)
            return first
        finally:
            await client.close()

    assert len(asyncio.run(run())) == 2 and server.count == 4
    assert client.stats.spent.calls == 4  # no call past the budget reached either judge


def test_the_metrics_reach_the_tracker_and_every_sample_carries_the_same_keys(judge_server):
    server = judge_server(script=by_model({"a": A, "b": B, "c": B}))
    config = ensemble(server)
    client = judge_client(config)

    async def two_samples():
        samples = [SampleJudge(client, client=client) for _ in range(2)]
        try:
            for sample in samples:
                sample.read(await sample.complete(MESSAGES), read_outcome, "A")
        finally:
            await client.close()
        return samples

    rows = [sample.metrics() for sample in asyncio.run(two_samples())]
    no_call = SampleJudge(NoJudge("the group never completed"), client=client).metrics()
    assert set(no_call) == set(rows[0]) and no_call["judge/ensemble/agreement"] == -1.0
    metrics = judge_health([*rows, no_call])
    assert metrics["judge/ensemble/a/calls_total"] == 2 and metrics["judge/ensemble/c/failures_total"] == 0
    assert metrics["judge/ensemble/judgments_total"] == 2 and metrics["judge/ensemble/splits_total"] == 0
    assert metrics["judge/ensemble/agreement"] == 0.0  # (the sample without a judgment left out)
    assert metrics["judge/calls_total"] == 6
    assert "a http://127.0.0.1" in next(iter(client.stats.spent_by_endpoint))  # the batch log line's split


def test_a_reward_fn_scores_with_an_ensemble(judge_server):
    # a and b prefer the better response; c calls every comparison a tie.
    preferring = lambda request, index: Reply(content=preference_verdict(request["messages"][-1]["content"]))  # noqa: E731
    scripts = {"a": preferring, "b": preferring, "c": lambda request, index: Reply(content=C)}
    server = judge_server(script=lambda request, index: scripts[request["model"]](request, index))
    ground_truth = {"prompt": "Write a haiku.", "target": ["a plain reference"], "criteria": None, "id": 7}

    async def score(config):
        client = judge_client(config)
        sample = SampleJudge(client)
        try:
            result = await compute_score(
                "writing", "a good good answer", ground_truth, {}, judge=sample, strategy="both"
            )
        finally:
            await client.close()
        return result, sample.metrics()

    result, metrics = asyncio.run(score(ensemble(server)))
    assert result["score"] == 1.0 and result["win"] == 1.0 and result["parse_error"] == 0
    assert metrics["judge_calls"] == 6 and metrics["judge/ensemble/judgments_total"] == 2
    result, metrics = asyncio.run(score(ensemble(server, ("a", "c"), split="tie")))  # a win, c a tie: split
    assert result["score"] == 0.5 and metrics["judge/ensemble/splits_total"] == 2


def test_the_shadow_judge_reads_an_ensemble_too(judge_server):
    server = judge_server()
    members = [{"name": "x", "model": "x"}, {"name": "y", "model": "y"}]
    shadow_judge = {"base_url": server.base_url, "model": "x", "ensemble": {"members": members}}
    settings = ShadowConfig.from_verl(
        {"reward": {"reward_kwargs": {"shadow": {"fraction": 0.5, "judge": shadow_judge}}}}
    )
    assert isinstance(ShadowScoring(settings).judge, EnsembleJudge)
    members[1] = {"name": "y", "model": ""}
    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.shadow\.judge\.ensemble\.members\[1\]\.model"):
        ShadowConfig.from_verl({"reward": {"reward_kwargs": {"shadow": {"fraction": 0.5, "judge": shadow_judge}}}})


def test_the_offline_tools_refuse_an_ensemble(tmp_path, judge_server):
    config = ensemble(judge_server())
    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.judge\.ensemble: the offline tools"):
        CachedJudge.for_config(judge_client(config), config, tmp_path / "cache.db")


@pytest.mark.parametrize(
    "section, message",
    [
        ({"members": [{"model": "x"}]}, r"judge\.ensemble\.members must list two or more judges"),
        (
            {"members": [{}, {"modle": "x"}]},
            r"under reward\.reward_kwargs\.judge\.ensemble\.members\[1\]: modle; did you",
        ),
        ({"members": [{}, {"model": ""}]}, r"judge\.ensemble\.members\[1\]\.model is not set"),
        ({"members": [{}, {"base_url": "ftp://x"}]}, r"judge\.ensemble\.members\[1\]\.base_url must start with http"),
        ({"members": [{}, {"max_retries": -1}]}, r"judge\.ensemble\.members\[1\]\.max_retries=-1"),
        ({"members": [{}, {"budget": {"calls": 9}}]}, r"judge\.ensemble\.members\[1\]\.budget: set on reward\.reward"),
        ({"members": [{}, {"name": "a/b"}]}, r"judge\.ensemble\.members\[1\]\.name='a/b'"),
        ({"members": [{"name": "x"}, {"name": "x"}]}, r"judge\.ensemble\.members\[1\]\.name='x': another member"),
        ({"members": [{}, "b"]}, r"judge\.ensemble\.members\[1\] must be a mapping"),
        ({"members": [{}, {}], "quorum": 3}, r"judge\.ensemble\.quorum=3 is more than its 2 members"),
        ({"members": [{}, {}], "split": "win"}, r"judge\.ensemble\.split='win': expected one of"),
        ({"members": [{}, {}], "quorum": 0}, r"judge\.ensemble\.quorum=0"),
        ({"member": []}, r"unknown key\(s\) under reward\.reward_kwargs\.judge\.ensemble: member"),
        ([{}, {}], r"reward\.reward_kwargs\.judge\.ensemble must be a section with the keys members, split, quorum"),
    ],
)
def test_config_errors_name_the_key(section, message):
    with pytest.raises(ConfigError, match=message):
        raw = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "ensemble": section}
        build(JudgeConfig, raw, PREFIX).validate()


def test_members_default_to_the_judge_and_are_named_by_their_model():
    raw = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "org/m",
        "max_concurrency": 8,
        "price": {"prompt_per_mtok": 1.0},
    }
    members = [{}, {"model": "other/m"}, {"model": "n", "max_concurrency": 4, "price": {"prompt_per_mtok": 5.0}}]
    config = build(JudgeConfig, {**raw, "ensemble": {"members": members}}, PREFIX).validate()
    judges = config.ensemble.judges(config, PREFIX)
    assert [name for name, _ in judges] == ["m", "m-2", "n"]
    assert judges[0][1].model == "org/m" and judges[2][1].price.prompt_per_mtok == 5.0
    client = EnsembleJudge(config, concurrency=4, workers=2)
    assert [judge.concurrency for judge in client.judges.values()] == [4, 4, 2]  # each judge's own share
    assert not JudgeConfig(**raw).ensemble.on


def test_a_read_of_a_plain_reply_is_unchanged():
    from writing_rl.judge import JudgeReply

    sample = SampleJudge(NoJudge("-"))
    assert sample.read(JudgeReply(A, "stop", 0.1), read_outcome, "A") == "win"
    assert sample.read(JudgeReply('{"scores": [{"id": 1, "score": 3}]}', "stop", 0.1), read_rubric_scores, 1) == [3.0]
    assert "judge/ensemble/agreement" not in sample.metrics()
