"""`writing-rl eval rewardbench` on small v1 and v2 files (JSONL and parquet) against scripted GenRMs on
127.0.0.1: the benchmark's section weights and overall score, both GenRM kinds, Ties left out, failures
failed calls counted and never scored, unreadable replies and ties counted as no preference, resume from the
cache, bad rows named."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from writing_rl.evaluation.genrm_ranking import RankingOptions
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.rewardbench import run_rewardbench
from writing_rl.evaluation.rewardbench_sets import v1_scores, v2_scores
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings
from writing_rl.tools.cli import main as cli

from conftest import png_colours
from judge_server import Reply, default_script, gqm_candidates
from offline_helpers import first_position_judge, pair_of, write_jsonl

# The default judge prefers the answer with more "good" than "bad" (ties when equal).
V1 = [
    {"id": 1, "subset": "alpacaeval-easy", "prompt": "Tides?", "chosen": "good tides", "rejected": "bad tides"},
    {"id": 2, "subset": "alpacaeval-easy", "prompt": "Rivers?", "chosen": "good good", "rejected": "plain"},
    {"id": 3, "subset": "mt-bench-easy", "prompt": "Snow?", "chosen": "good snow", "rejected": "bad snow"},
    {"id": 4, "subset": "mt-bench-easy", "prompt": "Rain?", "chosen": "bad rain", "rejected": "good rain"},
    {"id": 5, "subset": "math-prm", "prompt": "2+2?", "chosen": "4, good", "rejected": "5"},
    {"id": 6, "subset": "hep-python", "prompt": "Sort.", "chosen": "sorted()", "rejected": "good sorted()"},
]
V2 = [
    {"id": "f1", "subset": "Factuality", "prompt": "Capital of France?", "chosen": ["good Paris"],
     "rejected": ["bad Lyon", "Nice", "bad Lille"]},
    {"id": "f2", "subset": "Factuality", "prompt": "Capital of Spain?", "chosen": ["good Madrid"],
     "rejected": ["Seville", "good good Bilbao", "bad Toledo"]},
    {"id": "o1", "subset": "Focus", "prompt": "Stay on topic.", "chosen": ["good focus"],
     "rejected": ["drift", "bad drift", "off"]},
    {"id": "ref:1", "subset": "Ties", "prompt": "Name a prime.", "chosen": ["2", "3"], "rejected": ["4"]},
]  # fmt: skip


def settings_for(server) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="genrm", max_retries=0))


def report_of(out) -> dict:
    return json.loads((out / "report.json").read_text())


def lines_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_parquet(path, rows) -> str:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def test_v1_sections_are_weighted_by_the_benchmarks_example_counts(tmp_path, judge_server):
    server = judge_server()
    out = tmp_path / "out"
    lines = run_rewardbench(write_jsonl(tmp_path / "v1.jsonl", V1), str(out), settings_for(server), 1, progress=False)
    assert len(server.requests) == 12  # each pair in both orders
    report = report_of(out)
    accuracy = {name: (s["mean"], s["count"], s["strict"]) for name, s in report["subsets"].items()}
    assert accuracy == {
        "alpacaeval-easy": (1.0, 2, 1.0), "mt-bench-easy": (0.5, 2, 0.5), "math-prm": (1.0, 1, 1.0),
        "hep-python": (0.0, 1, 0.0),
    }  # fmt: skip
    chat = (1.0 * 100 + 0.5 * 28) / (100 + 28)  # reward-bench's EXAMPLE_COUNTS
    reasoning = (1.0 * 984) / (984 + 164)  # math-prm counts 984, as much as the six code subsets
    assert report["sections"] == pytest.approx({"Chat": chat, "Reasoning": reasoning})
    assert report["overall"] == pytest.approx((chat + reasoning) / 2)
    assert any(note.startswith("Chat: missing alpacaeval-length") for note in report["notes"])
    assert report["items"] == report["items_scored"] == 6
    assert lines[0].startswith(f"RewardBench v1 overall {(chat + reasoning) / 2:.3f} (pairwise GenRM) over 6 of 6")
    md = (out / "report.md").read_text()
    assert md.startswith("# RewardBench v1: pairwise GenRM")
    assert (
        "| mt-bench-easy | Chat | 2 / 2 | 0.500 [0.000, 1.000] | 0.500 | 0.500 |" in md
        and "| Reasoning | 0.857 |" in md
    )
    items = {line["id"]: line["score"] for line in lines_of(out / "items.jsonl")}
    assert items == {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.0, 5: 1.0, 6: 0.0}

    # rows without an id are known by their place in the file; an empty answer is a fair loser
    rows = [{k: v for k, v in row.items() if k != "id"} for row in V1[:2]]
    data = write_jsonl(tmp_path / "no_ids.jsonl", [{**rows[0], "rejected": ""}, rows[1]])
    run_rewardbench(data, str(tmp_path / "no_ids"), settings_for(server), 1, progress=False)
    assert [line["id"] for line in lines_of(tmp_path / "no_ids" / "items.jsonl")] == ["row 1", "row 2"]


def test_v1_prior_sets_count_half_a_section_and_unknown_subsets_none():
    sections, overall, notes = v1_scores({"alpacaeval-easy": 0.8, "shp": 0.6, "summarize": 0.4, "mine": 0.1})
    assert sections == pytest.approx({"Chat": 0.8, "Prior Sets": 0.5})
    assert overall == pytest.approx((0.8 * 1 + 0.5 * 0.5) / 1.5)
    assert "in no section (reported, not scored): mine" in notes
    _, _, notes = v1_scores({"alpacaeval-easy": 0.8}, unscored=["mt-bench-easy"])
    assert notes[0] == "in the file, but no prompt scored (each had a failed judge call): mt-bench-easy"
    overall, notes = v2_scores({name: 0.5 for name in ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")})
    assert overall == 0.5 and notes == []


def test_a_position_biased_judge_gets_half_per_comparison(tmp_path, judge_server):
    server = judge_server(script=first_position_judge)  # always [[A]]
    out = tmp_path / "out"
    run_rewardbench(write_jsonl(tmp_path / "v2.jsonl", V2), str(out), settings_for(server), 2, progress=False)
    report = report_of(out)
    # three comparisons, each won in one order of two: 0.5 ** 3, the chance of winning all in random orders
    assert {name: s["mean"] for name, s in report["subsets"].items()} == {"Factuality": 0.125, "Focus": 0.125}
    assert {name: s["strict"] for name, s in report["subsets"].items()} == {"Factuality": 0.0, "Focus": 0.0}
    assert {name: s["chance"] for name, s in report["subsets"].items()} == {"Factuality": 0.125, "Focus": 0.125}


def test_ties_and_replies_without_a_verdict_count_as_no_preference(tmp_path, judge_server):
    def script(request, index):
        a, b = pair_of(request)
        if "Nice" in (a, b):
            return Reply(content="Both are fine. [[C]]")
        if "drift" in (a, b):
            return Reply(content="I cannot decide.")
        return default_script(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    run_rewardbench(write_jsonl(tmp_path / "v2.jsonl", V2), str(out), settings_for(server), 2, progress=False)
    items = {line["id"]: (line["score"], line["strict"]) for line in lines_of(out / "items.jsonl")}
    # f1: a tie against "Nice" in both orders halves it; o1: no verdict against "drift" in either order
    assert items == {"f1": (0.5, False), "f2": (0.0, False), "o1": (0.5, False)}
    report = report_of(out)
    assert report["failures"]["unreadable"] == 2 and report["failures"]["judge_error"] == 0
    assert report["items_scored"] == 3


def test_v2_best_of_4_from_parquet_with_ties_left_out(tmp_path, judge_server):
    server = judge_server()
    out = tmp_path / "out"
    data = write_parquet(tmp_path / "v2.parquet", V2)
    lines = run_rewardbench(data, str(out), settings_for(server), 2, progress=False)
    assert len(server.requests) == 3 * 3 * 2  # three prompts (Ties left out), three rejected, two orders
    report = report_of(out)
    # f2: "good good Bilbao" beats the chosen answer in both orders
    assert {name: (s["mean"], s["count"], s["rows"]) for name, s in report["subsets"].items()} == {
        "Factuality": (0.5, 2, 2), "Focus": (1.0, 1, 1)
    }  # fmt: skip
    assert report["overall"] == 0.75
    assert "sections" not in report
    assert report["notes"][0].startswith("not the leaderboard's overall score: it averages 6 subsets, missing here: "
                                         "Precise IF, Math, Safety, Ties")  # fmt: skip
    assert report["excluded"] == {"Ties": {"rows": 1, "reason": "scored from scalar reward margins, which verdicts "
                                                                "and rankings do not give"}}  # fmt: skip
    assert any(line.startswith("note: excluded: Ties (1 rows; scored from scalar reward margins") for line in lines)
    calls = lines_of(out / "judgments.jsonl")
    assert {(c["rejected"], c["order"]) for c in calls if c["id"] == "f1"} == {
        (j, order) for j in range(3) for order in ("chosen_first", "chosen_second")
    }

    run_rewardbench(data, str(tmp_path / "focus"), settings_for(server), 2, exclude=("Focus",), progress=False)
    assert list(report_of(tmp_path / "focus")["subsets"]) == ["Factuality"]
    assert report_of(tmp_path / "focus")["excluded"]["Focus"] == {"rows": 1, "reason": "--exclude"}
    with pytest.raises(InputError, match=r"--exclude Fokus: no such subset in .*v2.parquet \(its subsets: "
                                         r"Factuality, Focus, Ties\)"):  # fmt: skip
        run_rewardbench(data, str(tmp_path / "typo"), settings_for(server), 2, exclude=("Fokus",), progress=False)


def test_a_ranking_genrm_ranks_all_answers_in_one_call(tmp_path, judge_server):
    seen = {}

    def script(request, index):
        candidates = gqm_candidates(request["messages"][-1]["content"])
        seen[request["messages"][-1]["content"].split("Writing request:\n```\n", 1)[1].split("\n", 1)[0]] = candidates
        return default_script(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    rows = [*V2[:3], {**V2[2], "id": "o2", "chosen": ["good focus"], "rejected": ["good drift", "off", "bad"]}]
    run_rewardbench(write_jsonl(tmp_path / "v2.jsonl", rows), str(out), settings_for(server), 2, genrm="ranking",
                    progress=False)  # fmt: skip
    assert len(server.requests) == 4
    calls = {c["id"]: c for c in lines_of(out / "judgments.jsonl")}
    for row in rows:  # the request shows the chosen answer under the label the record names
        assert seen[row["prompt"]][calls[row["id"]]["chosen_label"]] == row["chosen"][0]
    assert len({c["chosen_label"] for c in calls.values()}) > 1  # the chosen answer is not always first
    items = {line["id"]: line["score"] for line in lines_of(out / "items.jsonl")}
    assert items == {"f1": 1.0, "f2": 0.0, "o1": 1.0, "o2": 0.5}  # o2: the chosen answer ties for first
    assert report_of(out)["subsets"]["Focus"]["mean"] == 0.75 and "strict" not in report_of(out)["subsets"]["Focus"]

    v1 = tmp_path / "v1"
    run_rewardbench(write_jsonl(tmp_path / "v1.jsonl", V1), str(v1), settings_for(server), 1, genrm="ranking",
                    progress=False)  # fmt: skip
    assert {k: s["mean"] for k, s in report_of(v1)["subsets"].items()} == {
        "alpacaeval-easy": 1.0, "mt-bench-easy": 0.5, "math-prm": 1.0, "hep-python": 0.0
    }  # fmt: skip
    # read as the reward reads: a reply in another prompt type's format is unreadable: chance level, 1/2
    run_rewardbench(write_jsonl(tmp_path / "v1.jsonl", V1), str(tmp_path / "strict"), settings_for(server), 1,
                    genrm="ranking", options=RankingOptions(prompt_type="ranking"), progress=False)  # fmt: skip
    strict = report_of(tmp_path / "strict")
    assert strict["failures"]["unreadable"] == 6 and strict["items_scored"] == 6
    assert {s["mean"] for s in strict["subsets"].values()} == {0.5} == {s["chance"] for s in strict["subsets"].values()}


def test_failures_are_counted_never_scored_and_a_rerun_retries_only_them(tmp_path, judge_server):
    failing = {"on": True}

    def script(request, index):
        a, b = pair_of(request)
        if failing["on"] and "Nice" in (a, b):
            return Reply(status=500, body=b'{"error": "down"}')
        if "drift" in (a, b):
            return Reply(content="No verdict here.")
        return default_script(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "v2.jsonl", V2)
    run_rewardbench(data, str(out), settings_for(server), 2, progress=False)
    report = report_of(out)
    assert report["failures"]["judge_error"] == 2 and report["failures"]["unreadable"] == 2
    assert report["items_scored"] == 2  # f1 has a failed call: not scored; o1's unreadable replies count half
    assert report["subsets"]["Factuality"]["count"] == 1 and report["subsets"]["Factuality"]["rows"] == 2
    assert report["subsets"]["Focus"]["mean"] == 0.5 and report["overall"] == 0.25  # f2 loses
    sent = len(server.requests)
    failing["on"] = False
    run_rewardbench(data, str(out), settings_for(server), 2, progress=False)
    assert len(server.requests) == sent + 2  # the failed calls only: unreadable replies are answers, cached
    assert report_of(out)["subsets"]["Factuality"]["count"] == 2 and report_of(out)["failures"]["unreadable"] == 2


def test_bad_rows_are_named(tmp_path):
    settings = JudgeSettings(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m"))

    def fails(rows, version, match, parquet=False):
        path = (write_parquet if parquet else write_jsonl)(tmp_path / ("x.parquet" if parquet else "x.jsonl"), rows)
        with pytest.raises(InputError, match=match):
            run_rewardbench(path, str(tmp_path / "out"), settings, version, progress=False)

    fails([V2[0]], 1, r"x.jsonl:1: chosen is a list: this is a RewardBench 2 row \(use --version 2\)")
    fails([{**V1[0], "prompt": [{"role": "user", "content": "Tides?"}]}], 1, r"x.jsonl:1: prompt is a list \(a chat")
    fails([{**V1[0], "chosen": 3}], 1, r"x.jsonl:1: chosen must be a string, got int 3")
    fails([{**V2[0], "rejected": ["a", None]}], 2, r"x.jsonl:1: rejected\[1\] must be a string, got nothing")
    fails([{**V1[0], "id": "a"}], 2, r"x.jsonl:1: chosen is a string: this is a RewardBench v1 row")
    fails([V1[0], {**V1[1], "prompt": " "}], 1, r"x.jsonl:2: prompt must be a non-empty string")
    fails([V1[0], V1[0]], 1, r"x.parquet:row 2: id 1 appears twice \(first at .*row 1\)", parquet=True)
    fails([{**V2[0], "rejected": []}], 2, r"x.jsonl:1: rejected must be a non-empty list of strings")
    fails([{**V2[0], "chosen": ["a", "b"]}], 2, r"chosen holds 2 answers; outside Ties a RewardBench 2 prompt has one")
    fails([V2[3]], 2, r"no rows to judge \(excluded: Ties \(1 rows\)\)")


def test_the_cli_runs_rewardbench_end_to_end(tmp_path, judge_server, capsys):
    server = judge_server()
    judge = ["--judge-url", server.base_url, "--judge-model", "genrm", "--quiet"]
    data, out = write_jsonl(tmp_path / "v2.jsonl", V2), tmp_path / "rb2"
    assert cli(["eval", "rewardbench", "--data", data, "--version", "2", "--out", str(out), *judge]) == 0
    printed = capsys.readouterr().out
    assert "RewardBench 2 overall 0.750 (pairwise GenRM) over 3 of 3 prompts in 2 subsets" in printed
    # matplotlib is a test extra: the plot is drawn, one bar per subset in the report's blue
    assert "plots skipped" not in printed and "#316eb4" in png_colours((out / "subsets.png").read_bytes())
    args = ["eval", "rewardbench", "--data", data, "--version", "2", "--out", str(tmp_path / "x"), *judge]
    assert cli([*args, "--variant", "no_cot"]) == 2
    assert "--variant only apply to --genrm ranking" in capsys.readouterr().err
    assert cli([*args, "--genrm", "ranking", "--exclude", "Focus", "--system-prompt", "Rank fairly."]) == 0
    assert list(report_of(tmp_path / "x")["subsets"]) == ["Factuality"]
    assert server.requests[-1]["messages"][0] == {"role": "system", "content": "Rank fairly."}
