"""`writing-rl select`: margins against the best reference, top-K / top-p% / quotas, ties, resume, failures."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest

from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.errors import JudgeFailures
from writing_rl.offline.judge import JudgeSettings, Judgment
from writing_rl.selection.job import SelectJob
from writing_rl.selection.margins import (
    MARGIN_KINDS,
    IdMargin,
    bin_counts,
    budget,
    choose,
    parse_quotas,
    proportional_quotas,
    rank_ids,
    response_score,
    tie_key,
)
from writing_rl.selection.select import run_select, score_pair_judgment
from writing_rl.tools.cli import main as cli

from conftest import png_colours, writing_row
from judge_server import Reply, default_script
from offline_helpers import first_position_judge, pair_of, write_jsonl

# ---- pure functions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "outcomes, expected",
    [
        (["loss", "loss"], 1.0),
        (["tie", "tie"], 0.5),
        (["win", "win"], 0.0),
        (["loss", "win"], 0.5),  # a position-flipping judge: no information
        (["loss", "tie"], 0.75),
        (["tie"], 0.5),  # the other order gave no verdict
        ([], None),
    ],
)
def test_response_score(outcomes, expected):
    win_rate = MARGIN_KINDS["win-rate"]
    slot_a = {"win": "A", "loss": "B", "tie": "C"}  # the response shown as A: its outcome -> the verdict
    points = [win_rate.reference_points(Judgment(verdict=slot_a[o]), "A") for o in outcomes]
    assert response_score(points) == expected


@pytest.mark.parametrize(
    "scores, response_slot, points",
    [
        ((7, 4), "A", -3.0),  # the response (A) scored 3 above the reference
        ((7, 4), "B", 3.0),  # the reference (A) scored 3 above the response
        ((5, 5), "A", 0.0),
        ((0, 10), "A", 10.0),
    ],
)
def test_score_gap_points(scores, response_slot, points):
    judgment = score_pair_judgment(f"Weighed.\nA: {scores[0]}, B: {scores[1]}")
    assert judgment.scores == scores
    assert MARGIN_KINDS["score-gap"].reference_points(judgment, response_slot) == points


@pytest.mark.parametrize(
    "judged, top_k, top_percent, expected",
    [
        (10, 3, None, 3),
        (10, 30, None, 10),
        (10, None, 25, 3),
        (10, None, 35, 4),
        (10, None, 100, 10),
        (7, None, 50, 4),
        (0, None, 50, 0),
    ],
)
def test_budget(judged, top_k, top_percent, expected):
    assert budget(judged, top_k, top_percent) == expected


@pytest.mark.parametrize(
    "counts, total, expected",
    [
        ({"a": 50, "b": 50}, 10, {"a": 5, "b": 5}),
        ({"a": 60, "b": 30, "c": 10}, 10, {"a": 6, "b": 3, "c": 1}),
        ({"a": 1, "b": 1, "c": 1}, 2, {"a": 1, "b": 1, "c": 0}),  # equal remainders: by name
        ({"a": 2, "b": 5}, 3, {"a": 1, "b": 2}),  # 0.857 / 2.143: the larger remainder wins the last slot
        ({"a": 3, "b": 1}, 4, {"a": 3, "b": 1}),
    ],
)
def test_proportional_quotas(counts, total, expected):
    quotas = proportional_quotas(counts, total)
    assert quotas == expected and sum(quotas.values()) == total


def test_parse_quotas():
    assert parse_quotas(None) is None
    assert parse_quotas(["proportional"]) == "proportional"
    assert parse_quotas(["creative=100", "a=b=2"]) == {"creative": 100, "a=b": 2}
    for bad in (["creative"], ["creative=x"], ["=3"], ["a=1", "a=2"], ["proportional", "a=1"], ["a=-1"]):
        with pytest.raises(ValueError, match="quota"):
            parse_quotas(bad)


def items(margins: dict[int, float | None], domains: dict[int, str] | None = None) -> list[IdMargin]:
    out = []
    for row, (id_, margin) in enumerate(margins.items()):
        item = IdMargin(id=id_, row=row, domain=(domains or {}).get(id_, "d"), responses=1)
        if margin is not None:
            item.response_scores.append(margin)
        out.append(item)
    return out


def test_rank_breaks_ties_by_seeded_hash_and_skips_unjudged():
    pool = items({i: 0.5 for i in range(20)} | {100: 1.0, 101: None})
    ranked = rank_ids(pool, seed=0)
    assert ranked[0].id == 100 and 101 not in [m.id for m in ranked] and len(ranked) == 21
    tied = [m.id for m in ranked[1:]]
    assert tied == sorted(range(20), key=lambda i: tie_key(0, i))
    assert tied != sorted(tied)  # not simply by id
    again = [m.id for m in rank_ids(items({i: 0.5 for i in range(20)}), seed=0)]
    other_seed = [m.id for m in rank_ids(items({i: 0.5 for i in range(20)}), seed=1)]
    assert again == tied and other_seed != tied
    assert [m.rank for m in ranked] == list(range(1, 22)) and pool[-1].rank is None


def test_choose_global_and_quotas():
    margins = {0: 1.0, 1: 0.9, 2: 0.8, 3: 0.7, 4: 0.6, 5: 0.5}
    domains = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}

    choice = choose(rank_ids(items(margins, domains)), top_k=2)
    assert [m.id for m in choice.chosen] == [0, 1] and choice.targets is None

    choice = choose(rank_ids(items(margins, domains)), top_percent=50, quotas="proportional")
    assert choice.targets == {"a": 2, "b": 1, "c": 0}  # 3 of 6 split 1.5 / 1.0 / 0.5 -> largest remainder: a
    assert sorted(m.id for m in choice.chosen) == [0, 1, 3]

    pool = items(margins, domains)
    choice = choose(rank_ids(pool), quotas={"b": 1, "c": 3})
    assert sorted(m.id for m in choice.chosen) == [3, 5]
    assert choice.shortfall == {"c": 2}
    assert [m.id for m in pool if m.selected] == [3, 5]


# ---- against the scripted judge ------------------------------------------------------------------------
# The default scripted judge prefers the text with more "good" than "bad". Every row's references are
# ("bad", "good good"): the best one (last) has quality 2; the first one would give other margins.

RESPONSES = {
    0: ["bad", "bad bad"],  # both worse: margin 1
    1: ["good good", "bad"],  # tie (0.5) and loss (1): 0.75
    2: ["good good"],  # tie: 0.5
    3: ["good good good", "bad"],  # win (0) and loss (1): 0.5
    4: ["good good good"],  # win: 0
    5: ["<think>never closed"],  # no answer: 1, no judge call
}
UNIQUE_REQUESTS = 14
MARGINS = {0: 1.0, 1: 0.75, 2: 0.5, 3: 0.5, 4: 0.0, 5: 1.0}
DOMAINS = {0: "creative", 1: "creative", 2: "creative", 3: "business", 4: "business", 5: "business"}


def make_data(tmp_path, extra_rows: int = 0):
    rows = []
    for i in list(RESPONSES) + [6 + k for k in range(extra_rows)]:
        row = writing_row(i, prompt=f"Write piece {i}.", target=("bad", "good good"))
        row["data_source"] = DOMAINS.get(i, "business")
        rows.append(row)
    data = tmp_path / "data.parquet"
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows), data)
    responses = write_jsonl(
        tmp_path / "responses.jsonl", [{"id": i, "response": r} for i, texts in RESPONSES.items() for r in texts]
    )
    return data, responses


def settings_for(server, **kw) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="scripted", backoff_base_s=0.01, **kw))


def read_margins(out) -> dict[int, dict]:
    with open(out / "margins.csv") as f:
        return {int(r["id"]): r for r in csv.DictReader(f)}


def test_selects_the_ids_that_trail_the_best_reference_most(tmp_path, judge_server):
    server = judge_server()
    data, responses = make_data(tmp_path, extra_rows=1)  # id 6 has no responses
    out = tmp_path / "out"
    report = run_select(
        SelectJob(data=data, responses=responses, out=out, top_k=3, progress=False), settings_for(server)
    )

    # 8 responses with an answer, both orders: 16 calls. The "good good" responses of ids 1 and 2 equal the
    # reference, so their two orders are one and the same request, sent once.
    assert len(server.requests) == UNIQUE_REQUESTS
    for request in server.requests:  # always the best reference, never the easiest
        a, b = pair_of(request)
        assert "good good" in (a, b)

    margins = read_margins(out)
    assert {i: float(r["margin"]) for i, r in margins.items() if r["margin"]} == MARGINS
    assert margins[6]["status"] == "no_responses" and margins[6]["selected"] == "0" and margins[6]["margin"] == ""
    assert margins[5]["format_errors"] == "1" and margins[5]["comparisons"] == "0"
    assert margins[1]["comparisons"] == "4" and margins[1]["responses"] == "2"
    # top 3: the two ids at margin 1 and the one at 0.75
    assert {i for i, r in margins.items() if r["selected"] == "1"} == {0, 1, 5}
    assert [int(r["rank"]) for r in margins.values() if r["rank"]] == list(range(1, 7))

    selected = pq.read_table(out / "selected.parquet")
    original = pq.read_table(data)
    assert selected.schema == original.schema
    assert selected.to_pylist() == [
        r for r in original.to_pylist() if r["reward_model"]["ground_truth"]["id"] in (0, 1, 5)
    ]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["selected"] == 3 and summary["cut_margin"] == 0.75 and summary["ids_no_responses"] == 1
    assert summary["judge_calls"] == 16 and summary["cache"]["misses"] == UNIQUE_REQUESTS
    assert summary["cache"]["shared"] + summary["cache"]["hits"] == 2
    assert summary["position_consistency"] == 1.0
    assert {"#316eb4", "#bebebe", "#c82828"} <= png_colours((out / "margins.png").read_bytes())
    assert report.summary == summary


def test_quotas_by_domain(tmp_path, judge_server):
    server = judge_server()
    data, responses = make_data(tmp_path)
    cache = tmp_path / "shared.sqlite"

    out = tmp_path / "explicit"
    run_select(
        SelectJob(
            data=data, responses=responses, out=out, quotas={"creative": 1, "business": 2}, cache=cache, progress=False
        ),
        settings_for(server),
    )
    selected = {i for i, r in read_margins(out).items() if r["selected"] == "1"}
    # creative: 0 (1.0); business: 5 (1.0), then 3 (0.5) - business' best after 5
    assert selected == {0, 5, 3}

    out = tmp_path / "proportional"
    calls = len(server.requests)
    report = run_select(
        SelectJob(data=data, responses=responses, out=out, top_k=4, quotas="proportional", cache=cache, progress=False),
        settings_for(server),
    )
    assert len(server.requests) == calls  # every judgment came from the shared cache
    assert {i for i, r in read_margins(out).items() if r["selected"] == "1"} == {0, 1, 5, 3}
    assert report.summary["selected_by_domain"] == {"creative": 2, "business": 2}

    out = tmp_path / "short"
    report = run_select(
        SelectJob(data=data, responses=responses, out=out, quotas={"creative": 5}, cache=cache, progress=False),
        settings_for(server),
    )
    assert report.summary["quota_shortfall"] == {"creative": 2} and report.summary["selected"] == 3

    with pytest.raises(ValueError, match=r"domain\(s\) \['poetry'\]"):
        run_select(
            SelectJob(
                data=data, responses=responses, out=tmp_path / "x", quotas={"poetry": 1}, cache=cache, progress=False
            ),
            settings_for(server),
        )


def test_ties_are_broken_reproducibly_by_the_seed(tmp_path, judge_server):
    server = judge_server()
    data, responses = make_data(tmp_path)
    picks = {}
    for seed in (0, 0, 7):
        report = run_select(
            SelectJob(
                data=data,
                responses=responses,
                out=tmp_path / f"s{seed}",
                top_k=4,
                seed=seed,
                cache=tmp_path / "c.sqlite",
                progress=False,
            ),
            settings_for(server),
        )
        picks.setdefault(seed, []).append({m.id for m in report.margins if m.selected})
    # top 4 = {0, 5, 1} and one of the two ids at margin 0.5 (2 or 3), chosen by hash(seed, id)
    expected = {seed: {0, 1, 5, min((2, 3), key=lambda i: tie_key(seed, i))} for seed in picks}
    assert picks[0] == [expected[0], expected[0]] and picks[7] == [expected[7]]


def test_resume_after_a_crash_repeats_no_answered_call(tmp_path, judge_server):
    fail_from = 5

    def flaky(request, index):  # the endpoint dies after 5 answers
        return Reply(status=400, body=b"gone") if index >= fail_from else default_script(request, index)

    server = judge_server(script=flaky)
    data, responses = make_data(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(JudgeFailures, match=r"\d+ of 16 judge calls failed after retries \(http \d+\); nothing written;"
                       r".* rerun the same command to retry only the failed ones"):  # fmt: skip
        run_select(
            SelectJob(data=data, responses=responses, out=out, top_k=2, progress=False),
            settings_for(server, max_retries=0),
        )
    assert not (out / "selected.parquet").exists() and not (out / "margins.csv").exists()
    first_run = len(server.requests)
    assert first_run == UNIQUE_REQUESTS

    server.script = default_script  # the endpoint is back
    report = run_select(
        SelectJob(data=data, responses=responses, out=out, top_k=2, progress=False), settings_for(server, max_retries=0)
    )
    assert len(server.requests) - first_run == UNIQUE_REQUESTS - fail_from  # only the failed calls again
    assert report.summary["cache"]["misses"] == UNIQUE_REQUESTS - fail_from
    assert {m.id: m.margin for m in report.margins if m.margin is not None} == MARGINS


def test_failures_are_counted_never_scored(tmp_path, judge_server):
    def script(request, index):
        a, b = pair_of(request)
        if "good good good" in (a, b):  # every call about id 4 fails; id 3's first response too
            return Reply(status=400, body=b"refused")
        if "bad bad" in (a, b):  # id 0's second response: no verdict
            return Reply(content="I cannot decide.")
        return default_script(request, index)

    server = judge_server(script=script)
    data, responses = make_data(tmp_path)
    out = tmp_path / "out"
    report = run_select(
        SelectJob(data=data, responses=responses, out=out, top_k=10, allow_judge_errors=True, progress=False),
        settings_for(server, max_retries=0),
    )
    margins = read_margins(out)
    assert margins[4]["status"] == "no_verdict" and margins[4]["judge_errors"] == "2" and margins[4]["selected"] == "0"
    assert margins[3]["judge_errors"] == "2" and float(margins[3]["margin"]) == 1.0  # only the judged response counts
    assert margins[0]["parse_failures"] == "2" and float(margins[0]["margin"]) == 1.0
    assert report.summary["judge_errors"] == {"http": 4} and report.summary["parse_failures"] == 2
    assert report.summary["selected"] == 5  # top_k=10 still never takes an id without a verdict


def test_position_biased_judge_gives_no_signal(tmp_path, judge_server):
    server = judge_server(script=first_position_judge)
    data, responses = make_data(tmp_path)
    report = run_select(
        SelectJob(data=data, responses=responses, out=tmp_path / "out", top_percent=50, progress=False),
        settings_for(server),
    )
    judged = [m for m in report.margins if m.format_errors == 0]
    assert all(m.margin == 0.5 for m in judged)
    assert report.summary["position_consistency"] == 0.0


def scoring_judge(request, index):
    """Rates each response 5 + 2 x (its "good"s - its "bad"s), clamped to 0-10, on a score line."""
    assert request["messages"][-1]["content"].rstrip().endswith("as in: A: 7, B: 4")

    def rate(text: str) -> int:
        return max(0, min(10, 5 + 2 * (text.count("good") - text.count("bad"))))

    a, b = pair_of(request)
    return Reply(
        content=f"Both read.\n**A: {rate(a)}, B: {rate(b)}**"
        if index % 2
        else f"Both read.\nB: {rate(b)}, A: {rate(a)}"
    )


def test_score_gap_margin_tells_a_near_miss_from_a_rout(tmp_path, judge_server):
    server = judge_server(script=scoring_judge)
    data, responses = make_data(tmp_path)
    out = tmp_path / "out"
    report = run_select(
        SelectJob(data=data, responses=responses, out=out, top_k=4, margin="score-gap", progress=False),
        settings_for(server),
    )
    # the best reference "good good" rates 9; the responses 3 ("bad"), 1 ("bad bad"), 9, 10 ("good good good")
    expected = {0: 7.0, 1: 3.0, 2: 0.0, 3: 2.5, 4: -1.0, 5: 10.0}  # id 5 has no answer: the top of the range
    assert {m.id: m.margin for m in report.margins} == expected
    # win-rate ties ids 2 and 3 at 0.5; the score gap ranks 3 (one rout, one narrow win) above 2 (a draw)
    assert {m.id for m in report.margins if m.selected} == {5, 0, 1, 3}
    assert report.summary["margin"] == "score-gap" and report.summary["parse_failures"] == 0
    assert report.summary["position_consistency"] == 1.0
    assert float(read_margins(out)[3]["margin"]) == 2.5
    assert not any("WARNING" in line for line in report.lines())


def test_score_gap_margin_counts_a_verdict_without_scores_as_a_parse_failure(tmp_path, judge_server):
    server = judge_server()  # answers [[A]]/[[B]], never a score line
    data, responses = make_data(tmp_path)
    report = run_select(
        SelectJob(data=data, responses=responses, out=tmp_path / "out", top_k=3, margin="score-gap", progress=False),
        settings_for(server),
    )
    assert report.summary["parse_failures"] == report.summary["judge_calls"] == 16
    # only id 5 (no answer, no judge call) has a margin; the others are never selected
    assert {m.id: m.status for m in report.margins} == {i: "no_verdict" for i in range(5)} | {5: "judged"}
    assert [m.id for m in report.margins if m.selected] == [5]
    assert any("WARNING most replies (16 of 16) did not end with a score line" in line for line in report.lines())
    with pytest.raises(ValueError, match="--margin must be one of"):
        run_select(
            SelectJob(data=data, responses=responses, out=tmp_path / "out", top_k=1, margin="gap", progress=False),
            settings_for(server),
        )


def test_cli_select_and_bad_input(tmp_path, judge_server, capsys):
    server = judge_server()
    data, responses = make_data(tmp_path)
    out = tmp_path / "out"
    argv = ["select", "--data", str(data), "--responses", responses, "--out", str(out), "--judge-url", server.base_url,
            "--judge-model", "scripted", "--quiet"]  # fmt: skip
    assert cli([*argv, "--top-percent", "50", "--quota", "proportional", "--max-concurrency", "4"]) == 0
    assert "selected 3 ids" in capsys.readouterr().out
    assert server.max_in_flight <= 4
    # 3 of 6 split over 3 + 3 judged ids: 1.5 each, the equal remainders go by name: business 2, creative 1
    assert {i for i, r in read_margins(out).items() if r["selected"] == "1"} == {0, 5, 3}

    assert cli([*argv, "--top-k", "2", "--quota", "creative=1"]) == 2
    assert "drop --top-k" in capsys.readouterr().err

    dup = pq.read_table(data).to_pylist()
    dup[1]["reward_model"]["ground_truth"]["id"] = 0
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(dup), tmp_path / "dup.parquet")
    assert cli(["select", "--data", str(tmp_path / "dup.parquet"), *argv[3:], "--top-k", "1"]) == 2
    assert "rows 0 and 1 share ground_truth.id=0" in capsys.readouterr().err

    failing = judge_server(script=lambda request, index: Reply(status=400, body=b"no"))
    argv[argv.index(server.base_url)] = failing.base_url
    assert cli([*argv, "--top-k", "1", "--out", str(tmp_path / "fail"), "--max-retries", "0"]) == 1
    assert "all 16 judge calls failed after retries (http 16); nothing written" in capsys.readouterr().err
    assert not (tmp_path / "fail" / "summary.json").exists()


@pytest.mark.parametrize(
    "values, low, high, bins, counts",
    [
        ([0.0, 0.5, 1.0], 0.0, 1.0, 2, [1, 2]),  # the top edge falls in the last bin
        ([-10.0, 10.0, 5 / 3], -10.0, 10.0, 12, [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]),  # 5/3 is an edge
        ([-0.0, 9.5], -10.0, 10.0, 20, [0] * 10 + [1] + [0] * 8 + [1]),
    ],
)
def test_bin_counts(values, low, high, bins, counts):
    assert bin_counts(values, low, high, bins) == counts


def test_margin_histogram_png():
    from writing_rl.plot import BLUE, GREY, RED, Series, histogram, render_png
    from writing_rl.selection.outputs import margin_histogram

    ranked = rank_ids(items({0: 1.0, 1: 0.9, 2: 0.2, 3: 0.2}))
    choice = choose(ranked, top_k=2)
    png = render_png(lambda axes: margin_histogram(axes, ranked, choice, bins=10))
    assert len(png) > 10_000
    assert {BLUE, GREY, RED} <= png_colours(png)  # selected bars, the others, the cut line
    with pytest.raises(ValueError, match="need 1 counts in every series"):
        render_png(lambda axes: histogram(axes, [0, 1], [Series("x", [1, 2], BLUE)], "t", "x"))


def test_select_without_matplotlib_writes_the_rest_and_says_so(tmp_path, judge_server, capsys, no_matplotlib):
    from writing_rl.plot import NO_MATPLOTLIB

    server = judge_server()
    data, responses = make_data(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "margins.png").write_bytes(b"an earlier run's plot")
    argv = ["select", "--data", str(data), "--responses", responses, "--out", str(out), "--judge-url", server.base_url,
            "--judge-model", "scripted", "--quiet", "--top-k", "3"]  # fmt: skip
    assert cli(argv) == 0
    printed = capsys.readouterr().out
    assert f"margins.png: {NO_MATPLOTLIB}" in printed and "histogram:" not in printed
    assert not (out / "margins.png").exists()  # the stale one pictured another selection
    assert json.loads((out / "summary.json").read_text())["selected"] == 3
    assert sum(r["selected"] == "1" for r in read_margins(out).values()) == 3
    assert pq.read_table(out / "selected.parquet").num_rows == 3
