"""`writing-rl eval judgebench`: the score against a transcription of the benchmark's own metric (random
decisions, ties, nulls and failures), its published numbers reproduced from its own output file, the arena-hard
reader against a transcription of its label reading, and end-to-end runs on rows in the published format against
scripted judges on 127.0.0.1 (both readers, single game, a second attempt, failures counted, resume, bad rows)."""

from __future__ import annotations

import argparse
import math
import random
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from writing_rl.evaluation import judgebench
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.judgebench import (
    ARENA_FOLLOW_UP,
    ArenaReply,
    JudgeBenchPair,
    arena_hard_decision,
    arena_hard_score,
    arena_judgment,
    bucket_scores,
    games_of,
    markdown,
    pair_lines,
    run_judgebench,
    summarise,
)
from writing_rl.evaluation.kinds.judgebench import KIND
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings, Judgment
from writing_rl.protocols.prompts import read_pairwise_request
from writing_rl.tools.commands.evaluation import add_eval

from conftest import png_colours
from judge_server import Reply, quality
from offline_helpers import failing_when, first_position_judge, lines_of, report_of, settings_for, write_jsonl

# ---- transcriptions of the official code (ScalerLab/JudgeBench), kept as close to it as Python allows ----


def official_flip_judgment(decision):
    """ScalerLab/JudgeBench, utils/metrics.py, flip_judgment."""
    if decision == "A>B":
        decision = "B>A"
    elif decision == "B>A":
        decision = "A>B"
    return decision


def official_compute_final_metrics(pairs, reverse_order, include_fn=lambda x: x):
    """ScalerLab/JudgeBench, utils/metrics.py, compute_final_metrics; it returns only the score, the
    tallies it computes are returned here too so that ours can be compared with them."""
    pairs = [pair for pair in pairs if include_fn(pair)]
    n_pairs = len(pairs)
    if not reverse_order:
        n_correct = sum(pair["judgments"][0]["decision"] == pair["label"] for pair in pairs)
        n_incorrect = n_pairs - n_correct
        return 100 * n_correct / n_pairs, {"correct": n_correct, "incorrect_or_tie": n_incorrect}
    n_correct = n_incorrect = n_tie = n_nulls = n_inconsistent = 0
    for pair in pairs:
        label = pair["label"]
        judgment1, judgment2 = pair["judgments"]
        decision1 = judgment1["decision"] if judgment1 is not None else None
        decision2 = official_flip_judgment(judgment2["decision"] if judgment2 is not None else None)
        if decision1 is None or decision2 is None:
            n_nulls += 1
        if decision1 != decision2:
            n_inconsistent += 1
        counter = 0
        for decision in [decision1, decision2]:
            if decision == label:
                counter += 1
            elif decision == official_flip_judgment(label):
                counter -= 1
        if counter > 0:
            n_correct += 1
        elif counter < 0:
            n_incorrect += 1
        else:
            n_tie += 1
    tallies = {"correct": n_correct, "incorrect": n_incorrect, "tie": n_tie, "nulls": n_nulls,
               "inconsistent": n_inconsistent}  # fmt: skip
    return 100 * n_correct / n_pairs, tallies


OFFICIAL_SOURCES = ["mmlu-pro", "livebench-reasoning", "livebench-math", "livecodebench", ""]  # run_judge.py, main


def official_scores(pairs, reverse_order):
    """ScalerLab/JudgeBench, run_judge.py, main: the loop over sources (an empty one raises ZeroDivisionError)."""
    scores = {}
    for source in OFFICIAL_SOURCES:
        try:
            scores[source] = official_compute_final_metrics(
                pairs,
                reverse_order,
                include_fn=lambda x: x["source"].startswith(source),  # noqa: B023 (called at once)
            )
        except ZeroDivisionError:
            scores[source] = None
    return scores


def official_get_score(judgment, pattern, pairwise=True):
    """ScalerLab/JudgeBench, utils/judges.py, ArenaHard.get_score; then get_judgment's decision."""
    matches = pattern.findall(judgment)
    matches = [m for m in matches if m != ""]
    if len(set(matches)) == 0:
        return None, True
    elif len(set(matches)) == 1:
        return matches[0].strip("\n"), False
    else:
        return None, False


def official_decision(score):
    return score.replace(">>", ">").strip() if score else None


# ---- the score: 0 mismatches against the transcription ----

SOURCES = ["mmlu-pro-law", "mmlu-pro-math", "livebench-reasoning", "livebench-math", "livecodebench", "other-set"]
DECISIONS = ["A>B", "B>A", "A=B", None, "A<B"]  # "A<B": a label the arena-hard scale does not hold


def test_scores_and_tallies_match_the_official_metric_on_random_decisions():
    rng = random.Random(56)
    compared = 0
    for _ in range(600):
        two_games = rng.random() < 0.7
        official_pairs, ours = [], []
        for _ in range(rng.randint(0, 12)):
            source, label = rng.choice(SOURCES), rng.choice(["A>B", "B>A"])
            # a failed call is a null judgment in the benchmark, a null decision in ours
            judgments = [None if rng.random() < 0.1 else {"decision": rng.choice(DECISIONS)}
                         for _ in range(2 if two_games else 1)]  # fmt: skip
            if not two_games and judgments[0] is None:
                judgments[0] = {"decision": None}  # single game: the benchmark reads judgments[0]["decision"]
            official_pairs.append({"source": source, "label": label, "judgments": judgments})
            ours.append({"source": source, "label": label,
                         "decisions": [None if j is None else j["decision"] for j in judgments]})  # fmt: skip
        expected = official_scores(official_pairs, two_games)
        got = bucket_scores(ours, seed=rng.randint(0, 9))
        for (bucket, entry), source in zip(got.items(), OFFICIAL_SOURCES):
            assert entry["prefix"] == source
            if expected[source] is None:
                assert entry["n"] == 0 and math.isnan(entry["mean"])
                continue
            score, tallies = expected[source]
            assert entry["mean"] == score, (bucket, official_pairs)
            assert entry["low"] <= score <= entry["high"]
            if two_games:
                assert {k: entry[k] for k in tallies} == tallies
            else:
                assert entry["correct"] == tallies["correct"]
                assert entry["incorrect"] + entry["tie"] == tallies["incorrect_or_tie"]
            compared += 1
    assert compared > 1900, compared  # non-empty bucket results compared (1,984 with this seed)


# The benchmark's own output for judge arena_hard, o1-mini-2024-09-12 on the GPT-4o pairs
# (outputs/dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=o1-mini-2024-09-12.jsonl):
# per pair, its bucket (Knowledge, Reasoning, Math, Coding), label, game 1's and game 2's decisions, each
# a = A>B, b = B>A, t = A=B. Its README reports 58.44 / 62.24 / 82.14 / 78.57 / 65.71.
O1_MINI = """
Kaab Kaba Kabb Kaab Kaba Kaaa Kaat Kaba Kata Kbba Kbba Kabb Kaba Kbaa Kbaa Kbbb Kbaa Kbab Kaba Kbba Kbba Kbba Kaab Kaaa
Kaab Kbta Kaab Kbaa Kbba Kbba Kbba Kbaa Kaab Kaab Kaaa Kbaa Kaab Kaaa Kbaa Kbaa Kaba Kaba Kaba Kbba Kaab Kbba Kbaa Kabb
Kaab Kaba Kbba Kaaa Kaab Kaab Kbba Kaab Kaba Kbba Kaaa Kaab Kbba Kbab Kbab Kbba Kaaa Kbbb Kbta Kbba Kbaa Kaba Kbaa Kaab
Kbba Kaba Kaab Kaat Kbaa Kaaa Kaba Kbba Kbba Kaba Kabb Kbaa Kaab Kbba Kbba Kaaa Kbab Kaba Kbba Kaab Kaab Kbba Kbba Kbta
Kaab Kbba Kaba Kaab Kaab Kaba Kaab Kbba Kabb Kaab Kaab Kaab Kbba Kbba Kaab Kbba Kaaa Kbbt Kbba Kbaa Kbaa Kaab Kaaa Kbta
Kbba Kbba Kbba Kbbb Katb Kbba Kbba Kaab Kaaa Kbba Kaab Kbba Kaab Kbab Kbba Kaab Kaab Kaab Kbaa Kaab Kaab Kaab Kaaa Kaba
Kbba Kaab Kbba Kaab Kaab Kaab Kbaa Kbaa Kbab Kaab Maab Mata Mbba Matt Maab Maab Maab Matb Mbba Matb Mabb Maab Maab Maab
Maab Maab Mbba Mabb Mbba Mbba Mata Maab Mbba Mbba Mbab Maab Maab Mbba Maaa Maab Mbba Maab Maab Maat Matt Maab Mbba Maab
Maab Mbba Mbba Mbba Mbaa Mbba Mbaa Maab Mbba Maab Maab Mbba Maab Mbbt Mbba Mbbt Mbba Maab Rbba Raaa Raaa Rbba Rbba Rbab
Rbba Raab Raaa Rbba Raab Rabb Rabb Raab Raaa Rbba Raaa Rbaa Rbba Rbbt Rbbb Raab Raab Rbba Rbtb Raab Rbaa Rbaa Raab Rbba
Raab Rbba Raab Raba Rbba Rabb Raba Rbba Raab Raab Rbbt Rbtb Raab Raaa Rbba Rbaa Raab Raab Ratb Raab Raab Ratb Raat Raaa
Rbba Rabb Raab Rbaa Rbba Rbba Raaa Raab Raab Raab Raaa Raab Raab Rbta Rata Raaa Rbaa Rbtb Raab Rbba Rbba Rbab Rabb Raab
Rbbt Raab Raab Rbba Raaa Rbtt Raab Raab Raab Rbbt Rbba Raba Rbab Raab Raab Rbba Rbaa Rabb Rbaa Rbba Caab Caab Cbba Cbba
Caaa Caba Catb Cbba Cbaa Cbbt Caab Cbba Caab Cbtt Catb Cbba Caab Caab Caab Caab Caaa Cbba Cbta Caab Cbba Cbba Cbba Cabb
Cbba Caaa Cbtt Cbta Caab Caab Cbba Cbba Caab Caab Caaa Cbta Caab Caab
"""


def test_the_benchmarks_published_numbers_come_back_from_its_own_output_file():
    source = {"K": "mmlu-pro-law", "R": "livebench-reasoning", "M": "livebench-math", "C": "livecodebench"}
    decision = {"a": "A>B", "b": "B>A", "t": "A=B"}
    pairs = [{"source": source[code[0]], "label": decision[code[1]], "decisions": [decision[c] for c in code[2:]]}
             for code in O1_MINI.split()]  # fmt: skip
    assert len(pairs) == 350
    scores = bucket_scores(pairs)
    assert {name: round(s["mean"], 2) for name, s in scores.items()} == {
        "Knowledge": 58.44, "Reasoning": 62.24, "Math": 82.14, "Coding": 78.57, "Overall": 65.71
    }  # fmt: skip
    assert [s["n"] for s in scores.values()] == [154, 98, 56, 42, 350]


# ---- the arena-hard reader: 0 mismatches against get_score ----

PIECES = ["[[", "]]", "[", "]", "A", "B", "<", ">", "=", ">>", " ", "x", "\n", "[[A>>B]]", "[[A>B]]", "[[A=B]]",
          "[[B>A]]", "[[B>>A]]", "[[A]]", "[[B>>>A]]", "[[A<<B]]", "[[]]", "verdict: "]  # fmt: skip


def test_the_arena_hard_reader_matches_get_score_on_random_replies():
    rng = random.Random(7)
    pattern = re.compile(r"\[\[([AB<>=]+)\]\]")  # the pattern ArenaHard.get_judgment passes
    outcomes = set()
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        expected = official_get_score(text, pattern)
        assert arena_hard_score(text) == expected, text
        assert arena_hard_decision(arena_hard_score(text)[0]) == official_decision(expected[0]), text
        outcomes.add((expected[1], official_decision(expected[0])))
    # every reading came up: none (ask again), several (None), each label of the scale, and odd ones
    assert {(True, None), (False, None), (False, "A>B"), (False, "A=B"), (False, "B>A"), (False, "A")} <= outcomes


# ---- end to end, on rows in the published format ----


def row(pair_id, source, a, b, label, question="Which is right?"):
    return {"pair_id": pair_id, "original_id": 1000 + len(pair_id), "source": source, "question": question,
            "response_model": "gpt-4o-2024-05-13", "response_A": a, "response_B": b, "label": label}  # fmt: skip


# The default judge prefers the answer with more "good" than "bad" (a tie when equal).
ROWS = [
    row("p1", "mmlu-pro-law", "good answer", "bad answer", "A>B"),  # right in both games
    row("p2", "mmlu-pro-math", "plain", "good", "A>B"),  # wrong in both
    row("p3", "livebench-reasoning", "same", "same too", "B>A"),  # ties in both: counter 0
    row("p4", "livebench-math", "bad", "good", "B>A"),
    row("p5", "livecodebench", "good code", "code", "A>B"),
    row("p6", "livecodebench", "good one", "bad one", "B>A"),
]


def cli(argv) -> int:
    parser = argparse.ArgumentParser(prog="writing-rl")
    add_eval(parser.add_subparsers(dest="command"), kinds=(KIND,))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_pairwise_reader_both_games_through_the_cli_and_resume(tmp_path, judge_server, capsys):
    server = judge_server()
    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl", ROWS)
    argv = ["eval", "judgebench", "--data", data, "--out", str(out), "--judge-url", server.base_url,
            "--judge-model", "genrm", "--quiet"]  # fmt: skip
    assert cli(argv) == 0
    assert len(server.requests) == 12
    game2 = server.requests[1]["messages"]
    assert game2[0]["content"].startswith("You are a careful, impartial judge")  # our GenRM's own prompt
    assert read_pairwise_request(game2[-1]["content"]) == ("Which is right?", "bad answer", "good answer")  # B first
    assert "Judge the two responses" not in game2[-1]["content"]  # not the arena-hard reader's prompt
    report = report_of(out)
    scores = {name: (s["mean"], s["n"], s["correct"], s["incorrect"], s["tie"]) for name, s in report["scores"].items()}
    assert scores == {
        "Knowledge": (50.0, 2, 1, 1, 0), "Reasoning": (0.0, 1, 0, 0, 1), "Math": (100.0, 1, 1, 0, 0),
        "Coding": (50.0, 2, 1, 1, 0), "Overall": (50.0, 6, 3, 2, 1),
    }  # fmt: skip
    assert report["overall"] == 50.0 and report["games"] == 2 and report["failures"]["judge_error"] == 0
    pairs = {line["pair_id"]: line for line in lines_of(out / "pairs.jsonl")}
    assert pairs["p1"]["decisions"] == ["A>B", "B>A"] and pairs["p1"]["counter"] == 2  # game 2 in its own order
    assert pairs["p3"]["decisions"] == ["A=B", "A=B"] and pairs["p3"]["correct"] is False
    md = (out / "report.md").read_text()
    assert md.startswith("# JudgeBench: pairwise reader\n\nOverall **50.00** over 6 pairs")
    assert (
        "| Overall | (all) | 6 | 50.00 [" in md
        and "| Reasoning | 'livebench-reasoning' | 1 | 0.00 [0.00, 0.00] |" in md
    )
    printed = capsys.readouterr()
    assert printed.out.splitlines()[0] == (
        "JudgeBench overall 50.00 over 6 pairs (pairwise reader, 2 games per pair): "
        "Knowledge 50.00, Reasoning 0.00, Math 100.00, Coding 50.00"
    )
    assert "judged" not in printed.err  # --quiet: no progress line
    records = lines_of(out / "judgments.jsonl")
    assert records[:2] == [
        {"pair_id": "p1", "source": "mmlu-pro-law", "label": "A>B", "game": 1, "shown": "A,B", "read": "A",
         "decision": "A>B", "attempts": 1, "error": None, "unreadable": False},
        {"pair_id": "p1", "source": "mmlu-pro-law", "label": "A>B", "game": 2, "shown": "B,A", "read": "B",
         "decision": "B>A", "attempts": 1, "error": None, "unreadable": False},
    ]  # fmt: skip
    assert [p["bucket"] for p in pairs.values()] == ["Knowledge", "Knowledge", "Reasoning", "Math", "Coding", "Coding"]
    assert "#316eb4" in png_colours((out / "buckets.png").read_bytes())  # the buckets' bars, in the palette's blue

    assert cli(argv) == 0 and len(server.requests) == 12  # resumed from the cache: no new call
    assert report_of(out)["scores"] == report["scores"]


def test_a_position_biased_judge_scores_zero_and_every_pair_is_inconsistent(tmp_path, judge_server):
    server = judge_server(script=first_position_judge)  # always [[A]]
    out = tmp_path / "out"
    run_judgebench(write_jsonl(tmp_path / "jb.jsonl", ROWS), str(out), settings_for(server), progress=False)
    overall = report_of(out)["scores"]["Overall"]
    assert (overall["mean"], overall["tie"], overall["inconsistent"], overall["nulls"]) == (0.0, 6, 6, 0)

    # one game only: the first answer always wins, so the A>B pairs are right
    single = tmp_path / "single"
    printed = run_judgebench(write_jsonl(tmp_path / "jb.jsonl", ROWS), str(single), settings_for(server),
                             single_game=True, progress=False)  # fmt: skip
    assert printed[0].startswith("JudgeBench overall 50.00 over 6 pairs (pairwise reader, 1 game per pair): ")
    report = report_of(single)
    assert report["games"] == 1 and report["scores"]["Overall"]["mean"] == 50.0
    assert "inconsistent" not in report["scores"]["Overall"]
    assert len(server.requests) == 12 + 6
    assert "each pair judged once (A then B)" in (single / "report.md").read_text()


def arena_script(request: dict, index: int) -> Reply:
    """An Arena-Hard-style judge: [[A>>B]] ... [[B>>A]] by the 'good minus bad' difference. A pair holding
    "late" gives its label only when asked again; "torn" names two labels; "mute" never gives one."""
    messages = request["messages"]
    _, a, b = read_pairwise_request(next(m["content"] for m in messages if m["role"] == "user"))
    asked_again = messages[-1]["content"] == ARENA_FOLLOW_UP
    difference = quality(a) - quality(b)
    label = {2: "A>>B", 1: "A>B", 0: "A=B", -1: "B>A", -2: "B>>A"}[max(-2, min(2, difference))]
    text = a + b
    if "mute" in text or ("late" in text and not asked_again):
        return Reply(content="Both answers need a closer look; weighing them still.")
    if "torn" in text:
        return Reply(content="At first [[A>B]], then again [[B>A]].")
    return Reply(content=f"<think>[[B>>A]]?</think>My own answer first. Verdict: [[{label}]] and so [[{label}]]")


ARENA_ROWS = [
    row("q1", "mmlu-pro-law", "good good", "bad", "A>B"),  # A>>B in game 1, B>>A in game 2: correct
    row("q2", "livebench-math", "late good", "late", "A>B"),  # no label, then A>B on the second attempt
    row("q3", "livebench-reasoning", "torn good", "torn", "A>B"),  # two labels: no decision either game
    row("q4", "livecodebench", "mute", "mute good", "B>A"),  # no label after two attempts
    row("q5", "livecodebench", "x", "y", "B>A"),  # A=B in both: a tie
]


def test_arena_hard_reader_asks_once_more_for_a_label_and_resumes(tmp_path, judge_server, capsys):
    server = judge_server(script=arena_script)
    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "jb.jsonl", ARENA_ROWS)
    cache = tmp_path / "cache" / "arena.sqlite"
    lines = run_judgebench(data, str(out), settings_for(server), reader="arena-hard", cache=str(cache))
    progress = capsys.readouterr().err  # a progress line for each round
    assert "judged 10/10 calls" in progress and "judged 4/4 calls" in progress
    assert cache.is_file() and not (out / "judge_cache.sqlite").exists()
    assert "judge calls 14: judge errors 0, unreadable 4: counted; each gives no decision (neither way)" in lines
    assert len(server.requests) == 10 + 4  # q2 and q4, both games, asked again
    follow_up = [r["messages"] for r in server.requests if len(r["messages"]) == 4]
    assert len(follow_up) == 4 and all([m["role"] for m in f] == ["system", "user", "assistant", "user"]
                                       for f in follow_up)  # fmt: skip
    assert follow_up[0][2]["content"] == "Both answers need a closer look; weighing them still."
    assert "[[A>>B]] Response A is much better" in server.requests[0]["messages"][0]["content"]
    records = {(r["pair_id"], r["game"]): r for r in lines_of(out / "judgments.jsonl")}
    assert (records["q1", 1]["read"], records["q1", 1]["decision"]) == ("A>>B", "A>B")  # the think block is skipped
    assert (records["q1", 2]["read"], records["q1", 2]["decision"]) == ("B>>A", "B>A")
    assert (records["q2", 1]["decision"], records["q2", 1]["attempts"]) == ("A>B", 2)
    assert records["q3", 1]["decision"] is None and records["q3", 1]["unreadable"] and records["q3", 1]["attempts"] == 1
    assert records["q4", 2]["decision"] is None and records["q4", 2]["attempts"] == 2
    report = report_of(out)
    assert report["second_attempts"] == 4 and report["judge"]["calls"] == 14
    assert report["failures"]["unreadable"] == 4 and report["failures"]["judge_error"] == 0
    assert {name: s["mean"] for name, s in report["scores"].items()} == {
        "Knowledge": 100.0, "Reasoning": 0.0, "Math": 100.0, "Coding": 0.0, "Overall": 40.0
    }  # fmt: skip
    assert report["scores"]["Overall"]["nulls"] == 2  # q3 and q4
    assert lines[0].startswith("JudgeBench overall 40.00 over 5 pairs (arena-hard reader")
    assert "- second attempts (no label in the first reply): 4" in (out / "report.md").read_text()

    run_judgebench(data, str(out), settings_for(server), reader="arena-hard", cache=str(cache), progress=False)
    assert len(server.requests) == 14  # both rounds answered from the cache
    assert capsys.readouterr().err == ""
    assert report_of(out)["scores"] == report["scores"] and report_of(out)["judge"]["cache_hits"] == 14


def test_failed_calls_give_no_decision_are_counted_and_retried_on_rerun(tmp_path, judge_server, capsys):
    failing = {"on": True}
    fail = failing_when(lambda a, b: failing["on"] and a == "bad answer")  # p1's game 2 (B shown first)
    server = judge_server(script=fail)
    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "jb.jsonl", ROWS)
    judge = ["--judge-url", server.base_url, "--judge-model", "genrm", "--quiet"]
    argv = ["eval", "judgebench", "--data", data, "--out", str(out), *judge]
    assert cli(argv) == 1  # reports written, exit 1 without --allow-judge-errors
    error = capsys.readouterr().err
    assert "the report counts them and scores them as the benchmark does (a call that failed" in error
    report = report_of(out)
    failures = report["failures"]
    assert (failures["judge_error"], failures["pairs_with_failed_calls"], failures["unreadable"]) == (1, 1, 0)
    assert "judge_pairs" in failures["rule"]
    p1 = next(line for line in lines_of(out / "pairs.jsonl") if line["pair_id"] == "p1")
    assert p1["decisions"] == ["A>B", None] and p1["correct"] is True  # one right, one null: correct, as officially
    assert report["scores"]["Knowledge"]["nulls"] == 1 and report["scores"]["Overall"]["n"] == 6
    md = (out / "report.md").read_text()
    assert "- judge errors 1 (0.083) in 1 pairs, unreadable 0 (0.000): counted; a call that failed" in md
    assert cli([*argv, "--allow-judge-errors"]) == 0

    failing["on"] = False
    before = len(server.requests)
    assert cli(argv) == 0
    assert len(server.requests) == before + 1  # only the failed call is made again
    assert report_of(out)["failures"]["judge_error"] == 0


def test_parquet_rows_are_read_as_the_jsonl_ones(tmp_path, judge_server, capsys):
    server = judge_server()
    data = tmp_path / "gpt.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), data)
    out = tmp_path / "out"
    run_judgebench(str(data), str(out), settings_for(server), single_game=True)  # the defaults: progress, seed 0
    assert report_of(out)["pairs"] == 6 and len(server.requests) == 6
    assert report_of(out)["seed"] == 0 and "judged 6/6 calls" in capsys.readouterr().err
    assert report_of(out)["scores"]["Overall"]["correct"] == 3  # the verdicts were read

    cache = tmp_path / "elsewhere.sqlite"
    run_judgebench(str(data), str(tmp_path / "seeded"), settings_for(server), single_game=True, seed=3,
                   cache=str(cache), progress=False)  # fmt: skip
    assert report_of(tmp_path / "seeded")["seed"] == 3 and cache.is_file()
    assert not (tmp_path / "seeded" / "judge_cache.sqlite").exists() and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "change, message",
    [
        ({"label": "A=B"}, "jb.jsonl:2 (pair_id 'p2'): label must be 'A>B' or 'B>A', got str 'A=B'"),
        ({"label": None}, "jb.jsonl:2 (pair_id 'p2'): label must be 'A>B' or 'B>A', got nothing"),
        ({"response_B": 3}, "jb.jsonl:2 (pair_id 'p2'): response_B must be a string, got int 3"),
        ({"question": " "}, "jb.jsonl:2 (pair_id 'p2'): question must be a non-empty string, got str ' '"),
        ({"source": None}, "jb.jsonl:2 (pair_id 'p2'): source must be a non-empty string, got nothing"),
        ({"pair_id": "p1"}, "jb.jsonl:2: pair_id 'p1' appears twice (first at"),
        ({"pair_id": None}, "jb.jsonl:2: pair_id must be a non-empty string or an integer, got nothing"),
        ({"pair_id": ""}, "jb.jsonl:2: pair_id must be a non-empty string or an integer, got str ''"),
    ],
)
def test_bad_rows_are_named_with_their_field(tmp_path, change, message):
    data = write_jsonl(tmp_path / "jb.jsonl", [ROWS[0], {**ROWS[1], **change}])
    settings = JudgeSettings(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="genrm"))
    with pytest.raises(InputError, match=re.escape(message)) as raised:
        run_judgebench(data, str(tmp_path / "out"), settings, progress=False)
    if "twice" in message:
        assert str(raised.value).endswith("jb.jsonl:1)")


def test_bad_options_fail_before_any_call(tmp_path):
    settings = JudgeSettings(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="genrm"))
    data = write_jsonl(tmp_path / "jb.jsonl", ROWS)
    with pytest.raises(InputError, match="--reader must be one of pairwise, arena-hard"):
        run_judgebench(data, str(tmp_path / "out"), settings, reader="likert", progress=False)
    template = tmp_path / "t.txt"
    template.write_text("{prompt} {response_a} only")
    with pytest.raises(ValueError, match="must contain the placeholder {response_b}"):
        run_judgebench(data, str(tmp_path / "out"), settings, reader="arena-hard", template=str(template),
                       progress=False)  # fmt: skip
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no pairs"):
        run_judgebench(str(empty), str(tmp_path / "out"), settings, progress=False)


def test_the_kind_declares_its_work_module_and_plot():
    """What tests/test_eval_kinds.py asks of every registered kind."""
    import importlib

    work = importlib.import_module(KIND.module)
    assert callable(work.summarise) and callable(work.markdown) and callable(work.run_judgebench)
    assert KIND.name == "judgebench" and KIND.plot in KIND.description


# ---- the report's parts, from known decisions ----


def judged(pairs, decisions, errors=()):
    """Records as the judge step writes them: ``decisions[pair_id]`` in game order; ``errors``: failed (pair, game)."""
    return [{"pair_id": p.pair_id, "game": g, "decision": d, "attempts": 1,
             "error": "http" if (p.pair_id, g) in errors else None,
             "unreadable": (p.pair_id, g) not in errors and d is None}
            for p in pairs for g, d in enumerate(decisions[p.pair_id], start=1)]  # fmt: skip


def jb_pair(pair_id, source, label="A>B"):
    return JudgeBenchPair(pair_id, source, "Which?", "one", "two", label)


def test_each_pair_line_names_its_bucket_and_the_notes_name_what_the_file_lacks():
    pairs = [jb_pair("k", "mmlu-pro-law"), jb_pair("c", "livecodebench", "B>A"), jb_pair("o1", "other-set"),
             jb_pair("o2", "other-set", "B>A"), jb_pair("x", "arena")]  # fmt: skip
    decisions = {"k": ["A>B", "B>A"], "c": ["A>B", None], "o1": ["A=B", "A>B"], "o2": ["B>A", "A>B"], "x": [None, None]}
    records = judged(pairs, decisions, errors={("x", 1)})
    lines = pair_lines(pairs, records)
    assert [(line["bucket"], line["decisions"], line["counter"]) for line in lines] == [
        ("Knowledge", ["A>B", "B>A"], 2), ("Coding", ["A>B", None], -1), (None, ["A=B", "A>B"], -1),
        (None, ["B>A", "A>B"], 2), (None, [None, None], 0),
    ]  # fmt: skip
    report = summarise(pairs, records, lines, "pairwise", True, seed=0)
    assert report["kind"] == "judgebench" and report["pairs"] == 5 and report["games"] == 2
    assert report["notes"] == [
        "Reasoning: no pair in the file (source starting with 'livebench-reasoning')",
        "Math: no pair in the file (source starting with 'livebench-math')",
        "sources in no bucket, counted in Overall only: other-set (2), arena (1)",
    ]
    assert (report["failures"]["judge_error"], report["failures"]["unreadable"]) == (1, 2)
    assert report["failures"]["pairs_with_failed_calls"] == 1
    one_each = [jb_pair(name, prefix) for name, prefix in judgebench.BUCKETS[:-1]]
    full = summarise(one_each, judged(one_each, {p.pair_id: ["A>B"] for p in one_each}),
                     pair_lines(one_each, judged(one_each, {p.pair_id: ["A>B"] for p in one_each})), "pairwise",
                     False, seed=0)  # fmt: skip
    assert full["notes"] == [] and full["games"] == 1 and full["overall"] == 100.0
    some = one_each[:2]  # Knowledge and Reasoning only
    records = judged(some, {p.pair_id: ["A>B"] for p in some})
    assert [note.split(":")[0] for note in summarise(some, records, pair_lines(some, records), "pairwise", False,
                                                     seed=0)["notes"]] == ["Math", "Coding"]  # fmt: skip


def test_the_report_bootstraps_with_its_own_seed():
    # bucket sizes whose intervals move with the seed (7 pairs: low 28.57 at seed 0, 14.29 at seed 1)
    pairs = [jb_pair(f"m{i}", "livebench-math") for i in range(7)]
    pairs += [jb_pair(f"c{i}", "livecodebench") for i in range(9)]
    pairs += [jb_pair(f"k{i}", "mmlu-pro-law") for i in range(13)]
    decisions = {p.pair_id: ["A>B" if i % 3 else "B>A", "B>A"] for i, p in enumerate(pairs)}
    records = judged(pairs, decisions)
    lines = pair_lines(pairs, records)
    report = summarise(pairs, records, lines, "pairwise", True, seed=1)
    assert report["seed"] == 1
    expected, other = bucket_scores(lines, seed=1), bucket_scores(lines, seed=0)
    for name in ("Knowledge", "Math", "Coding", "Overall"):
        assert report["scores"][name] == expected[name], name
    assert (expected["Math"]["low"], other["Math"]["low"]) == (pytest.approx(100 / 7), pytest.approx(200 / 7))
    assert bucket_scores(lines)["Math"] == other["Math"]  # seed 0 unless given
    assert set(other["Math"]) == {"mean", "low", "high", "n", "prefix", "correct", "incorrect", "tie", "inconsistent",
                                  "nulls"}  # fmt: skip


def test_the_markdown_table_has_the_two_game_columns_only_for_two_games():
    pairs = [jb_pair("k", "mmlu-pro-law"), jb_pair("k2", "mmlu-pro-law"), jb_pair("c", "livecodebench", "B>A"),
             jb_pair("k3", "mmlu-pro-math")]  # fmt: skip
    # k right twice, k2 right and null, c right twice, k3 A>B in both games' own orders (a tie, inconsistent)
    decisions = {"k": ["A>B", "B>A"], "k2": ["A>B", None], "c": ["B>A", "A>B"], "k3": ["A>B", "A>B"]}
    records = judged(pairs, decisions)
    report = summarise(pairs, records, pair_lines(pairs, records), "arena-hard", True, seed=0)
    report["second_attempts"] = 3
    md = markdown(report)
    assert (
        "| bucket | source prefix | pairs | score [95% CI] | correct | incorrect | tie | inconsistent | with a null |"
        in md
    )
    assert "| Knowledge | 'mmlu-pro' | 3 | 66.67 [0.00, 100.00] | 2 | 0 | 1 | 2 | 1 |" in md
    assert "| Reasoning | 'livebench-reasoning' | 0 | – | 0 | 0 | 0 | 0 | 0 |" in md
    assert "| Overall | (all) | 4 | 75.00 [25.00, 100.00] | 3 | 0 | 1 | 2 | 1 |" in md
    assert "game 2's decision is flipped" in md and "- second attempts (no label in the first reply): 3" in md
    assert md.startswith("# JudgeBench: arena-hard reader\n\nOverall **75.00** over 4 pairs")

    single = {p: d[:1] for p, d in decisions.items()}
    records = judged(pairs, single)
    report = summarise(pairs, records, pair_lines(pairs, records), "pairwise", False, seed=0)
    md = markdown(report)
    assert "| bucket | source prefix | pairs | score [95% CI] | correct | incorrect | tie |\n" in md
    assert "| Coding | 'livecodebench' | 1 | 100.00 [100.00, 100.00] | 1 | 0 | 0 |\n" in md
    assert "| Math | 'livebench-math' | 0 | – | 0 | 0 | 0 |\n" in md
    assert "each pair judged once (A then B)" in md and "second attempts" not in md
    assert judgebench._percent(math.nan) == "–" and judgebench._percent(65.714) == "65.71"


def test_an_unclosed_reasoning_block_asks_again():
    text = "<think>[[A>B]] is tempting, but"
    assert arena_judgment(text) == Judgment(value=ArenaReply(None, True, text))
    assert arena_judgment("</think>\n[[B>>A]]") == Judgment(value=ArenaReply("B>>A", False, "</think>\n[[B>>A]]"))


def test_the_arena_rounds_join_their_judge_sections_and_a_failed_call_reads_nothing(monkeypatch, tmp_path):
    pairs = [jb_pair("f", "mmlu-pro-law"), jb_pair("l", "livecodebench"), jb_pair("b", "livebench-math")]
    games = games_of(pairs, "arena-hard", False, None, "Judge.")
    rounds = []

    def fake_judge_jobs(settings, jobs, build, read, out_dir, cache, progress):
        rounds.append(([build(job) for job in jobs], out_dir, cache, progress))
        if len(rounds) == 1:
            return [Judgment(error="http"), read("No label yet."), read("[[B>>A]]")], {
                "calls": 3,
                "cache_hits": 1,
                "wall_s": 1.2344,
                "first_failure": "first round",
            }
        return [read("Then [[A>B]].")], {"calls": 1, "cache_hits": 1, "wall_s": 2.0004, "first_failure": "second"}

    monkeypatch.setattr(judgebench, "judge_jobs", fake_judge_jobs)
    records, section = judgebench._arena_records(games, None, str(tmp_path), "cache.sqlite", "shown")
    assert section == {"calls": 4, "cache_hits": 2, "wall_s": 3.235, "first_failure": "first round",
                       "second_attempts": 1}  # fmt: skip
    assert [r[1:] for r in rounds] == [(str(tmp_path), "cache.sqlite", "shown")] * 2
    assert rounds[1][0] == [[*games[1].messages, {"role": "assistant", "content": "No label yet."},
                             {"role": "user", "content": ARENA_FOLLOW_UP}]]  # fmt: skip
    assert [(r["read"], r["decision"], r["attempts"], r["error"], r["unreadable"]) for r in records] == [
        (None, None, 1, "http", False),
        ("A>B", "A>B", 2, None, False),
        ("B>>A", "B>A", 1, None, False),
    ]


def test_each_reader_builds_its_own_prompt_and_a_single_game_shows_a_first():
    pair = JudgeBenchPair("g", "livecodebench", "Which loop halts?", "first answer", "second answer", "A>B")
    for reader in ("pairwise", "arena-hard"):
        games = games_of([pair], reader, False, None, "Custom judge.")
        assert [g.number for g in games] == [1]
        messages = games[0].messages
        assert messages[0] == {"role": "system", "content": "Custom judge."}
        assert read_pairwise_request(messages[-1]["content"]) == ("Which loop halts?", "first answer", "second answer")
        arena_prompt = "Judge the two responses, then give your verdict label." in messages[-1]["content"]
        assert arena_prompt == (reader == "arena-hard"), reader
    assert [m["role"] for m in games_of([pair], "arena-hard", False, None, None)[0].messages] == ["user"]
    both = games_of([pair], "pairwise", True, None, "Custom judge.")
    assert [(g.number, read_pairwise_request(g.messages[-1]["content"])[1]) for g in both] == [
        (1, "first answer"),
        (2, "second answer"),
    ]


def test_a_pairwise_template_file_is_used(tmp_path):
    template = tmp_path / "mine.txt"
    template.write_text("MY PROMPT [Request]\n{prompt}\n[Response A]\n{response_a}\n[Response B]\n{response_b}\n")
    pair = JudgeBenchPair("t", "livecodebench", "Which?", "first", "second", "A>B")
    for reader in ("pairwise", "arena-hard"):
        (game,) = games_of([pair], reader, False, str(template), None)
        assert game.messages[-1]["content"].startswith("MY PROMPT"), reader
