"""`writing-rl eval genrm-pairwise` and `eval genrm-ranking` against scripted GenRMs on 127.0.0.1: exact
accuracies on designed cases, our builders' parquets read back, resume without repeated calls, bad input
by line, failures counted and never scored."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from reward_fns.ranking_accuracy import compute_score
from writing_rl.evaluation import stats
from writing_rl.evaluation.genrm_pairwise import bucket_names, bucket_of, run_genrm_pairwise
from writing_rl.evaluation.genrm_ranking import RankingOptions, run_genrm_ranking
from writing_rl.evaluation.inputs import InputError
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings
from writing_rl.tools.cli import main as cli

from judge_server import Reply, default_script, gqm_reply, quality
from offline_helpers import first_position_judge, pair_of, report_of, verdict, write_jsonl

LONG = "x" * 300
PAIRS = [  # the default judge prefers more "good" than "bad"; d = len(chosen) - len(rejected)
    {"index": 1, "prompt": "Write about tides.", "chosen": "a good good essay", "rejected": "a bad essay"},  # d 6
    {"index": 2, "prompt": "Write about rivers.", "chosen": "good " + LONG, "rejected": "a plain text"},  # d 293
    {"index": 3, "prompt": "Write about snow.", "chosen": "good", "rejected": "bad " + "y" * 600},  # d -600
    {"index": 4, "prompt": "Write about rain.", "chosen": "good rain", "rejected": "bad rain"},  # d 1
]


def settings_for(server, **judge) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="genrm", max_retries=0, **judge))


def read_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def pairs_file(tmp_path):
    return write_jsonl(tmp_path / "pairs.jsonl", PAIRS)


# ---------------------------------------------------------------- genrm-pairwise


def test_an_accurate_judge_scores_one_in_both_orders(tmp_path, judge_server, pairs_file):
    server = judge_server()
    out = tmp_path / "out"
    lines = run_genrm_pairwise(pairs_file, str(out), settings_for(server), progress=False)
    assert len(server.requests) == 8  # every pair in both orders
    assert {pair_of(r) for r in server.requests} == {
        *((p["chosen"], p["rejected"]) for p in PAIRS),
        *((p["rejected"], p["chosen"]) for p in PAIRS),
    }
    report = report_of(out)
    assert report["accuracy"] == {"mean": 1.0, "low": 1.0, "high": 1.0, "n": 4}
    assert report["orders"]["chosen_first"] == {"accuracy": 1.0, "read": 4, "ties": 0}
    assert report["orders"]["chosen_second"] == {"accuracy": 1.0, "read": 4, "ties": 0}
    assert report["position_consistency"] == {"rate": 1.0, "pairs": 4} and report["tie_rate"] == 0
    assert report["failures"] == {"judge_error": 0, "unreadable": 0, "judge_error_rate": 0.0, "unreadable_rate": 0.0}
    assert lines[0].startswith("accuracy 1.000 [1.000, 1.000] over 4 pairs")
    records = read_lines(out / "judgments.jsonl")
    assert [(r["index"], r["order"], r["verdict"], r["correct"]) for r in records[:2]] == [
        (1, "chosen_first", "A", True), (1, "chosen_second", "B", True)
    ]  # fmt: skip
    assert "| both orders | 8 | 1.000 [1.000, 1.000] |" in (out / "report.md").read_text()


def test_a_position_biased_judge_is_right_in_one_order_only(tmp_path, judge_server, pairs_file):
    server = judge_server(script=first_position_judge)  # always [[A]]
    out = tmp_path / "out"
    run_genrm_pairwise(pairs_file, str(out), settings_for(server), progress=False)
    report = report_of(out)
    assert report["orders"]["chosen_first"]["accuracy"] == 1.0
    assert report["orders"]["chosen_second"]["accuracy"] == 0.0
    assert report["accuracy"]["mean"] == 0.5
    assert report["position_consistency"] == {"rate": 0.0, "pairs": 4}
    assert report["both_orders_correct"] == {"rate": 0.0, "pairs": 4}


def test_accuracy_by_length_difference_bucket(tmp_path, judge_server, pairs_file):
    def longer_wins(request, index):
        a, b = pair_of(request)
        return verdict("A" if len(a) > len(b) else "B" if len(b) > len(a) else "C")

    server = judge_server(script=longer_wins)
    out = tmp_path / "out"
    run_genrm_pairwise(pairs_file, str(out), settings_for(server), progress=False)
    buckets = report_of(out)["length_buckets"]
    assert buckets["edges"] == [100, 500]
    accuracy = {name: (s["mean"], s["n"]) for name, s in buckets["accuracy"].items()}
    assert accuracy == {
        "chosen shorter by >500": (0.0, 1),  # pair 3: the longer rejected response wins both orders
        "chosen shorter by 100-500": (None, 0),  # no pair: null in report.json
        "within ±100": (1.0, 2),  # pairs 1 and 4: the chosen one is a little longer
        "chosen longer by 100-500": (1.0, 1),
        "chosen longer by >500": (None, 0),
    }
    assert [bucket_of(d, (100, 500)) for d in (-501, -500, -101, -100, 0, 100, 101, 500, 501)] == [
        bucket_names((100, 500))[i] for i in (0, 1, 1, 2, 2, 2, 3, 3, 4)
    ]
    run_genrm_pairwise(pairs_file, str(tmp_path / "fine"), settings_for(server), length_edges=(5,), progress=False)
    assert list(report_of(tmp_path / "fine")["length_buckets"]["accuracy"]) == [
        "chosen shorter by >5", "within ±5", "chosen longer by >5"
    ]  # fmt: skip


def test_ties_unreadable_replies_and_judge_errors_are_counted_never_scored(tmp_path, judge_server, pairs_file):
    def script(request, index):
        a, b = pair_of(request)
        if "tides" in request["messages"][-1]["content"]:
            return verdict("C")  # pair 1: a tie in both orders (wrong, consistent)
        if a.startswith("good " + LONG[:5]):
            return Reply(content="I cannot decide.")  # pair 2, chosen first: no verdict
        if b.startswith("good " + LONG[:5]):
            return Reply(status=503, body=b"overloaded")  # pair 2, chosen second: a failed call
        return default_script(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    run_genrm_pairwise(pairs_file, str(out), settings_for(server), progress=False)
    report = report_of(out)
    assert report["failures"] == {
        "judge_error": 1,
        "unreadable": 1,
        "judge_error_rate": 1 / 8,
        "unreadable_rate": 1 / 8,
    }
    assert report["accuracy"]["mean"] == pytest.approx(4 / 6) and report["accuracy"]["n"] == 3  # pair 2 unscored
    assert report["tie_rate"] == pytest.approx(2 / 6)
    assert report["orders"]["chosen_first"] == {"accuracy": pytest.approx(2 / 3), "read": 3, "ties": 1}
    assert report["position_consistency"] == {"rate": 1.0, "pairs": 3}  # two ties name the same (no) response
    records = {(r["index"], r["order"]): r for r in read_lines(out / "judgments.jsonl")}
    assert records[(2, "chosen_first")]["unreadable"] and records[(2, "chosen_first")]["correct"] is None
    assert records[(2, "chosen_second")]["error"] == "http"


def test_an_interrupted_pairwise_run_resumes_without_repeating_a_call(tmp_path, judge_server, pairs_file):
    def fails_chosen_second(request, index):
        a, b = pair_of(request)
        if b in {p["chosen"] for p in PAIRS}:
            return Reply(status=503, body=b"overloaded")
        return default_script(request, index)

    server = judge_server(script=fails_chosen_second)
    out = tmp_path / "out"
    run_genrm_pairwise(pairs_file, str(out), settings_for(server), progress=False)
    assert report_of(out)["failures"]["judge_error"] == 4
    assert report_of(out)["orders"]["chosen_second"]["read"] == 0

    resumes(lambda: run_genrm_pairwise(pairs_file, str(out), settings_for(server), progress=False), out, server, 4)
    assert report_of(out)["accuracy"]["mean"] == 1.0 and report_of(out)["judge"]["cache_hits"] == 8


def resumes(run, out, server, retried: int) -> None:
    """Once the endpoint recovers, a rerun makes only the ``retried`` failed calls again; a third run makes
    none and writes the same outputs, but for the judge section of report.json (its cache hits and time)."""
    server.script = default_script
    before = len(server.requests)
    run()
    assert len(server.requests) - before == retried
    first = {name: (out / name).read_text() for name in ("report.json", "report.md", "judgments.jsonl")}
    before = len(server.requests)
    run()
    assert len(server.requests) == before
    assert {k: v for k, v in report_of(out).items() if k != "judge"} == {
        k: v for k, v in json.loads(first["report.json"]).items() if k != "judge"
    }
    assert all((out / name).read_text() == text for name, text in first.items() if name != "report.json")


def test_reads_the_pref_rl_parquet_of_our_builder(tmp_path, judge_server):
    rows = [{k: v for k, v in p.items() if k != "index"} for p in PAIRS]
    rows.append({"prompt": "A tie.", "chosen": "one", "rejected": "two", "tie": True})
    source = write_jsonl(tmp_path / "pairs.jsonl", [{**r, "tie": r.get("tie", False)} for r in rows])
    assert build(["pref-rl", "--quiet", "--input", source, "--output", str(tmp_path / "rl"), "--tie-key", "tie"]) == 0
    parquet = tmp_path / "rl" / "train.parquet"
    built = pq.read_table(parquet).to_pylist()
    assert len(built) == 10  # both orders of every pair

    server = judge_server()
    out = tmp_path / "out"
    run_genrm_pairwise(str(parquet), str(out), settings_for(server), progress=False)
    report = report_of(out)
    assert report["pairs"] == 4 and report["tie_pairs_skipped"] == 1 and report["accuracy"]["mean"] == 1.0
    # the judge saw exactly the requests the builder wrote (both orders, system message included)
    sent = sorted(json.dumps(r["messages"]) for r in server.requests)
    assert sent == sorted(json.dumps(r["prompt"]) for r in built if r["reward_model"]["ground_truth"] != "C")


def test_pref_rl_rows_are_judged_as_built_whatever_their_template(tmp_path, judge_server, pairs_file):
    """A row's own request goes to the GenRM (not a re-rendering with the policy reward's template), and
    its label says which order it is."""
    custom = tmp_path / "custom.txt"
    custom.write_text("Task: {prompt}\nFIRST: {response_a}\nSECOND: {response_b}\nEnd. Answer [[A]] or [[B]].\n")
    reward_template = tmp_path / "reward.txt"  # a training config's reward_kwargs.template: not the GenRM's
    reward_template.write_text("Policy reward. {prompt}\nA) {response_a}\nB) {response_b}\n")
    rl = tmp_path / "rl"
    assert build(["pref-rl", "--quiet", "--input", pairs_file, "--output", str(rl), "--template", str(custom)]) == 0
    built = pq.read_table(rl / "train.parquet").to_pylist()
    assert len(built) == 8

    def custom_judge(request, index):
        shown = re.search(r"FIRST: (.*)\nSECOND: (.*)\nEnd\.", request["messages"][-1]["content"], re.S)
        return verdict("A" if quality(shown[1]) > quality(shown[2]) else "B")

    server = judge_server(script=custom_judge)
    settings = JudgeSettings(settings_for(server).judge, template=str(reward_template))
    out = tmp_path / "out"
    run_genrm_pairwise(str(rl / "train.parquet"), str(out), settings, progress=False)
    assert sorted(json.dumps(r["messages"]) for r in server.requests) == sorted(json.dumps(r["prompt"]) for r in built)
    report = report_of(out)
    assert report["requests"] == "pref-rl rows, sent as built" and report["accuracy"]["mean"] == 1.0
    assert report["orders"]["chosen_first"]["read"] == 4 and report["orders"]["chosen_second"]["read"] == 4
    assert report["position_consistency"] == {"rate": 1.0, "pairs": 4}
    # each judgment's order is its row's label: A = chosen first, B = chosen second
    labels = {(r["extra_info"]["index"], r["reward_model"]["ground_truth"]) for r in built}
    assert {
        (r["index"], "A" if r["order"] == "chosen_first" else "B") for r in read_lines(out / "judgments.jsonl")
    } == labels
    # texts in another layout cannot be read back: no length difference, said so
    assert report["length_buckets"]["unknown"] == 4
    assert all(s["n"] == 0 for s in report["length_buckets"]["accuracy"].values())
    assert "4 pairs left out: their requests are in another layout" in (out / "report.md").read_text()

    # a judge always answering [[A]] is right on the A-labelled rows only
    biased = judge_server(script=first_position_judge)
    run_genrm_pairwise(str(rl / "train.parquet"), str(tmp_path / "biased"), settings_for(biased), progress=False)
    orders = report_of(tmp_path / "biased")["orders"]
    assert orders["chosen_first"]["accuracy"] == 1.0 and orders["chosen_second"]["accuracy"] == 0.0
    # --template renders JSONL pairs only
    with pytest.raises(InputError, match=r"--template renders JSONL pairs"):
        run_genrm_pairwise(str(rl / "train.parquet"), str(tmp_path / "x"), settings_for(biased), template=str(custom),
                           progress=False)  # fmt: skip


def test_no_swap_rows_are_judged_in_their_one_order(tmp_path, judge_server, pairs_file):
    rl = tmp_path / "rl"
    assert build(["pref-rl", "--quiet", "--input", pairs_file, "--output", str(rl), "--no-swap"]) == 0
    built = pq.read_table(rl / "train.parquet").to_pylist()
    server = judge_server()
    run_genrm_pairwise(str(rl / "train.parquet"), str(tmp_path / "out"), settings_for(server), progress=False)
    assert sorted(json.dumps(r["messages"]) for r in server.requests) == sorted(json.dumps(r["prompt"]) for r in built)
    report = report_of(tmp_path / "out")
    assert report["pairs"] == 4 and report["accuracy"] == {"mean": 1.0, "low": 1.0, "high": 1.0, "n": 4}
    read = report["orders"]["chosen_first"]["read"] + report["orders"]["chosen_second"]["read"]
    assert read == 4 and report["orders"]["chosen_first"]["read"] == sum(
        r["reward_model"]["ground_truth"] == "A" for r in built
    )
    assert report["position_consistency"] == {"rate": None, "pairs": 0}  # no pair was asked in both orders


def test_jsonl_pairs_use_the_built_in_prompt_or_template_never_the_reward_template(tmp_path, judge_server, pairs_file):
    reward_template = tmp_path / "reward.txt"
    reward_template.write_text("Policy reward. {prompt}\nA) {response_a}\nB) {response_b}\n")
    server = judge_server()
    settings = JudgeSettings(settings_for(server).judge, template=str(reward_template))
    run_genrm_pairwise(pairs_file, str(tmp_path / "out"), settings, progress=False)
    assert len(server.requests) == 8 and all(pair_of(r) for r in server.requests)  # the built-in layout
    assert report_of(tmp_path / "out")["requests"] == "built-in prompt"
    assert report_of(tmp_path / "out")["accuracy"]["mean"] == 1.0

    given = judge_server(script=first_position_judge)
    run_genrm_pairwise(pairs_file, str(tmp_path / "given"), settings_for(given), template=str(reward_template),
                       progress=False)  # fmt: skip
    assert all(r["messages"][-1]["content"].startswith("Policy reward.") for r in given.requests)
    assert report_of(tmp_path / "given")["requests"] == f"template {reward_template}"


@pytest.mark.parametrize(
    "records, message",
    [
        ([PAIRS[0], {"index": 2, "prompt": "p", "rejected": "r"}], r"pairs.jsonl:2: missing chosen"),
        ([{**PAIRS[0], "rejected": PAIRS[0]["chosen"]}], r"pairs.jsonl:1: rejected is identical to chosen"),
        ([PAIRS[0], {**PAIRS[1], "index": 1}], r"pairs.jsonl:2: index 1 appears twice \(lines 1 and 2\)"),
        # an index on one line and none on another: the line number could collide with it
        (
            [{**PAIRS[0], "index": 2}, {k: v for k, v in PAIRS[1].items() if k != "index"}],
            r"pairs.jsonl:2: no index or id, but line 1 has one: give every line an index",
        ),
        ([PAIRS[0], {**PAIRS[1], "chosen": ["a", "list"]}], r"pairs.jsonl:2: chosen must be a non-empty string"),
    ],
)
def test_bad_pairs_are_rejected_by_line(tmp_path, judge_server, records, message):
    server = judge_server()
    with pytest.raises(InputError, match=message):
        run_genrm_pairwise(write_jsonl(tmp_path / "pairs.jsonl", records), str(tmp_path / "out"),
                           settings_for(server), progress=False)  # fmt: skip
    assert server.requests == [] and not (tmp_path / "out" / "report.json").exists()


def test_bad_pref_rl_rows_are_rejected_by_row(tmp_path, judge_server, pairs_file):
    assert build(["pref-rl", "--quiet", "--input", pairs_file, "--output", str(tmp_path / "rl")]) == 0
    rows = pq.read_table(tmp_path / "rl" / "train.parquet").to_pylist()
    server = judge_server()
    cases = [
        (3, {"reward_model": {"style": "rule", "ground_truth": "D"}}, r"row 3: reward_model.ground_truth must be"),
        (2, {"prompt": [{"role": "system", "content": "s"}]}, r"row 2: prompt: no user message"),
        (5, {"extra_info": {**rows[4]["extra_info"], "output_format": "scores"}}, r"row 5: extra_info.output_format"),
        (3, {"prompt": rows[4]["prompt"]}, r"row 4: extra_info.index 1 holds another pair"),  # row 3 came first
        # one order twice: row 4 labelled as row 3 is
        (4, {"reward_model": rows[2]["reward_model"]}, r"row 4: extra_info.index 1 already has a row with the "),
    ]
    rejected_rows(tmp_path, rows, cases, run_genrm_pairwise, settings_for(server))
    assert server.requests == []


def rejected_rows(tmp_path, rows, cases, run, settings) -> None:
    """Each case, (row number, fields replaced, message), is an InputError matching the message."""
    import pyarrow as pa

    for number, change, message in cases:
        broken = [dict(row, **change) if i == number - 1 else row for i, row in enumerate(rows)]
        pq.write_table(pa.Table.from_pylist(broken), tmp_path / "bad.parquet")
        with pytest.raises(InputError, match=message):
            run(str(tmp_path / "bad.parquet"), str(tmp_path / "out"), settings, progress=False)


# ---------------------------------------------------------------- genrm-ranking

MT_KEY = ("--mt-key", "candidates")
# The default judge scores a candidate 5 + ('good' - 'bad' count): A 7, B 6, C 5 here.
GROUPS = [
    {"index": "g1", "prompt": "Describe the sea.", "candidates": ["good good sea", "good sea", "plain sea"],
     "scores": [9, 5, 7]},  # gold A > C > B: B-C misordered; tau (2 - 1) / 3; score term: only A-C's gap right
    {"index": "g2", "prompt": "Describe a hill.", "candidates": ["good hill", "bad hill"], "scores": [8, 2]},
    {"index": "g3", "prompt": "Describe a cloud.", "candidates": ["good cloud", "plain cloud"], "scores": [5, 5]},
]  # fmt: skip
EXPECTED = [  # per group: pairwise-order term, score term, Kendall tau (None: undefined)
    (2 / 3, 1 / 3, 1 / 3),
    (1.0, 0.0, 1.0),  # gold gap 6, predicted 2: past the margin table
    (0.0, 0.6, None),  # a gold tie put in order; the gap error of 1 (6 vs 5) earns 0.6
]


def check_ranking_report(out):
    records = read_lines(out / "judgments.jsonl")  # in input order
    assert len(records) == 3
    for record, (accuracy, score_term, tau) in zip(records, EXPECTED):
        assert record["pairwise_accuracy"] == pytest.approx(accuracy)
        assert record["score_term"] == pytest.approx(score_term)
        assert record["kendall_tau"] == (None if tau is None else pytest.approx(tau))
    report = report_of(out)
    assert report["pairwise_accuracy"]["mean"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert report["score_term"]["mean"] == pytest.approx((1 / 3 + 0 + 0.6) / 3)
    assert report["kendall_tau"]["mean"] == pytest.approx((1 / 3 + 1) / 2) and report["kendall_tau"]["n"] == 2
    assert report["tau_undefined"] == 1 and report["exact_ranking"]["mean"] == pytest.approx(1 / 3)
    assert report["by_group_size"]["3"]["mean"] == pytest.approx(2 / 3) and report["by_group_size"]["2"]["n"] == 2
    return report


def test_ranking_accuracy_and_tau_of_a_known_ranking(tmp_path, judge_server):
    server = judge_server()
    out = tmp_path / "out"
    lines = run_genrm_ranking(write_jsonl(tmp_path / "groups.jsonl", GROUPS), str(out), settings_for(server),
                              progress=False)  # fmt: skip
    assert len(server.requests) == 3
    report = check_ranking_report(out)
    assert report["groups_read"] == 3 and report["failures"]["unreadable"] == 0
    assert report["options"] == {"prompt_type": "per row", "variant": "default", "require_headers": True,
                                 "margin_rewards": [1.0, 0.6, 0.2]}  # fmt: skip
    assert lines[0].startswith("pairwise-order accuracy 0.556 [")
    # the same terms as the RLVR reward, on the same replies
    by_index = {r["index"]: r for r in read_lines(out / "judgments.jsonl")}
    for request in server.requests:
        user = request["messages"][-1]["content"]
        group = next(g for g in GROUPS if g["prompt"] in user)
        record = by_index[group["index"]]
        reward = compute_score("gqm", gqm_reply(user), json.dumps(dict(zip("ABC", group["scores"]))))
        assert (reward["ranking_reward"], reward["score_reward"]) == pytest.approx(
            (record["pairwise_accuracy"], record["score_term"])
        )
    assert "| pairwise-order accuracy (the reward's ranking term) | 3 | 3 | 0.556 [" in (out / "report.md").read_text()


def test_reads_the_gqm_rl_parquet_of_our_builder_and_sends_its_rows_as_built(tmp_path, judge_server):
    source = write_jsonl(tmp_path / "groups.jsonl", [{k: v for k, v in g.items() if k != "index"} for g in GROUPS])
    assert build(["gqm-rl", "--quiet", "--input", source, "--output", str(tmp_path / "rl"), *MT_KEY]) == 0
    rows = pq.read_table(tmp_path / "rl" / "train.parquet").to_pylist()
    built = sorted(json.dumps(r["prompt"]) for r in rows)
    server = judge_server()
    out = tmp_path / "out"
    run_genrm_ranking(str(tmp_path / "rl" / "train.parquet"), str(out), settings_for(server), progress=False)
    assert sorted(json.dumps(r["messages"]) for r in server.requests) == built
    check_ranking_report(out)
    assert [r["source"] for r in read_lines(out / "judgments.jsonl")] == [0, 1, 2]  # extra_info.index
    # a JSONL group renders the very request the builder wrote
    jsonl = judge_server()
    run_genrm_ranking(source, str(tmp_path / "jsonl"), settings_for(jsonl), progress=False)
    assert sorted(json.dumps(r["messages"]) for r in jsonl.requests) == built


def test_augmented_rows_are_clustered_by_source_group(tmp_path, judge_server):
    """Rows sharing extra_info.index are one source: averaged first, each source weighing the same, and
    the intervals resample sources."""
    source = write_jsonl(tmp_path / "groups.jsonl", [{k: v for k, v in g.items() if k != "index"} for g in GROUPS])
    rl = tmp_path / "rl"
    assert build(["gqm-rl", "--quiet", "--input", source, "--output", str(rl), *MT_KEY, "--subgroup-augment", "3"]) == 0
    rows = pq.read_table(rl / "train.parquet").to_pylist()
    assert [r["extra_info"]["index"] for r in rows] == [0, 0, 0, 0, 1, 2]  # g1 and its 3 subgroups, g2, g3
    server = judge_server()
    out = tmp_path / "out"
    lines = run_genrm_ranking(str(rl / "train.parquet"), str(out), settings_for(server), progress=False)
    records = read_lines(out / "judgments.jsonl")
    # g1 2/3; its subgroups A-B right, B-C wrong (gold C > B), A-C right; g2 1; g3 0
    assert [r["pairwise_accuracy"] for r in records] == pytest.approx([2 / 3, 1, 0, 1, 1, 0])
    report = report_of(out)
    assert report["groups"] == 6 and report["sources"] == 3
    per_source = [(2 / 3 + 1 + 0 + 1) / 4, 1.0, 0.0]
    assert report["pairwise_accuracy"]["mean"] == pytest.approx(sum(per_source) / 3)  # not the row mean 11/18
    assert report["pairwise_accuracy"] == pytest.approx({**stats.mean_with_ci(per_source), "n": 6, "sources": 3})
    for metric in ("score_term", "reward", "exact_ranking"):
        by_source: dict = {}
        for r in records:
            value = {"score_term": r["score_term"], "reward": r["pairwise_accuracy"] + r["score_term"],
                     "exact_ranking": float(r["predicted"] == r["gold"])}[metric]  # fmt: skip
            by_source.setdefault(r["source"], []).append(value)
        means = [sum(v) / len(v) for v in by_source.values()]
        assert report[metric] == pytest.approx({**stats.mean_with_ci(means), "n": 6, "sources": 3}), metric
    # tau: defined for g1, its subgroups and g2; g3 is a gold tie
    taus = [r["kendall_tau"] for r in records]
    tau_g1 = (taus[0] + taus[1] + taus[2] + taus[3]) / 4
    assert report["kendall_tau"] == pytest.approx({**stats.mean_with_ci([tau_g1, taus[4]]), "n": 5, "sources": 2})
    # the breakdown by augmentation stays, clustered within each kind: one source's subgroups give no spread
    subgroup = report["by_augmentation"]["subgroup"]
    assert subgroup == pytest.approx({"mean": 2 / 3, "low": 2 / 3, "high": 2 / 3, "n": 3, "sources": 1})
    assert report["by_augmentation"]["original"]["mean"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert report["by_group_size"]["2"] == pytest.approx(
        {**stats.mean_with_ci([2 / 3, 1.0, 0.0]), "n": 5, "sources": 3}
    )  # g1's subgroups averaged into one value
    assert "(3 of 3 sources, each weighing the same)" in lines[0]
    assert "| pairwise-order accuracy (the reward's ranking term) | 6 | 3 | 0.556 [" in (out / "report.md").read_text()


def test_unreadable_answers_and_failed_calls_are_counted_then_retried(tmp_path, judge_server):
    def script(request, index):
        user = request["messages"][-1]["content"]
        if "sea" in user:
            return Reply(content="A is best, then B.")  # no final block
        if "hill" in user:
            return Reply(status=503, body=b"overloaded")
        return default_script(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    groups = write_jsonl(tmp_path / "groups.jsonl", GROUPS)
    run_genrm_ranking(groups, str(out), settings_for(server), progress=False)
    report = report_of(out)
    assert report["groups_read"] == 1
    assert report["pairwise_accuracy"] == {"mean": 0.0, "low": 0.0, "high": 0.0, "n": 1, "sources": 1}
    assert report["failures"] == {
        "judge_error": 1,
        "unreadable": 1,
        "judge_error_rate": 1 / 3,
        "unreadable_rate": 1 / 3,
    }
    records = read_lines(out / "judgments.jsonl")
    assert "expected a header line" in records[0]["unreadable"] and records[1]["error"] == "http"

    # only the failed call is made again: the unreadable reply is an answer, cached
    resumes(lambda: run_genrm_ranking(groups, str(out), settings_for(server), progress=False), out, server, 1)
    assert report_of(out)["groups_read"] == 2 and report_of(out)["failures"]["unreadable"] == 1


def test_reading_options_follow_the_reward(tmp_path, judge_server):
    def without_headers(request, index):
        reply = gqm_reply(request["messages"][-1]["content"])
        return Reply(content=reply.replace("### Final Ranking:\n", "").replace("### Scores:\n", ""))

    server = judge_server(script=without_headers)
    groups = write_jsonl(tmp_path / "groups.jsonl", GROUPS)
    run_genrm_ranking(groups, str(tmp_path / "strict"), settings_for(server), progress=False)
    assert report_of(tmp_path / "strict")["failures"]["unreadable"] == 3  # headers required, as in training
    options = RankingOptions(require_headers=False)
    run_genrm_ranking(groups, str(tmp_path / "lenient"), settings_for(server), options, progress=False)
    check_ranking_report(tmp_path / "lenient")

    def ranking_only(request, index):  # the ranking block alone: what a ranking prompt asks for
        return Reply(content=gqm_reply(request["messages"][-1]["content"]).split("\n### Scores:")[0])

    server = judge_server(script=ranking_only)
    run_genrm_ranking(groups, str(tmp_path / "ranking"), settings_for(server), RankingOptions(prompt_type="ranking"),
                      progress=False)  # fmt: skip
    report = report_of(tmp_path / "ranking")
    assert report["failures"]["unreadable"] == 0 and report["score_term"]["n"] == 0
    assert report["pairwise_accuracy"]["mean"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert all("### Scores:" not in r["messages"][-1]["content"] for r in server.requests)


@pytest.mark.parametrize(
    "records, message",
    [
        ([GROUPS[0], {**GROUPS[1], "scores": [8, 2, 5]}], r"groups.jsonl:2: scores: has 3 scores for 2 candidates"),
        ([{k: v for k, v in GROUPS[0].items() if k != "candidates"}], r"groups.jsonl:1: candidates: expected a list"),
        ([{k: v for k, v in GROUPS[0].items() if k != "prompt"}], r"groups.jsonl:1: source: expected a source text"),
        ([GROUPS[0], {**GROUPS[1], "scores": [8, 11]}], r"groups.jsonl:2: scores: score 1 must be an integer"),
        ([GROUPS[0], {**GROUPS[1], "index": "g1"}], r"groups.jsonl:2: index 'g1' appears twice \(lines 1 and 2\)"),
        (
            [{k: v for k, v in GROUPS[0].items() if k != "index"}, {**GROUPS[1], "id": 1}],
            r"groups.jsonl:1: no index or id, but line 2 has one",
        ),
    ],
)
def test_bad_groups_are_rejected_by_line(tmp_path, judge_server, records, message):
    server = judge_server()
    with pytest.raises(InputError, match=message):
        run_genrm_ranking(write_jsonl(tmp_path / "groups.jsonl", records), str(tmp_path / "out"),
                          settings_for(server), progress=False)  # fmt: skip
    assert server.requests == []


def test_bad_gqm_rl_rows_are_rejected_by_row(tmp_path, judge_server):
    source = write_jsonl(tmp_path / "groups.jsonl", [{k: v for k, v in g.items() if k != "index"} for g in GROUPS])
    assert build(["gqm-rl", "--quiet", "--input", source, "--output", str(tmp_path / "rl"), *MT_KEY]) == 0
    rows = pq.read_table(tmp_path / "rl" / "train.parquet").to_pylist()
    server = judge_server()
    cases = [
        (2, {"reward_model": {"style": "rule", "ground_truth": '{"A": 1}'}}, r"row 2: reward_model.ground_truth: "),
        (
            3,
            {"reward_model": {"style": "rule", "ground_truth": '{"A": 1, "B": 2, "C": 3}'}},
            r"row 3: .*group_size is 2",
        ),
        (1, {"prompt": []}, r"row 1: prompt: no user message"),
    ]
    rejected_rows(tmp_path, rows, cases, run_genrm_ranking, settings_for(server))
    assert server.requests == []


# ---------------------------------------------------------------- the CLIs


def test_the_clis_run_both_kinds_end_to_end(tmp_path, judge_server, pairs_file, capsys):
    server = judge_server()
    judge = ["--judge-url", server.base_url, "--judge-model", "genrm", "--quiet"]
    out = tmp_path / "pairwise"
    assert (
        cli(["eval", "genrm-pairwise", "--data", pairs_file, "--out", str(out), "--length-edges", "10,400", *judge])
        == 0
    )
    printed = capsys.readouterr().out
    assert "accuracy 1.000 [1.000, 1.000] over 4 pairs" in printed and "wrote " in printed
    assert ("plots skipped" in printed) != (out / "length_buckets.png").exists()
    assert report_of(out)["length_buckets"]["edges"] == [10, 400]

    groups = write_jsonl(tmp_path / "groups.jsonl", GROUPS)
    out = tmp_path / "ranking"
    assert cli(["eval", "genrm-ranking", "--data", groups, "--out", str(out), "--margin-rewards", "1,0.5", *judge]) == 0
    printed = capsys.readouterr().out
    assert (
        "pairwise-order accuracy 0.556 [" in printed
        and ("plots skipped" in printed) != (out / "kendall_tau.png").exists()
    )
    assert report_of(out)["score_term"]["mean"] == pytest.approx((1 / 3 + 0 + 0.5) / 3)  # g3's gap error 1 pays 0.5

    bad = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "p", "chosen": "c"}])
    assert cli(["eval", "genrm-pairwise", "--data", bad, "--out", str(tmp_path / "x"), *judge]) == 2
    assert "bad.jsonl:1: missing rejected" in capsys.readouterr().err
    assert cli(["eval", "genrm-ranking", "--data", str(tmp_path / "nope.jsonl"), "--out", str(out), *judge]) == 2
    with pytest.raises(SystemExit):
        cli(["eval", "genrm-pairwise", "--data", pairs_file, "--out", str(out), "--length-edges", "500,100", *judge])
