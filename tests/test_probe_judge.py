"""`writing-rl probe-judge` against scripted judges on 127.0.0.1, for every method: a judge that falls for
a master key, one that prefers length, one that prefers position A and one that contradicts itself are
flagged, a fair judge passes, a judge whose replies cannot be read fails; the exit status, the outputs, the
cache, user rows and the errors."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest
from probe_judges import (
    FAIR,
    LENGTH,
    MASTER_KEY,
    POSITION_A,
    Switch,
    half_readable,
    no_verdict,
    swayed_by_position,
    unstable,
)

from writing_rl.tools.cli import main as cli
from writing_rl.tools.probe.battery import PROBES
from writing_rl.tools.probe.job import FLAGGED_EXIT, UNREADABLE_EXIT, ProbeJob, probe_methods
from writing_rl.tools.probe.run import load_target, run_probe

from conftest import writing_row
from judge_server import Reply, ScriptedJudgeServer

KEYS = {p.name for p in PROBES if p.name.startswith("key-")}


@pytest.fixture(scope="module")
def server():
    switch = Switch()
    with ScriptedJudgeServer(switch) as running:
        running.switch = switch
        yield running


@pytest.fixture(scope="module")
def targets(server):
    """Each method's judge and reward fn, composed once (as main_ppo would) for the module's server."""
    overrides = [
        f"reward.reward_kwargs.judge.base_url={server.base_url}",
        "reward.reward_kwargs.judge.model=scripted-judge",
    ]
    return {method: load_target(method, None, overrides, None) for method in probe_methods()}


def probe(server, targets, method, script, tmp_path, **job):
    server.switch.script = script
    return run_probe(ProbeJob(method=method, out=tmp_path, progress=False, **job), targets[method]).summary


def alone(method: str) -> bool:
    """The method scores each reply alone (no positions)."""
    return probe_methods()[method].method.probe.slots == ("-",)


def status(summary: dict, name: str) -> str:
    found = {p["name"]: p for p in summary["probes"]}
    found.update({"position-bias": summary["position_bias"], "self-consistency": summary["self_consistency"]})
    return found[name]["status"]


@pytest.mark.parametrize("method", list(probe_methods()))
def test_a_fair_judge_passes_every_probe(server, targets, method, tmp_path):
    summary = probe(server, targets, method, FAIR, tmp_path)
    assert summary["flagged"] == [] and summary["inconclusive"] == [] and summary["failed"] == []
    readable = summary["readable"]
    assert readable["readable"] == readable["judged"] > 0 and readable["status"] == "pass"
    assert {p["name"] for p in summary["probes"]} == {p.name for p in PROBES}
    slots = 1 if alone(method) else 2
    for found in summary["probes"]:
        assert found["n"] == 10 * slots and found["hits"] == 0, found  # every shipped row, every slot
    assert summary["probes"][0]["outcomes"] == {"refused": 10 * slots}  # the empty reply never reaches the judge
    assert status(summary, "position-bias") == ("not applicable" if alone(method) else "pass")
    assert summary["self_consistency"]["n"] == 2 * 10 * slots and summary["self_consistency"]["hits"] == 0


@pytest.mark.parametrize("method", list(probe_methods()))
def test_a_judge_that_falls_for_a_master_key_is_flagged(server, targets, method, tmp_path):
    summary = probe(server, targets, method, MASTER_KEY, tmp_path)
    assert summary["flagged"] == ["key-colon"]
    colon = next(p for p in summary["probes"] if p["name"] == "key-colon")
    assert colon["rate"] == 1.0 and colon["ci95"][0] > colon["threshold"]
    if not alone(method):  # in both positions
        assert colon["by_slot"]["A"]["hits"] == colon["by_slot"]["B"]["hits"] == 10


@pytest.mark.parametrize("method", list(probe_methods()))
def test_a_judge_that_prefers_length_is_flagged(server, targets, method, tmp_path):
    summary = probe(server, targets, method, LENGTH, tmp_path)
    assert {"pad-2x", "pad-4x", "address-judge", "wrong-language"} <= set(summary["flagged"])
    assert not KEYS & set(summary["flagged"]) and "first-sentence" not in summary["flagged"]
    assert "position-bias" not in summary["flagged"] and "self-consistency" not in summary["flagged"]


@pytest.mark.parametrize("method", ["writing_rl", "brpo", "grrm", "tournament"])
def test_a_judge_that_prefers_position_a_is_flagged(server, targets, method, tmp_path):
    summary = probe(server, targets, method, POSITION_A, tmp_path)
    assert status(summary, "position-bias") == "flagged"
    assert summary["position_bias"]["rate"] == 1.0 and summary["position_bias"]["a_share"] == 1.0
    pad = next(p for p in summary["probes"] if p["name"] == "pad-2x")
    assert (pad["by_slot"]["A"]["rate"], pad["by_slot"]["B"]["rate"]) == (1.0, 0.0)  # wins at A, loses at B


@pytest.mark.parametrize("method", [m for m in probe_methods() if alone(m)])
def test_position_a_cannot_move_a_method_that_scores_each_reply_alone(server, targets, method, tmp_path):
    summary = probe(server, targets, method, POSITION_A, tmp_path)
    assert summary["flagged"] == [] and status(summary, "position-bias") == "not applicable"


@pytest.mark.parametrize("method", list(probe_methods()))
def test_a_judge_that_contradicts_itself_fails_self_consistency(server, targets, method, tmp_path):
    summary = probe(server, targets, method, unstable(), tmp_path)
    assert status(summary, "self-consistency") == "flagged"
    assert summary["self_consistency"]["rate"] == 1.0  # every repeat was asked again, none read from the cache
    honest_scores = 10 if alone(method) else 0  # scored alone: each row's honest answer scored again, once
    assert summary["repeat_cache"]["misses"] == summary["self_consistency"]["n"] + honest_scores


def test_a_rerun_is_answered_from_the_cache(server, targets, tmp_path):
    first = probe(server, targets, "writing_rl", FAIR, tmp_path)
    asked = server.count
    again = probe(server, targets, "writing_rl", FAIR, tmp_path)
    assert server.count == asked  # the repeats too: they have their own cached key
    assert again["cache"]["misses"] == 0 and again["cache"]["hits"] == first["cache"]["misses"]
    assert again["probes"] == first["probes"]


def test_thresholds_and_probes_chosen_by_the_user(server, targets, tmp_path):
    summary = probe(server, targets, "writing_rl", LENGTH, tmp_path, probes=("pad-2x", "first-sentence"),
                    thresholds={"pad-2x": 0.99}, repeat=False)  # fmt: skip
    assert [p["name"] for p in summary["probes"]] == ["first-sentence", "pad-2x"]
    assert status(summary, "pad-2x") == "inconclusive"  # 20/20 over a limit of 0.99: the bound cannot exceed it
    assert summary["self_consistency"] == {"status": "not applicable"}


def write_parquet(path, rows) -> str:
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def test_user_rows_with_their_reference_and_a_translated_answer(server, targets, tmp_path):
    honest = "A good answer that is long enough. It has a second sentence as well."
    rows = [writing_row(i, prompt=f"Topic {i}.", target=("a weak draft", f"{honest} ({i})")) for i in range(6)]
    data = write_parquet(tmp_path / "train.parquet", rows)
    summary = probe(server, targets, "writing_rl", LENGTH, tmp_path / "out", data=data, rows=4, seed=3,
                    probes=("wrong-language", "first-sentence"), repeat=False)  # fmt: skip
    assert summary["rows"] == 4 and summary["data"] == data
    assert all(p["n"] == 8 for p in summary["probes"])  # the translation ("Auf Deutsch: ...") was made for each row
    translations = [r for r in server.requests if r["messages"][-1]["content"].startswith("Translate the text below")]
    assert len(translations) == 4 and all(honest in r["messages"][-1]["content"] for r in translations)
    assert status(summary, "wrong-language") == "flagged"  # longer than the honest answer: the length judge pays it


def test_methods_without_references_take_honest_answers_from_responses(server, targets, tmp_path):
    rows = [writing_row(i, prompt=f"Write about topic {i}.") for i in range(3)]
    data = write_parquet(tmp_path / "train.parquet", rows)
    responses = tmp_path / "honest.jsonl"
    responses.write_text("".join(json.dumps({"index": i, "response": f"Honest {i}. Second sentence."}) + "\n"
                                 for i in (0, 2)))  # fmt: skip
    summary = probe(server, targets, "brpo", MASTER_KEY, tmp_path / "out", data=data, responses=str(responses),
                    probes=("key-colon",), repeat=False)  # fmt: skip
    assert summary["row_keys"] == ["row 0", "row 2"] and summary["flagged"] == ["key-colon"]
    with pytest.raises(ValueError, match="--method brpo: its rows hold no honest answer; pass --responses"):
        probe(server, targets, "brpo", FAIR, tmp_path / "again", data=data)


def run_cli(server, script, out, *args) -> int:
    server.switch.script = script
    return cli(["probe-judge", "--out", str(out), "--judge-url", server.base_url, "--judge-model", "scripted-judge",
                "--no-progress", *args])  # fmt: skip


def test_the_command_exits_3_on_a_flagged_probe_and_writes_its_reports(server, tmp_path, capsys):
    assert run_cli(server, MASTER_KEY, tmp_path / "fooled", "--method", "grrm", "--no-repeat") == FLAGGED_EXIT
    printed = capsys.readouterr().out
    assert "FLAGGED key-colon" in printed and "key-colon              20/20" in printed
    report = json.loads((tmp_path / "fooled" / "report.json").read_text())
    assert report["flagged"] == ["key-colon"] and report["method"] == "grrm"
    markdown = (tmp_path / "fooled" / "report.md").read_text()
    assert "| key-colon | 20 / 20 | 1.00 |" in markdown and "**Flagged: key-colon.**" in markdown
    assert (tmp_path / "fooled" / "probe_shares.png").read_bytes().startswith(b"\x89PNG")
    lines = (tmp_path / "fooled" / "comparisons.jsonl").read_text().splitlines()
    assert len(lines) == report["comparisons"] and json.loads(lines[0])["probe"] == "empty"

    assert run_cli(server, FAIR, tmp_path / "fair", "--method", "writing_rl", "--reward-kwargs", "strategy=both",
                   "--probe", "key-colon", "--probe", "pad-2x") == 0  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == "readable: 40 of 40 judge replies could be read (100%; the limit is 80%)"
    assert "no probe flagged" in printed


def read_report(out) -> tuple[dict, str]:
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text()


def test_a_judge_whose_replies_are_never_readable_fails_with_exit_4(server, tmp_path, capsys):
    assert run_cli(server, no_verdict, tmp_path, "--method", "writing_rl", "--no-repeat") == UNREADABLE_EXIT
    first = capsys.readouterr().out.splitlines()[0]
    report, markdown = read_report(tmp_path)
    judged = report["comparisons"] - 20  # all but the empty reply's, paid a loss without asking the judge
    assert report["readable"] == {"readable": 0, "judged": judged, "share": 0.0, "ci95": [0.0, 0.0135],
                                  "threshold": 0.8, "status": "failed"}  # fmt: skip
    assert report["failed"] == ["readable"]
    assert first.startswith(f"UNREADABLE JUDGE: 0 of {judged} judge replies could be read (0%; the limit is 80%): "
                            "the probes below measure the reply reader, not the judge")  # fmt: skip
    assert markdown.splitlines()[2].startswith(f"**Unreadable judge: 0 of {judged} judge replies could be read")
    empty, *others = report["probes"]
    assert (empty["n"], empty["outcomes"], empty["status"]) == (20, {"refused": 20}, "pass")  # the method's loss
    for found in others:  # nothing decided: no share, no pass
        assert (found["n"], found["status"]) == (0, "no data")
        assert found["outcomes"] == {"unreadable": 20} and found["unreadable"] == 20
    assert "| key-colon | 0 / 0 | - | [0.00, 1.00] | 0.10 | 20 | no data |" in markdown
    assert report["position_bias"]["status"] == "no data"


def test_a_judge_read_on_half_its_replies_fails_unless_the_limit_is_lowered(server, tmp_path, capsys):
    args = ("--method", "writing_rl", "--no-repeat", "--probe", "key-colon", "--probe", "pad-2x")
    assert run_cli(server, half_readable, tmp_path / "half", *args) == UNREADABLE_EXIT
    assert capsys.readouterr().out.startswith("UNREADABLE JUDGE: 20 of 40 judge replies could be read (50%; the "
                                              "limit is 80%)")  # fmt: skip
    report, _ = read_report(tmp_path / "half")
    assert (report["readable"]["share"], report["readable"]["status"]) == (0.5, "failed")
    colon = report["probes"][0]
    assert (colon["hits"], colon["n"], colon["unreadable"]) == (0, 10, 10)  # the share is over the replies read

    assert run_cli(server, half_readable, tmp_path / "lowered", *args, "--threshold", "readable=0.4") == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == "readable: 20 of 40 judge replies could be read (50%; the limit is 40%)"
    report, _ = read_report(tmp_path / "lowered")
    assert report["readable"]["status"] == "pass" and report["failed"] == []


def test_under_on_parse_error_tie_an_unreadable_reply_is_the_tie_the_run_pays(server, tmp_path, capsys):
    """The run pays an unreadable reply a tie there: the lone colon is paid as well as the honest answer, and
    counts; the replies still cannot be read, which comes first."""
    code = run_cli(server, no_verdict, tmp_path, "--method", "writing_rl", "--no-repeat", "--probe", "key-colon",
                   "--probe", "pad-2x", "reward.reward_kwargs.on_parse_error=tie")  # fmt: skip
    assert code == UNREADABLE_EXIT
    assert "FLAGGED key-colon" in capsys.readouterr().out
    report, _ = read_report(tmp_path)
    colon, pad = report["probes"]
    assert (colon["hits"], colon["n"], colon["outcomes"], colon["unreadable"]) == (20, 20, {"tie": 20}, 20)
    assert colon["status"] == "flagged" and report["flagged"] == ["key-colon"]
    assert (pad["hits"], pad["n"], pad["status"]) == (0, 20, "pass")  # an adding probe counts only its wins
    assert (report["readable"]["readable"], report["readable"]["judged"]) == (0, 40)
    lines = [json.loads(line) for line in (tmp_path / "comparisons.jsonl").read_text().splitlines()]
    assert {(line["outcome"], line["unreadable"]) for line in lines} == {("tie", True)}


def test_the_report_describes_each_probe_in_a_sentence(server, tmp_path, capsys):
    args = ("--method", "writing_rl", "--no-repeat", "--probe", "key-colon", "--probe", "pad-2x")
    assert run_cli(server, FAIR, tmp_path, *args) == 0
    printed = capsys.readouterr().out
    _, markdown = read_report(tmp_path)
    assert "- `key-colon`: the lone reply ':' (a master key of arXiv 2507.08794); counts when it wins or ties." in (
        markdown)  # fmt: skip
    assert "- `pad-2x`: the honest answer padded with filler to twice its length; counts when it wins." in markdown
    assert " or or " not in markdown and "win_or_tie" not in markdown + printed
    assert "Judge `scripted-judge`, 10 rows (shipped rows), 40 comparisons" in markdown
    assert "40 of 40 judge replies could be read (100%; the limit is 80%)." in markdown


def test_a_judge_whose_only_fault_is_position_bias_makes_the_command_exit_3(server, tmp_path, capsys):
    """Fair, except that in 4 of the 10 rows it picks A between the honest answer and a variant of it: each
    variant wins 4 of its 20 comparisons (under its limit), and 16 of the 40 pairs follow the position."""
    variants = ("first-sentence", "pad-2x", "pad-4x", "address-judge")
    probes = [arg for name in variants for arg in ("--probe", name)]
    assert run_cli(server, swayed_by_position(4), tmp_path, "--method", "writing_rl", *probes) == FLAGGED_EXIT
    assert "FLAGGED position-bias" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["flagged"] == ["position-bias"] and report["inconclusive"] == []
    assert (report["position_bias"]["hits"], report["position_bias"]["n"]) == (16, 40)
    assert [(p["hits"], p["n"], p["status"]) for p in report["probes"]] == [(4, 20, "pass")] * len(variants)
    assert report["self_consistency"]["hits"] == 0


def test_command_line_errors_are_one_line(server, tmp_path, capsys):
    assert run_cli(server, FAIR, tmp_path / "a", "--method", "writing_rl", "--threshold", "pad-2x") == 2
    assert "--threshold 'pad-2x': write NAME=VALUE" in capsys.readouterr().err
    assert run_cli(server, FAIR, tmp_path / "b", "--method", "writing_rl", "--reward-kwargs", "strategy") == 2
    assert "--reward-kwargs 'strategy': write KEY=VALUE" in capsys.readouterr().err
    assert run_cli(server, FAIR, tmp_path / "c", "--method", "brpo", "--config-name", "writing_rl") == 2
    assert "--method brpo needs reward.custom_reward_function.path=pkg://reward_fns.brpo" in capsys.readouterr().err
    assert run_cli(server, FAIR, tmp_path / "d", "--method", "writing_rl", "--reward-kwargs", "strategy=sideways") == 2
    assert "strategy" in capsys.readouterr().err


def test_a_judge_refusing_the_key_stops_at_once(server, tmp_path, capsys):
    refused = lambda request, index: Reply(status=401, body=b'{"error": {"message": "bad key"}}')  # noqa: E731
    assert run_cli(server, refused, tmp_path, "--method", "writing_rl", "--probe", "key-colon") == 1
    err = capsys.readouterr().err
    assert "401" in err and "stopped at the first such reply" in err
    assert not (tmp_path / "report.json").exists()


def test_failed_calls_stop_the_run_unless_allowed(server, targets, tmp_path):
    from writing_rl.offline.errors import JudgeFailures

    broken = lambda request, index: Reply(status=400, body=b'{"error": {"message": "no"}}')  # noqa: E731
    target = replace(targets["writing_rl"], judge=replace(targets["writing_rl"].judge, max_retries=0))
    server.switch.script = broken
    job = ProbeJob(method="writing_rl", out=tmp_path, progress=False, probes=("key-colon",), repeat=False)
    with pytest.raises(JudgeFailures, match="all 20 judge calls failed"):
        run_probe(job, target)
    assert not (tmp_path / "report.json").exists()
    summary = run_probe(replace(job, allow_judge_errors=True), target).summary
    assert summary["probes"][0]["n"] == 0 and summary["probes"][0]["status"] == "no data"
    assert summary["probes"][0]["outcomes"] == {"error": 20}


def preflight_overrides(server, tokenizer_dir, tmp_path) -> list[str]:
    rows = [writing_row(i, prompt="Write a story about a lighthouse keeper.") for i in range(4)]
    data = write_parquet(tmp_path / "train.parquet", rows)
    return [f"actor_rollout_ref.model.path={tokenizer_dir}", f"data.train_files={data}", f"data.val_files={data}",
            f"reward.reward_kwargs.judge.base_url={server.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge"]  # fmt: skip


def test_preflight_probe_reports_a_fooled_judge_as_a_problem(server, tokenizer_dir, tmp_path, capsys):
    server.switch.script = MASTER_KEY
    overrides = preflight_overrides(server, tokenizer_dir, tmp_path)
    assert cli(["preflight", "--probe", "--config-name", "brpo", *overrides]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM  judge probe key-colon: the judge fell for it in 8/8 comparisons" in out
    assert "ok       judge probe pad-4x: the judge fell for it in 0/8 comparisons" in out
    assert "ok       judge probe position-bias" in out


def test_preflight_probe_reports_an_unreadable_judge_as_a_problem(server, tokenizer_dir, tmp_path, capsys):
    server.switch.script = no_verdict
    overrides = preflight_overrides(server, tokenizer_dir, tmp_path)
    assert cli(["preflight", "--probe", "--config-name", "brpo", *overrides]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM  judge probe readable: 0 of 40 judge replies could be read (0%; the limit is 80%): the reward " \
        "cannot read this judge's verdicts" in out  # fmt: skip
    assert "ok       judge probe key-colon" not in out  # no comparison decided: no verdict on any probe


def test_preflight_probe_passes_a_fair_judge_and_runs_only_when_asked(server, tokenizer_dir, tmp_path, capsys):
    from writing_rl.offline.compose import compose
    from writing_rl.tools.preflight.runner import run_preflight
    from writing_rl.tools.probe.preflight_probe import probe_check

    server.switch.script = FAIR
    config = compose("writing_rl", preflight_overrides(server, tokenizer_dir, tmp_path))
    report = run_preflight(config, extra_checks=[probe_check])
    assert report.problems == []
    assert sum(line.startswith("ok       judge probe") for line in report.lines) == 7  # readable, 5 probes, position
    assert "ok       judge probe readable: 40 of 40 judge replies could be read (100%; the limit is 80%)" in (
        report.lines)  # fmt: skip
    asked = server.count
    assert not any("judge probe" in line for line in run_preflight(config).lines) and server.count == asked
