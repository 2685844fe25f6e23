"""`writing-rl order-references`: its Bradley-Terry / Copeland orders (the tournament's maths), and whole runs against
scripted judges with known answers (consistent, intransitive, position-biased, failing)."""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from reward_fns.pairwise import read_writing_rl_task
from writing_rl import tournament
from writing_rl.data.builders.writing import SCHEMA
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.errors import JudgeFailures
from writing_rl.offline.judge import JudgeSettings
from writing_rl.ordering.job import OrderJob
from writing_rl.ordering.order_references import run_order_references
from writing_rl.ordering.rank_aggregation import PromptResult, easiest_first, order_candidates
from writing_rl.tools.cli import main as cli

from judge_server import Reply
from offline_helpers import first_position_judge, pair_of, table_judge, write_jsonl

# ---- the aggregation (the maths itself: writing_rl/tournament/, tests/test_tournament_math.py) -----------
# points[i][j] = what i earned against j over two verdicts (win 1, tie 0.5), turned into the verdicts' results.


def prompt_result(points) -> PromptResult:
    result = PromptResult(len(points))
    for i, j in itertools.combinations(range(len(points)), 2):
        earned, games = points[i][j], points[i][j] + points[j][i]
        for k in range(int(games)):
            result.results.append(tournament.Result(i, j, min(1.0, max(0.0, earned - k))))
    return result


def test_an_undefeated_candidate_stays_finite_and_a_weaker_prior_trusts_the_data_more():
    result = prompt_result([[0, 2], [0, 0]])  # 0 won both orders
    scores = order_candidates(result, "bt", prior=1.0).scores
    assert scores[0] > 0 > scores[1] and scores.sum() == pytest.approx(0)
    weak = order_candidates(result, "bt", prior=0.01).scores
    assert np.isfinite(weak).all() and weak[0] > scores[0]
    expected = np.log(tournament.bradley_terry_strengths(2, result.results, 1.0))  # the tournament's fit, centred
    assert scores == pytest.approx(expected - expected.mean())


def test_a_cycle_and_an_unjudged_prompt_leave_every_candidate_equal():
    assert np.allclose(order_candidates(prompt_result([[0, 2, 0], [0, 0, 2], [2, 0, 0]])).scores, 0)
    assert np.allclose(order_candidates(PromptResult(3)).scores, 0)
    assert order_candidates(PromptResult(3), "copeland").scores.tolist() == [0.5] * 3  # never judged: a draw
    with pytest.raises(ValueError, match="prior must be positive"):
        order_candidates(prompt_result([[0, 2], [0, 0]]), prior=0)


def test_copeland_is_the_share_of_majorities_won_over_the_pairs_judged():
    result = prompt_result([[0, 1.5, 1, 0], [0.5, 0, 2, 0], [1, 0, 0, 0], [0, 0, 0, 0]])  # 3 never judged
    assert order_candidates(result, "copeland").scores.tolist() == [0.75, 0.5, 0.25, 0.5]


def test_intransitive_triples_are_counted():
    # 0>1, 1>2, 2>0 is a cycle; 0>3, 1>3, 2=3 (draw)
    assert order_candidates(prompt_result([[0, 2, 0, 2], [0, 0, 2, 2], [2, 0, 0, 1], [0, 0, 1, 0]])).triples == 1
    assert order_candidates(prompt_result([[0, 2, 2], [0, 0, 2], [0, 0, 0]])).triples == 0


def test_easiest_first_tie_breaks():
    assert easiest_first(np.array([0.3, -0.1, 0.3]), np.array([0.0, 0.0, 1.0])) == [1, 0, 2]
    assert easiest_first(np.array([0.0, 1e-9, 0.0]), np.array([2.0, 0.0, 2.0])) == [1, 0, 2]  # 1e-9 is a tie
    assert easiest_first(np.zeros(3), np.zeros(3)) == [0, 1, 2]  # full tie: input order


# A table where the methods disagree: A wins two narrow majorities but loses 0-2 to D; D wins big.
#   A: B 1.5, C 1.5, D 0   (3.0 points, 2 majorities)
#   B: A .5,  C 1,   D 1.5 (3.0, 1 majority + 1 draw)
#   C: A .5,  B 1,   D 1   (2.5, 2 draws)
#   D: A 2,   B .5,  C 1   (3.5, 1 majority + 1 draw)
DISAGREE = [[0, 1.5, 1.5, 0], [0.5, 0, 1, 1.5], [0.5, 1, 0, 1], [2, 0.5, 1, 0]]


def test_bt_and_copeland_disagree_on_the_best():
    result = prompt_result(DISAGREE)
    assert order_candidates(result, "copeland").order == [2, 1, 3, 0]  # A best: most majorities
    assert order_candidates(result, "bt").order == [2, 1, 0, 3]  # D best: most points, from the strongest
    assert order_candidates(result, "bt").triples == 1  # A>B, B>D, D>A


# ---- whole runs against scripted judges ---------------------------------------------------------------


def settings_for(server, **kw) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="scripted", backoff_base_s=0.01, **kw))


def read_report(out) -> list[dict]:
    with open(out / "order_report.csv") as f:
        return list(csv.DictReader(f))


def targets(out, split="train") -> list[list[str]]:
    return [r["reward_model"]["ground_truth"]["target"] for r in pq.read_table(out / f"{split}.parquet").to_pylist()]


def test_recovers_a_known_order(tmp_path, judge_server):
    server = judge_server()  # prefers more "good" minus "bad"
    rows = [
        {"prompt": "Poem one.", "candidates": ["good good", "bad", "good good good", "good", "plain"],
         "models": ["m2", "m0", "m3", "m1", "mid"], "criteria": ["imagery", "rhythm"]},
        {"prompt": "Poem two.", "candidates": ["good", "good bad bad"], "models": ["m1", "m0"]},
        {"prompt": "Poem three.", "candidates": ["only one"], "models": ["m0"]},
    ]  # fmt: skip
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    report = run_order_references(
        OrderJob(input_path=data, out=out, names_key="models", progress=False), settings_for(server)
    )

    assert targets(out) == [
        ["bad", "plain", "good", "good good", "good good good"],
        ["good bad bad", "good"],
        ["only one"],
    ]
    assert len(server.requests) == 5 * 4 + 2 * 1  # every pair in both orders; one candidate: no call
    first = pq.read_table(out / "train.parquet").to_pylist()[0]
    assert pq.read_table(out / "train.parquet").schema == SCHEMA
    task = read_writing_rl_task(first["reward_model"]["ground_truth"])  # what the reward will read
    assert task.criteria == "- imagery\n- rhythm" and task.id == 0
    assert "[Evaluation criteria]\n- imagery\n- rhythm" in server.requests[0]["messages"][-1]["content"]

    lines = read_report(out)
    assert [json.loads(line["order_names"] or "[]") for line in lines] == [
        ["m0", "mid", "m1", "m2", "m3"],
        ["m0", "m1"],
        ["m0"],
    ]
    assert all(line["inconsistent_pairs"] == "0" and line["intransitive_triples"] == "0" for line in lines)
    s = report.summary
    assert s["inconsistency_rate"] == 0.0 and s["intransitive_triples"] == 0 and s["written"] == 3
    assert s["mean_position_by_name"]["m3"] == 1.0 and s["mean_position_by_name"]["m0"] == 0.0

    again = run_order_references(
        OrderJob(input_path=data, out=out, names_key="models", progress=False), settings_for(server)
    )
    assert len(server.requests) == 22 and again.summary["cache"]["hits"] == 22  # rerun: all from the cache


def test_intransitive_judge(tmp_path, judge_server):
    cycle = {("rock", "scissors"): "A", ("scissors", "paper"): "A", ("paper", "rock"): "A"}
    beats = {**cycle, **{(b, a): "B" for (a, b) in cycle}}  # consistent in both orders
    server = judge_server(script=table_judge(beats))
    data = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "Play.", "candidates": ["paper", "rock", "scissors"]}])
    report = run_order_references(OrderJob(input_path=data, out=tmp_path / "out", progress=False), settings_for(server))
    line = read_report(tmp_path / "out")[0]
    assert line["intransitive_triples"] == "1" and line["inconsistent_pairs"] == "0"
    assert report.summary["prompts_with_cycles"] == 1
    assert targets(tmp_path / "out") == [["paper", "rock", "scissors"]]  # a perfect cycle: all tied, input order


def test_position_biased_judge_is_reported_as_inconsistent(tmp_path, judge_server):
    server = judge_server(script=first_position_judge)
    data = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "Go.", "candidates": ["x good", "y bad", "z"]}])
    report = run_order_references(OrderJob(input_path=data, out=tmp_path / "out", progress=False), settings_for(server))
    s = report.summary
    assert s["inconsistent_pairs"] == 3 and s["pairs_both_orders"] == 3 and s["inconsistency_rate"] == 1.0
    assert s["verdict_share"] == {"A": 1.0, "B": 0.0, "C": 0.0}
    assert targets(tmp_path / "out") == [["x good", "y bad", "z"]]  # no information: input order kept


def test_copeland_vs_bradley_terry_through_the_cli(tmp_path, judge_server, capsys):
    a, b, c, d = "alpha", "beta", "gamma", "delta"
    # verdicts per order (first shown as A) realising the DISAGREE table above
    beats = {
        (a, b): "A", (b, a): "C", (a, c): "A", (c, a): "C", (a, d): "B", (d, a): "A",
        (b, c): "C", (c, b): "C", (b, d): "A", (d, b): "C", (c, d): "C", (d, c): "C",
    }  # fmt: skip
    server = judge_server(script=table_judge(beats))
    rows = [{"question": f"Task {i}.", "answers": [a, b, c, d], "system": "x"} for i in range(4)]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    common = ["order-references", "--input", data, "--candidates-key", "answers", "--prompt-key", "question",
              "--judge-url", server.base_url, "--judge-model", "scripted", "--quiet", "--cache", str(tmp_path / "c.sqlite")]  # fmt: skip
    assert cli([*common, "--output", str(tmp_path / "bt"), "--test-size", "1"]) == 0
    assert cli([*common, "--output", str(tmp_path / "cope"), "--method", "copeland"]) == 0
    printed = capsys.readouterr().out
    assert "method copeland" in printed and "intransitive triples: 4 in 4 prompts" in printed
    assert len(server.requests) == 4 * 12  # 4 prompts x 6 pairs x 2 orders; the Copeland run reads the cache
    assert targets(tmp_path / "bt") + targets(tmp_path / "bt", "test") == [[c, b, a, d]] * 4
    assert targets(tmp_path / "cope") == [[c, b, d, a]] * 4
    lines = read_report(tmp_path / "cope")
    assert all(line["inconsistent_pairs"] == "3" and line["intransitive_triples"] == "1" for line in lines)


def test_judge_failures(tmp_path, judge_server):
    def script(request, index):
        first, second = pair_of(request)
        if "broken" in first + second:
            return Reply(status=400, body=b"refused")
        if "mute" in first + second:
            return Reply(content="No verdict here.")
        return Reply(content="[[A]]" if first.count("good") > second.count("good") else "[[B]]")

    server = judge_server(script=script)
    rows = [
        {"prompt": "P0.", "candidates": ["good", "good good", "broken"]},
        {"prompt": "P1.", "candidates": ["broken one", "broken two"]},
        {"prompt": "P2.", "candidates": ["mute a", "mute b"]},
    ]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    with pytest.raises(JudgeFailures, match=r"6 of 10 judge calls failed after retries \(http 6\)"):
        run_order_references(OrderJob(input_path=data, out=out, progress=False), settings_for(server, max_retries=0))
    assert not out.exists() or not any(out.glob("*.parquet"))

    report = run_order_references(
        OrderJob(input_path=data, out=out, allow_judge_errors=True, progress=False), settings_for(server, max_retries=0)
    )
    s = report.summary
    assert s["judge_errors"] == {"http": 6} and s["parse_failures"] == 2
    assert s["unordered_rows"] == [1, 2] and s["written"] == 1  # no verdict at all: left out, listed
    # "broken" has no verdict, only the prior's virtual games: it lands between the loser and the winner
    assert targets(out) == [["good", "broken", "good good"]]
    lines = read_report(out)
    assert [line["status"] for line in lines] == ["ordered", "no_verdict", "no_verdict"]
    assert lines[0]["judge_errors"] == "4" and lines[0]["verdicts"] == "2"


def test_bad_rows_name_row_and_field(tmp_path, judge_server):
    server = judge_server()
    rows = [{"prompt": "ok", "candidates": ["a", "b"]}, {"prompt": "bad", "candidates": ["a", ""]}]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    with pytest.raises(
        ValueError, match=r"row 1 \(0-based\) rejected: field 'candidates': item 1 must be a non-empty string"
    ):
        run_order_references(OrderJob(input_path=data, out=tmp_path / "out", progress=False), settings_for(server))
    report = run_order_references(
        OrderJob(input_path=data, out=tmp_path / "out", skip_bad=True, progress=False), settings_for(server)
    )
    assert report.summary["rejected"] == 1 and report.summary["written"] == 1
    with pytest.raises(ValueError, match="field 'models': has 1 names for 2 candidates"):
        run_order_references(
            OrderJob(
                input_path=write_jsonl(
                    tmp_path / "n.jsonl", [{"prompt": "p", "candidates": ["a", "b"], "models": ["m"]}]
                ),
                out=tmp_path / "o2",
                names_key="models",
                progress=False,
            ),
            settings_for(server),
        )
    assert len(list(itertools.chain(tmp_path.glob("o2/*.parquet")))) == 0
