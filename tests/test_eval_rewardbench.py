"""`writing-rl eval rewardbench` on small v1 and v2 files (JSONL and parquet) against scripted GenRMs on
127.0.0.1: the benchmark's section weights and overall score, the three GenRM kinds, v2's Ties always rated and
scored, failed calls counted and never scored, unreadable replies and ties counted as the benchmark counts them,
resume from the cache, bad rows named. (The rated rules against reward-bench's own code: test_rewardbench_official.)"""

from __future__ import annotations

import json
import re

import pytest

from writing_rl.evaluation.genrm_ranking import RankingOptions
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.ratings import rating_messages
from writing_rl.evaluation.rewardbench import RatingOptions, run_rewardbench
from writing_rl.evaluation.rewardbench_sets import ties_interval, ties_score, v1_scores, v2_scores
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings
from writing_rl.tools.cli import main as cli

from conftest import png_colours
from judge_server import Reply, default_script, gqm_candidates, quality
from offline_helpers import first_position_judge, lines_of, pair_of, report_of, settings_for, write_jsonl, write_parquet

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
    {"id": "ref:1", "subset": "Ties", "prompt": "Name a prime.", "chosen": ["good 2"], "rejected": ["4"]},
    {"id": "tied:1", "subset": "Ties", "prompt": "Name a prime.", "chosen": ["good 2", "good 3"],
     "rejected": ["bad 4"], "num_correct": 2, "num_incorrect": 1},
]  # fmt: skip
NOT_TIES = V2[:3]
# V2's Ties rows rated 5 + good - bad: ref [6, 5] and tied [6, 6, 4], accurate both, the correct answers tied:
# 0.3 + 0.3 + 0.2 + 0.2 + 0.01 * tanh(min(1, 2) / 0 - 1 = inf) = 1.01, reward-bench's weights summing to 1.01
TIES_SCORE = 1.01
_RATED = re.compile(r"\[Answer\]\n(`{3,})\n(.*?)\n\1", re.S)


def rated_answer(request) -> str | None:
    """The answer a rating request (either reader's) shows; None for any other request."""
    user = request["messages"][-1]["content"]
    rating = "Rate how well an AI assistant answered" in user or "Rate its answer." in user  # the two readers' prompts
    return _RATED.search(user).group(2) if rating else None


def rating_judge(request, index):
    """The default judge, rating an answer alone 5 + its good minus bad count, the number last (rating reader) or
    as {"score": n} (pointwise reader)."""
    answer = rated_answer(request)
    if answer is None:
        return default_script(request, index)
    rating = max(1, min(10, 5 + quality(answer)))
    pointwise = '{"score"' in request["messages"][-1]["content"]
    return Reply(content="Weighed it.\n" + (json.dumps({"score": rating}) if pointwise else str(rating)))


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
    run_rewardbench(write_jsonl(tmp_path / "v2.jsonl", NOT_TIES), str(out), settings_for(server), 2, progress=False)
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
    run_rewardbench(write_jsonl(tmp_path / "v2.jsonl", NOT_TIES), str(out), settings_for(server), 2, progress=False)
    items = {line["id"]: (line["score"], line["strict"]) for line in lines_of(out / "items.jsonl")}
    # f1: a tie against "Nice" in both orders halves it; o1: no verdict against "drift" in either order
    assert items == {"f1": (0.5, False), "f2": (0.0, False), "o1": (0.5, False)}
    report = report_of(out)
    assert report["failures"]["unreadable"] == 2 and report["failures"]["judge_error"] == 0
    assert report["items_scored"] == 3


def test_v2_best_of_4_from_parquet_with_ties_rated_and_in_the_overall(tmp_path, judge_server):
    server = judge_server(script=rating_judge)
    out = tmp_path / "out"
    data = write_parquet(tmp_path / "v2.parquet", V2)
    lines = run_rewardbench(data, str(out), settings_for(server), 2, progress=False)
    ties_calls = [r for r in server.requests if rated_answer(r) is not None]
    # Ties: each of its 2 + 3 answers rated, "good 2" once: both rows show it with the same request
    assert len(server.requests) == 3 * 3 * 2 + 4 and len(ties_calls) == 4 and report_of(out)["judge"]["calls"] == 23
    assert all("need not be weighed" in r["messages"][-1]["content"] for r in ties_calls)  # the Ties prompt
    assert all(len(r["messages"]) == 1 for r in ties_calls)  # no system message, as reward-bench sends
    report = report_of(out)
    # f2: "good good Bilbao" beats the chosen answer in both orders
    assert {name: (s["mean"], s["count"], s["rows"]) for name, s in report["subsets"].items()} == {
        "Factuality": (0.5, 2, 2), "Focus": (1.0, 1, 1), "Ties": (pytest.approx(TIES_SCORE), 2, 2)
    }  # fmt: skip
    assert report["subsets"]["Ties"]["parts"] == pytest.approx({
        "tied_accuracy": 1.0, "ref_accuracy": 1.0, "correctness_preferred": 1.0, "correctness_preferred_hard": 1.0,
        "correctness_margin_score": 1.0, "prompts": 1,
    })  # fmt: skip
    assert report["overall"] == pytest.approx((0.5 + 1.0 + TIES_SCORE) / 3)
    assert "sections" not in report and report["excluded"] == {}
    assert report["notes"] == ["not the leaderboard's overall score: it averages 6 subsets, missing here: "
                               "Precise IF, Math, Safety"]  # fmt: skip
    assert lines[0] == "RewardBench 2 overall 0.837 (pairwise GenRM) over 5 of 5 prompts in 3 subsets"
    md = (out / "report.md").read_text()
    assert (
        "| Ties | 2 / 2 | 1.010 [1.010, 1.010] | – | – |" in md and "| correctness_margin_score | 0.01 | 1.000 |" in md
    )
    assert "reward-bench reads a failed rating call as an unreadable rating (-1)" in md
    calls = lines_of(out / "judgments.jsonl")
    assert {(c["rejected"], c["order"]) for c in calls if c["id"] == "f1"} == {
        (j, order) for j in range(3) for order in ("chosen_first", "chosen_second")
    }
    assert [(c["answer"], c["correct"], c["rating"]) for c in calls if c["id"] == "tied:1"] == [
        (0, True, 6), (1, True, 6), (2, False, 4)
    ]  # fmt: skip
    items = {line["id"]: line for line in lines_of(out / "items.jsonl")}
    assert items["ref:1"]["ratings"] == [6, 5] and items["ref:1"]["score"] is None and items["ref:1"]["scored"]

    run_rewardbench(data, str(tmp_path / "focus"), settings_for(server), 2, exclude=("Focus", "Ties"), progress=False)
    assert list(report_of(tmp_path / "focus")["subsets"]) == ["Factuality"]
    assert report_of(tmp_path / "focus")["excluded"]["Ties"] == {"rows": 2, "reason": "--exclude"}
    with pytest.raises(InputError, match=r"--exclude Fokus: no such subset in .*v2.parquet \(its subsets: "
                                         r"Factuality, Focus, Ties\)"):  # fmt: skip
        run_rewardbench(data, str(tmp_path / "typo"), settings_for(server), 2, exclude=("Fokus",), progress=False)


def test_a_rated_genrm_rates_each_answer_alone_and_scores_as_reward_bench(tmp_path, judge_server):
    replies = {"good Paris": "9", "bad Lyon": "Rating: 9**", "Nice": "3", "bad Lille": "9/10",  # 9**: unreadable
               "good Madrid": "I will not say.", "Seville": "5", "good good Bilbao": "5", "bad Toledo": "nothing",
               "good focus": "7", "drift": "7", "bad drift": "7", "off": "2"}  # fmt: skip

    def script(request, index):
        return Reply(content=f"Considered.\n{replies.get(rated_answer(request), '8')}")

    server = judge_server(script=script)
    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "v2.jsonl", V2)
    lines = run_rewardbench(data, str(out), settings_for(server), 2, genrm="rated", progress=False)
    assert len(server.requests) == 3 * 4 + 4 and all(rated_answer(r) is not None for r in server.requests)
    items = {line["id"]: line for line in lines_of(out / "items.jsonl")}
    # f1: "9/10" reads as 10 and beats 9; f2: the chosen answer's rating unread: 0; o1: a three-way tie for 7: 1/3
    assert {k: (items[k]["score"], items[k]["ratings"]) for k in ("f1", "f2", "o1")} == {
        "f1": (0.0, [9, -1, 3, 10]), "f2": (0.0, [-1, 5, 5, -1]), "o1": (pytest.approx(1 / 3), [7, 7, 7, 2])
    }  # fmt: skip
    report = report_of(out)
    assert report["failures"]["unreadable"] == 3 and report["subsets"]["Factuality"]["chance"] == 0.25
    assert report["subsets"]["Ties"]["mean"] == pytest.approx(0.3 * 0 + 0.3 * 0)  # every Ties answer rated 8
    assert lines[0].startswith("RewardBench 2 overall 0.111 (rated GenRM) over 5 of 5 prompts")
    sent = len(server.requests)
    run_rewardbench(data, str(out), settings_for(server), 2, genrm="rated", progress=False)
    assert len(server.requests) == sent and report_of(out)["judge"]["cache_hits"] == 17  # resumed from the cache

    replies.update({"good Madrid": "Weak.", "Seville": "no", "good good Bilbao": "", "bad Toledo": "n/a"})
    run_rewardbench(data, str(tmp_path / "none"), settings_for(server), 2, genrm="rated", progress=False)
    assert {line["id"]: line["score"] for line in lines_of(tmp_path / "none" / "items.jsonl")}["f2"] == 0.25

    official = tmp_path / "official.txt"  # the placeholder of reward-bench's prompts: the answer as it is
    official.write_text("[Query]\n{prompt}\n\n[Response]\n{completion}\n\n[Your judgement]")
    run_rewardbench(data, str(tmp_path / "official"), settings_for(server), 2, genrm="rated", exclude=("Ties",),
                    rating=RatingOptions(template=str(official)), progress=False)  # fmt: skip
    assert [{"role": "user", "content": "[Query]\nStay on topic.\n\n[Response]\noff\n\n[Your judgement]"}] in [
        r["messages"] for r in server.requests[-12:]
    ]

    v1 = tmp_path / "v1"  # v1's rule: equal or unread ratings score half
    replies.update({"good tides": "8", "bad tides": "8", "good good": "no", "plain": "3", "good snow": "8",
                    "bad snow": "2", "bad rain": "2", "good rain": "8"})  # fmt: skip
    run_rewardbench(write_jsonl(tmp_path / "v1.jsonl", V1[:4]), str(v1), settings_for(server), 1, genrm="rated",
                    progress=False)  # fmt: skip
    assert {line["id"]: line["score"] for line in lines_of(v1 / "items.jsonl")} == {1: 0.5, 2: 0.5, 3: 1.0, 4: 0.0}
    md = (v1 / "report.md").read_text()
    assert md.startswith("# RewardBench v1: rated GenRM") and "0.5 for equal ratings or an unreadable one" in md


def test_the_pointwise_reader_sends_and_reads_what_training_does(tmp_path, judge_server):
    from reward_fns.pointwise import RewardOptions, read_final_score, score_messages

    server = judge_server(script=rating_judge)
    out = tmp_path / "out"
    run_rewardbench(write_jsonl(tmp_path / "v2.jsonl", V2), str(out), settings_for(server), 2, genrm="rated",
                    rating=RatingOptions(reader="pointwise"), progress=False)  # fmt: skip
    for request in server.requests:  # the training prompt, its system message included, for Ties rows too
        answer = rated_answer(request)
        prompt = next(row["prompt"] for row in V2 if answer in row["chosen"] + row["rejected"])
        assert request["messages"] == score_messages(prompt, answer, None, RewardOptions())
    assert rating_messages("Q", "A", "pointwise") == score_messages("Q", "A", None, RewardOptions())
    assert read_final_score('Fine.\n{"score": 7}', "A") == 7.0
    report = report_of(out)
    assert report["failures"]["unreadable"] == 0 and report["subsets"]["Ties"]["mean"] == pytest.approx(TIES_SCORE)
    assert {line["id"]: line["score"] for line in lines_of(out / "items.jsonl")}["o1"] == 1.0


def test_a_failed_rating_call_leaves_its_prompt_unscored_until_a_rerun(tmp_path, judge_server):
    failing = {"on": True}

    def script(request, index):
        if failing["on"] and rated_answer(request) in ("Nice", "good 3"):
            return Reply(status=500, body=b'{"error": "down"}')
        return rating_judge(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "v2.jsonl", V2)
    lines = run_rewardbench(data, str(out), settings_for(server), 2, genrm="rated", progress=False)
    report = report_of(out)
    assert report["failures"]["judge_error"] == 2 and report["items_scored"] == 3
    assert report["subsets"]["Factuality"]["count"] == 1 and report["subsets"]["Ties"]["count"] == 1
    # only the ref row is left: no prompt has both rows, so Ties has no score (reward-bench's nan), nor the overall
    assert report["subsets"]["Ties"]["mean"] is None and report["overall"] == pytest.approx((0.0 + 1.0) / 2)
    assert report["notes"][0].startswith("Ties: no prompt has both its ref and tied rows scored")
    assert any(line.endswith("prompts not scored 2") for line in lines)
    items = {line["id"]: line for line in lines_of(out / "items.jsonl")}
    assert items["f1"]["ratings"] == [6, 4, None, 4] and not items["f1"]["scored"] and items["f1"]["score"] is None
    sent = len(server.requests)
    failing["on"] = False
    run_rewardbench(data, str(out), settings_for(server), 2, genrm="rated", progress=False)
    assert len(server.requests) == sent + 2  # the failed calls only
    assert report_of(out)["subsets"]["Ties"]["mean"] == pytest.approx(TIES_SCORE)


def test_the_ties_interval_resamples_prompts_with_a_seed():
    rows = [(("ref", p), [7 - p % 3, 5], 1) for p in range(8)]
    rows += [(("tied", p), [7, 7 - p % 2, 6 - p % 4], 2) for p in range(8)]
    score = ties_score(rows)["score"]
    low, high = ties_interval(rows, seed=0)
    assert low <= score <= high and low < high
    assert ties_interval(rows, seed=0) == (low, high) != ties_interval(rows, seed=1)
    assert ties_interval([(("ref", 1), [5, 4], 1)]) == (pytest.approx(float("nan"), nan_ok=True),) * 2


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
    data = write_jsonl(tmp_path / "v2.jsonl", NOT_TIES)
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
    fails([{**V2[3], "id": "ref-1"}], 2, r"x.jsonl:1: id 'ref-1': a Ties row's id must be ref:<number> or tied:<n")
    fails([{**V2[4], "num_correct": 3}], 2, r"x.jsonl:1: num_correct is 3, but chosen holds 2 answers")
    fails([V2[4], {**V2[4], "id": "tied:01"}], 2, r"x.jsonl:2: id 'tied:01' names Ties group \('tied', 1\) again")
    fails([V2[3], {**V2[4], "chosen": ["good 2"], "num_correct": 1}], 2,
          r"x.jsonl:2: id 'tied:1': a tied row with a ref row needs at least two chosen answers")  # fmt: skip
    with pytest.raises(InputError, match=r"no rows to judge \(excluded: Ties \(2 rows\)\)"):
        path = write_jsonl(tmp_path / "ties.jsonl", V2[3:])
        run_rewardbench(path, str(tmp_path / "out"), settings, 2, exclude=("Ties",), progress=False)
    with pytest.raises(InputError, match=r"rating prompt: rating template .*bad.txt must contain the placeholder"):
        (tmp_path / "bad.txt").write_text("Rate {prompt}.")
        run_rewardbench(path, str(tmp_path / "out"), settings, 2, rating=RatingOptions(template=str(tmp_path / "bad.txt")),
                        progress=False)  # fmt: skip


def test_the_cli_runs_rewardbench_end_to_end(tmp_path, judge_server, capsys):
    server = judge_server(script=rating_judge)
    judge = ["--judge-url", server.base_url, "--judge-model", "genrm", "--quiet"]
    data, out = write_jsonl(tmp_path / "v2.jsonl", V2), tmp_path / "rb2"
    assert cli(["eval", "rewardbench", "--data", data, "--version", "2", "--out", str(out), *judge]) == 0
    printed = capsys.readouterr().out
    assert "RewardBench 2 overall 0.837 (pairwise GenRM) over 5 of 5 prompts in 3 subsets" in printed
    # matplotlib is a test extra: the plot is drawn, one bar per subset in the report's blue
    assert "plots skipped" not in printed and "#316eb4" in png_colours((out / "subsets.png").read_bytes())
    args = ["eval", "rewardbench", "--data", data, "--version", "2", "--out", str(tmp_path / "x"), *judge]
    assert cli([*args, "--variant", "no_cot"]) == 2
    assert "--variant only apply to --genrm ranking" in capsys.readouterr().err
    assert cli([*args, "--genrm", "ranking", "--exclude", "Focus,Ties", "--system-prompt", "Rank fairly."]) == 0
    assert list(report_of(tmp_path / "x")["subsets"]) == ["Factuality"]
    assert server.requests[-1]["messages"][0] == {"role": "system", "content": "Rank fairly."}

    ties = tmp_path / "ties.txt"
    ties.write_text('Judge this.\n{prompt}\n{response}\nEnd with {"score": n}.')
    rated = ["--genrm", "rated", "--reader", "pointwise", "--ties-template", str(ties), "--system-prompt", ""]
    assert cli([*args, *rated, "--seed", "3"]) == 0
    sent = server.requests[-16:]
    assert sorted(r["messages"][0]["content"] for r in sent if "Judge this." in r["messages"][0]["content"]) == sorted(
        f'Judge this.\nName a prime.\n```\n{answer}\n```\nEnd with {{"score": n}}.'
        for answer in ("good 2", "4", "good 3", "bad 4")
    )  # the Ties rows, with the pointwise reader's placeholders
    assert all(len(r["messages"]) == 1 for r in sent)  # "": no system message
    assert sum("Rate its answer." in r["messages"][0]["content"] for r in sent) == 12
    assert report_of(tmp_path / "x")["seed"] == 3 and report_of(tmp_path / "x")["genrm"] == "rated"
    v1 = write_jsonl(tmp_path / "v1.jsonl", V1)
    assert cli(["eval", "rewardbench", "--data", v1, "--version", "1", "--out", str(tmp_path / "y"), *judge,
                "--ties-template", str(ties)]) == 2  # fmt: skip
    assert "--ties-template only applies to RewardBench 2" in capsys.readouterr().err
