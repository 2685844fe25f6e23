"""`writing-rl eval winrate` against a scripted pairwise judge on 127.0.0.1: both orders per prompt, the
report's exact numbers on a designed case, the length-controlled rate, resume without repeated calls, bad
input by line, failures counted and never scored, verl dumps and Writing-RL parquets as inputs, the CLI."""

from __future__ import annotations

import json

import pytest

from writing_rl.evaluation import stats
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.winrate import run_winrate
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings
from writing_rl.settings import ConfigError
from writing_rl.tools.cli import main as cli

from conftest import writing_row
from judge_server import Reply
from offline_helpers import first_position_judge, pair_of, table_judge, verdict, write_jsonl

PROMPTS = [
    {"index": k, "prompt": f"Write piece {k}.", "reference": ["an easy reference", f"best{k}"],
     "data_source": "poem" if k <= 2 else "essay"}
    for k in range(1, 6)
]  # fmt: skip
POLICY = [{"index": k, "response": f"pol{k}"} for k in range(1, 6)]
BASELINE = [{"index": k, "response": f"base{k}"} for k in range(1, 6)]
# (Response A, Response B) -> verdict. 1: the policy wins both orders; 2: loses both; 3: tie both;
# 4: the judge prefers whatever comes first (a flip); 5: a win policy-first, a tie policy-second.
BEATS = {
    ("pol1", "base1"): "A", ("base1", "pol1"): "B",
    ("pol2", "base2"): "B", ("base2", "pol2"): "A",
    ("pol3", "base3"): "C", ("base3", "pol3"): "C",
    ("pol4", "base4"): "A", ("base4", "pol4"): "A",
    ("pol5", "base5"): "A", ("base5", "pol5"): "C",
}  # fmt: skip


def settings_for(server) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="judge", backoff_base_s=0.01, max_retries=0))


@pytest.fixture
def files(tmp_path):
    return (
        write_jsonl(tmp_path / "prompts.jsonl", PROMPTS),
        write_jsonl(tmp_path / "policy.jsonl", POLICY),
        write_jsonl(tmp_path / "baseline.jsonl", BASELINE),
    )


def run(files, out, server, **options):
    prompts, policy, baseline = files
    options = {"baseline": baseline, **options} if not options.get("against_reference") else options
    return run_winrate(prompts, policy, str(out), settings_for(server), progress=False, **options)


def read_json(path):
    return json.loads(path.read_text())


def read_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_wins_ties_losses_and_inconsistent_orders_on_a_designed_case(tmp_path, judge_server, files):
    server = judge_server(script=table_judge(BEATS))
    lines = run(files, tmp_path / "out", server)
    assert len(server.requests) == 10  # both orders of every prompt
    assert {pair_of(r) for r in server.requests} == set(BEATS)
    report = read_json(tmp_path / "out" / "report.json")
    assert report["counts"] == {"wins": 1, "ties": 3, "losses": 1}
    assert report["win_rate"]["mean"] == pytest.approx((1 + 0 + 0.5 + 0.5 + 0.5) / 5)
    assert report["win_rate"]["low"] <= 0.5 <= report["win_rate"]["high"]
    assert report["inconsistency"] == {"rate": 0.4, "prompts": 2, "flips": 1, "judged_in_both_orders": 5}
    assert report["by_order"]["policy_first"]["mean"] == pytest.approx((1 + 0 + 0.5 + 1 + 1) / 5)
    assert report["by_order"]["policy_second"]["mean"] == pytest.approx((1 + 0 + 0.5 + 0 + 0.5) / 5)
    assert report["length_controlled_win_rate"] == pytest.approx(
        0.5, abs=1e-6
    )  # one length difference for all: the raw rate
    assert {d: (s["n"], s["mean"], s["wins"], s["ties"], s["losses"]) for d, s in report["domains"].items()} == {
        "essay": (3, 0.5, 0, 3, 0),
        "poem": (2, 0.5, 1, 0, 1),
    }
    assert report["failures"] == {"judge_error": 0, "unreadable": 0, "judge_error_rate": 0.0, "unreadable_rate": 0.0,
                                  "prompts_left_out": 0}  # fmt: skip
    assert report["prompts"] == {"in_file": 5, "with_policy_response": 5, "without_baseline": 0, "scored": 5}
    assert report["length_controlled_prompts"] == 5 and report["no_answer"]["share"] == 0
    records = {r["index"]: r for r in read_lines(tmp_path / "out" / "judgments.jsonl")}
    assert [records[k]["outcome"] for k in range(1, 6)] == ["win", "loss", "tie", "tie", "tie"]
    assert records[4]["policy_first"] == "A" and records[4]["policy_second"] == "A"
    assert records[4]["outcomes"] == ["win", "loss"] and records[5]["outcomes"] == ["win", "tie"]
    assert [records[k]["consistent"] for k in range(1, 6)] == [True, True, True, False, False]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "win 1, a tie 0.5, a loss 0" in markdown and "in characters" in markdown
    assert "| essay | 3 | 0 | 3 | 0 | 0.500 [" in markdown
    assert lines[0].startswith("win rate 0.500 [") and "length-controlled 0.500" in lines[0]


def test_a_position_biased_judge_gives_only_inconsistent_ties(tmp_path, judge_server, files):
    server = judge_server(script=first_position_judge)
    run(files, tmp_path / "out", server)
    report = read_json(tmp_path / "out" / "report.json")
    assert report["counts"] == {"wins": 0, "ties": 5, "losses": 0} and report["win_rate"]["mean"] == 0.5
    assert report["inconsistency"] == {"rate": 1.0, "prompts": 5, "flips": 5, "judged_in_both_orders": 5}
    assert report["by_order"]["policy_first"]["mean"] == 1 and report["by_order"]["policy_second"]["mean"] == 0


def test_against_the_best_reference_with_the_rows_criteria(tmp_path, judge_server, files):
    prompts = [{**PROMPTS[0], "criteria": ["Vivid imagery"]}, *PROMPTS[1:]]
    files = (write_jsonl(tmp_path / "prompts.jsonl", prompts), *files[1:])

    def prefers_best(request, index):
        a, b = pair_of(request)
        assert "an easy reference" not in (a, b)
        return verdict("A" if a.startswith("best") else "B")

    server = judge_server(script=prefers_best)
    run(files, tmp_path / "out", server, against_reference=True)
    report = read_json(tmp_path / "out" / "report.json")
    assert report["counts"] == {"wins": 0, "ties": 0, "losses": 5} and report["inconsistency"]["rate"] == 0
    assert report["baseline"].startswith("references")
    assert sum("Vivid imagery" in r["messages"][-1]["content"] for r in server.requests) == 2  # both orders


def longer_wins(request, index):
    """Prefers the longer response, except when either says 'flip': then the shorter."""
    a, b = pair_of(request)
    flip = "flip" in a + b
    return verdict("C" if len(a) == len(b) else "A" if (len(a) > len(b)) != flip else "B")


def test_length_control_discounts_a_judge_that_prefers_longer_answers(tmp_path, judge_server):
    differences = [40, 30, 20, 10, -5, -10, 15, -20]  # policy minus baseline, in characters
    flipped = {7, 8}  # the judge prefers the shorter one here: the policy loses 7 and wins 8
    prompts = [{"index": k, "prompt": f"Write {k}."} for k in range(1, 9)]
    policy, baseline = [], []
    for k, d in enumerate(differences, start=1):
        tag = "flip" if k in flipped else "p"
        policy.append({"index": k, "response": tag + "x" * (60 + d - len(tag))})
        baseline.append({"index": k, "response": "b" * 60})
    files = [write_jsonl(tmp_path / f"{n}.jsonl", r) for n, r in (("p", prompts), ("r", policy), ("b", baseline))]
    server = judge_server(script=longer_wins)
    run(files, tmp_path / "out", server)
    report = read_json(tmp_path / "out" / "report.json")
    assert report["counts"] == {"wins": 5, "ties": 0, "losses": 3} and report["inconsistency"]["rate"] == 0
    assert report["mean_length"] == {"policy": 60 + sum(differences) / 8, "baseline": 60}
    raw, controlled = report["win_rate"]["mean"], report["length_controlled_win_rate"]
    assert raw == 0.625 and 0.5 < controlled < raw - 0.05  # the policy's length advantage is discounted


def test_an_interrupted_run_resumes_without_repeating_a_call_and_reports_the_same(tmp_path, judge_server, files):
    def failing(request, index):  # the endpoint fails prompts 1 and 2 with the policy second
        if pair_of(request) in {("base1", "pol1"), ("base2", "pol2")}:
            return Reply(status=503, body=b"overloaded")
        return table_judge(BEATS)(request, index)

    server = judge_server(script=failing)
    out = tmp_path / "out"
    lines = run(files, out, server)
    report = read_json(out / "report.json")
    assert report["failures"] == {"judge_error": 2, "unreadable": 0, "judge_error_rate": 0.2, "unreadable_rate": 0.0,
                                  "prompts_left_out": 2}  # fmt: skip
    assert report["counts"] == {"wins": 0, "ties": 3, "losses": 0}  # failed prompts are never scored
    assert report["inconsistency"]["judged_in_both_orders"] == 3
    records = read_lines(out / "judgments.jsonl")
    assert records[0]["status"] == "judge_error" and records[0]["outcome"] is None
    assert records[0]["policy_first"] == "A" and records[0]["policy_second"].startswith("error: ")
    assert any("retry only the failed calls" in line for line in lines)

    server.script = table_judge(BEATS)  # the endpoint recovers: only the two failed calls are made again
    before = len(server.requests)
    run(files, out, server)
    assert len(server.requests) - before == 2
    report = read_json(out / "report.json")
    assert report["counts"] == {"wins": 1, "ties": 3, "losses": 1} and report["failures"]["prompts_left_out"] == 0
    outputs = {name: (out / name).read_text() for name in ("report.json", "report.md", "judgments.jsonl")}

    before = len(server.requests)
    run(files, out, server)
    assert len(server.requests) == before  # everything answered comes from the cache
    without_judge = lambda text: {k: v for k, v in json.loads(text).items() if k != "judge"}  # noqa: E731
    assert without_judge((out / "report.json").read_text()) == without_judge(outputs["report.json"])
    assert (out / "report.md").read_text() == outputs["report.md"]
    assert (out / "judgments.jsonl").read_text() == outputs["judgments.jsonl"]


def test_failures_and_unreadable_replies_are_counted_not_scored(tmp_path, judge_server, files):
    def script(request, index):
        pair = pair_of(request)
        if pair == ("pol1", "base1"):
            return Reply(content="Both are fine, [[A]] or maybe [[B]].")  # conflicting verdicts
        if pair == ("base2", "pol2"):
            return Reply(status=500, body=b"engine dead")
        if pair == ("pol3", "base3"):
            return Reply(content="I cannot decide.")  # no verdict
        return table_judge(BEATS)(request, index)

    server = judge_server(script=script)
    run(files, tmp_path / "out", server)
    report = read_json(tmp_path / "out" / "report.json")
    assert report["failures"] == {"judge_error": 1, "unreadable": 2, "judge_error_rate": 0.1, "unreadable_rate": 0.2,
                                  "prompts_left_out": 3}  # fmt: skip
    assert report["prompts"]["scored"] == 2 and report["counts"] == {"wins": 0, "ties": 2, "losses": 0}
    assert report["win_rate"]["mean"] == 0.5  # prompts 4 and 5 only
    statuses = [r["status"] for r in read_lines(tmp_path / "out" / "judgments.jsonl")]
    assert statuses == ["unreadable", "judge_error", "unreadable", "judged", "judged"]
    assert "3 prompts with a failed or unreadable order" in (tmp_path / "out" / "report.md").read_text()


def test_a_response_without_an_answer_is_scored_without_a_judge_call(tmp_path, judge_server, files):
    policy = [{"index": 1, "response": "<think>ran out of tokens"}, *POLICY[1:]]
    baseline = [BASELINE[0], {"index": 2, "response": "<think>done</think>  "}, *BASELINE[2:]]
    files = (files[0], write_jsonl(tmp_path / "p.jsonl", policy), write_jsonl(tmp_path / "b.jsonl", baseline))
    server = judge_server(script=table_judge(BEATS))
    run(files, tmp_path / "out", server)
    assert len(server.requests) == 6  # prompts 3-5 in both orders
    report = read_json(tmp_path / "out" / "report.json")
    assert report["no_answer"] == {"policy": 1, "baseline": 1, "both": 0, "share": 0.4}
    assert report["counts"] == {"wins": 1, "ties": 3, "losses": 1}  # 1: a loss, 2: a win (no answer to beat)
    assert report["inconsistency"]["judged_in_both_orders"] == 3
    assert report["length_controlled_prompts"] == 3


def test_length_control_is_fitted_on_judged_prompts_only(tmp_path, judge_server):
    """10 judged prompts (5 wins, 5 losses, lengths 100 characters either side of the baseline's) and 5
    blank policy answers (0 characters against 2000: losses without a judge call). The raw rate counts the
    blanks as losses; the length-controlled rate leaves them out of the fit and reports their share."""
    won = [True] * 5 + [False] * 5
    differences = [100, 100, 100, -100, -100, 100, 100, -100, -100, -100]  # wins 3 longer, losses 3 shorter
    prompts = [{"index": k, "prompt": f"Write {k}."} for k in range(1, 16)]
    policy = [{"index": k, "response": ("pw" if w else "pl").ljust(300 + d, "x")}
              for k, (w, d) in enumerate(zip(won, differences), start=1)]  # fmt: skip
    policy += [{"index": k, "response": "   "} for k in range(11, 16)]  # blank: no answer
    baseline = [{"index": k, "response": "b" * (300 if k <= 10 else 2000)} for k in range(1, 16)]
    files = [write_jsonl(tmp_path / f"{n}.jsonl", r) for n, r in (("p", prompts), ("r", policy), ("b", baseline))]

    def policy_tag_decides(request, index):  # "pw...": the policy wins, "pl...": it loses, in either order
        a, b = pair_of(request)
        policy, slots = (a, "AB") if a.startswith("p") else (b, "BA")  # (policy's slot, baseline's slot)
        return verdict(slots[0] if policy.startswith("pw") else slots[1])

    server = judge_server(script=policy_tag_decides)
    lines = run(files, tmp_path / "out", server)
    assert len(server.requests) == 20  # the blanks get no judge call
    report = read_json(tmp_path / "out" / "report.json")
    assert report["counts"] == {"wins": 5, "ties": 0, "losses": 10}
    assert report["win_rate"]["mean"] == pytest.approx(5 / 15)  # raw: the blanks are losses
    assert report["no_answer"] == {"policy": 5, "baseline": 0, "both": 0, "share": pytest.approx(5 / 15)}
    assert report["length_controlled_prompts"] == 10
    # on the judged prompts, wins are 3 of 5 among the longer answers and 2 of 5 among the shorter: 0.5 at
    # equal lengths. Fitting the blanks too (-2000 characters, all losses) would give about 0.496
    assert report["length_controlled_win_rate"] == pytest.approx(0.5, abs=1e-6)
    assert stats.length_controlled_winrate([*won, *[False] * 5], [*differences, *[-2000] * 5]) < 0.4999
    assert report["mean_length"] == {"policy": 300, "baseline": 300}  # the judged prompts only
    assert "over the 10 judged prompts (no answer: 0.333 of the scored prompts" in lines[0]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "**0.500** over 10 judged prompts" in markdown and "No answer: 0.333 of the scored prompts" in markdown
    assert "not in the length-controlled win rate" in markdown


@pytest.mark.parametrize(
    "prompts, policy, baseline, message",
    [
        ([PROMPTS[0], {"prompt": "p"}], POLICY[:1], BASELINE, r"prompts.jsonl:2: missing index"),
        ([*PROMPTS[:2], PROMPTS[1]], POLICY, BASELINE, r"prompts.jsonl:3: index 2 appears twice"),
        ([{**PROMPTS[0], "reference": 5}], POLICY[:1], BASELINE[:1], r"prompts.jsonl:1: reference must be"),
        (PROMPTS, [*POLICY, {"index": 9, "response": "r"}], BASELINE, r"policy.jsonl:6: index 9 is not in the"),
        (PROMPTS, POLICY, [{"index": 1}], r"baseline.jsonl:1: missing response"),
        (PROMPTS, [*POLICY, POLICY[2]], BASELINE, r"policy.jsonl:6: a second response for index 3"),
        (PROMPTS, POLICY, [{"index": 1, "response": 3}], r"baseline.jsonl:1: the response must be a string"),
    ],
)
def test_bad_input_is_rejected_by_line(tmp_path, judge_server, prompts, policy, baseline, message):
    server = judge_server(script=table_judge(BEATS))
    files = [write_jsonl(tmp_path / f"{n}.jsonl", r) for n, r in (("prompts", prompts), ("policy", policy),
                                                                  ("baseline", baseline))]  # fmt: skip
    with pytest.raises(InputError, match=message):
        run(files, tmp_path / "out", server)
    assert server.requests == [] and not (tmp_path / "out" / "report.json").exists()


def test_exactly_one_baseline_and_a_reference_for_every_prompt(tmp_path, judge_server, files):
    server = judge_server(script=table_judge(BEATS))
    settings = settings_for(server)
    for options in ({}, {"baseline": files[2], "against_reference": True}):
        with pytest.raises(ConfigError, match="exactly one baseline"):
            run_winrate(files[0], files[1], str(tmp_path / "out"), settings, progress=False, **options)
    no_reference = write_jsonl(tmp_path / "p.jsonl", [PROMPTS[0], {"index": 2, "prompt": "No reference here."}])
    with pytest.raises(InputError, match=r"p.jsonl: no reference for index 2"):
        run((no_reference, *files[1:]), tmp_path / "out", server, against_reference=True)
    assert server.requests == []


def test_reads_a_writing_rl_parquet_and_verl_dumps(tmp_path, judge_server):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [writing_row(k, f"Write piece {k}.", target=("easy", f"best{k}")) for k in range(1, 4)]
    rows[2]["data_source"] = "other"
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test.parquet")
    dumps = tmp_path / "val"
    dumps.mkdir()
    chat = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"
    truth = lambda k: rows[k - 1]["reward_model"]["ground_truth"]  # noqa: E731
    write_jsonl(dumps / "2.jsonl", [{"input": "", "output": "bad", "gts": truth(k), "score": 0, "step": 2}
                                    for k in (1, 2, 3)])  # fmt: skip
    write_jsonl(dumps / "4.jsonl", [
        {"input": "", "output": "good one", "gts": truth(1), "score": 1, "step": 4},  # by ground_truth.id (no text)
        {"input": chat.format("Write piece 2."), "output": "bad two", "gts": None, "score": 0, "step": 4},  # by text
        {"input": chat.format("Another set."), "output": "x", "gts": None, "score": 0, "step": 4},  # skipped
    ])  # fmt: skip
    baseline = write_jsonl(tmp_path / "base.jsonl", [{"id": k, "response": "plain"} for k in (1, 2, 3)])
    server = judge_server()  # prefers the response with more 'good' than 'bad'
    out = tmp_path / "out"
    run_winrate(str(tmp_path / "test.parquet"), str(dumps), str(out), settings_for(server), baseline=baseline,
                progress=False)  # fmt: skip
    report = read_json(out / "report.json")
    assert report["counts"] == {"wins": 1, "ties": 0, "losses": 1}  # the latest step; prompt 3 has no response
    assert report["prompts"]["with_policy_response"] == 2 and list(report["domains"]) == ["writing"]
    run_winrate(str(tmp_path / "test.parquet"), str(dumps), str(tmp_path / "ref"), settings_for(server),
                against_reference=True, step=2, progress=False)  # fmt: skip
    assert read_json(tmp_path / "ref" / "report.json")["counts"] == {"wins": 0, "ties": 0, "losses": 3}
    assert all("best" in "".join(pair_of(r)) for r in server.requests[-6:])


def test_the_cli_runs_it_and_says_what_it_wrote(tmp_path, judge_server, files, capsys):
    server = judge_server(script=table_judge(BEATS))
    out = tmp_path / "out"
    code = cli(
        ["eval", "winrate", "--prompts", files[0], "--responses", files[1], "--baseline", files[2], "--out",
         str(out), "--judge-url", server.base_url, "--judge-model", "judge", "--quiet"]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0 and "win rate 0.500 [" in printed and "wins 1, ties 3, losses 1" in printed
    assert ("plots skipped: matplotlib is not installed" in printed) != (out / "winrate.png").exists()
    with pytest.raises(SystemExit) as exit_:  # both baselines: argparse refuses
        cli(["eval", "winrate", "--prompts", files[0], "--responses", files[1], "--baseline", files[2],
             "--against-reference", "--out", str(out)])  # fmt: skip
    assert exit_.value.code == 2
    assert cli(["eval", "winrate", "--prompts", files[0], "--responses", files[1], "--baseline",
                str(tmp_path / "nope.jsonl"), "--out", str(out)]) == 2  # fmt: skip
