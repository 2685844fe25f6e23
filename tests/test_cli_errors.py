"""The `writing-rl` CLI: one clear line per error (no traceback unless --debug), --version, option
help with defaults, and `score` keeping and resuming what it scored before a failure."""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys

import pytest

from data_prep.build_parquet import main as build_parquet
from writing_rl.help_format import HelpFormatter
from writing_rl.settings import ConfigError
from writing_rl.tools.cli import _parsers, build_parser
from writing_rl.tools.cli import main as cli
from writing_rl.tools.score import PROGRESS, ProgressFile

from conftest import PER_SAMPLE, REPO_DIR
from judge_server import Reply, default_script

ROLLOUTS = REPO_DIR / "examples/rollouts.jsonl"
SAMPLES = 16  # lines of examples/rollouts.jsonl


@pytest.fixture(scope="module")
def sample_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    args = ["writing-rl", "--quiet", "--input", str(REPO_DIR / "examples/writing_prompts.jsonl"), "--output", str(out)]
    assert build_parquet(args) == 0
    return out / "train.parquet"


def score_args(data, out, tokenizer_dir, url, *extra):
    # The per-sample pairwise reward: no Ray, one judge call per response.
    return ["score", "--data", str(data), "--responses", str(ROLLOUTS), "--out", str(out), "--tokenizer",
            str(tokenizer_dir), "--judge-url", url, "--judge-model", "scripted", "--batch-size", "4",
            *PER_SAMPLE, *extra]  # fmt: skip


def select_args(data, out, url, *extra):
    return ["select", "--data", str(data), "--responses", str(ROLLOUTS), "--out", str(out), "--top-k", "2",
            "--judge-url", url, "--judge-model", "scripted", "--max-retries", "0", "--quiet", *extra]  # fmt: skip


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err) and err[-1].startswith("writing-rl "), err
    assert all(re.match(r"\r?(scored|judged) \d+/\d+", line) for line in err[:-1]), err
    return err[-1]  # the progress line, then one line for the error


def openai_error(status: int, message: str) -> Reply:
    return Reply(
        status=status, body=json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    )


def kept_samples(out) -> set[int]:
    return {json.loads(line)["sample"] for line in (out / PROGRESS).read_text().splitlines()[1:]}


@pytest.mark.parametrize(
    "override, line",
    [
        (
            "reward.reward_kwargs.judge.max_concurency=4",
            "unknown config key 'reward.reward_kwargs.judge.max_concurency': "
            "did you mean 'reward.reward_kwargs.judge.max_concurrency'?",
        ),
        (  # the first unknown part is the one corrected
            "reward.rward_kwargs.judge.max_concurrency=4",
            "unknown config key 'reward.rward_kwargs.judge.max_concurrency': "
            "did you mean 'reward.reward_kwargs.judge.max_concurrency'?",
        ),
        (
            "data.no_such_thing=1",
            "unknown config key 'data.no_such_thing' (to add a new key write +data.no_such_thing=...)",
        ),
        (
            "+data.max_prompt_length=10",
            "'data.max_prompt_length' already exists: set it with data.max_prompt_length=... "
            "('+' adds a new key; '++' adds or sets)",
        ),
        (
            "~data.max_prompt_lenght",
            "cannot delete unknown config key 'data.max_prompt_lenght': did you mean 'data.max_prompt_length'?",
        ),
        (  # misspelt at any level, without the '+' Hydra asks for
            "trainer.totl_epochs=3",
            "unknown config key 'trainer.totl_epochs': did you mean 'trainer.total_epochs'?",
        ),
        (
            "reward.custom_reward_function.reward_kwargs.stratgy=both",
            "unknown config key 'reward.custom_reward_function.reward_kwargs.stratgy': "
            "did you mean 'reward.custom_reward_function.reward_kwargs.strategy'?",
        ),
        (
            "+node=one_gpo",
            "config group 'node' has no option 'one_gpo': did you mean +node=one_gpu? (there: eight_gpus, one_gpu)",
        ),
        ("node=one_gpu", "config group 'node' is not selected in writing_rl: add it with +node=one_gpu"),
        (  # one we do not recognise: Hydra's own first line
            "+genrm=colocated +genrm=standalone",
            "bad override: Multiple values for genrm. To override a value use 'override genrm: standalone'",
        ),
        ("data.max_prompt_length=[1", "bad override 'data.max_prompt_length=[1': no viable alternative at input '[1'"),
        ("data.max_prompt_length", "bad override 'data.max_prompt_length': write key=value (or ~key to delete a key)"),
    ],
)
def test_a_hydra_mistake_is_one_line_naming_the_fix(capsys, override, line):
    assert cli(["check-config", *override.split(" ")]) == 2
    assert error_line(capsys) == f"writing-rl check-config: error: {line}"


def test_every_override_hydra_refuses_is_named_at_once(capsys):
    overrides = ["trainer.totl_epochs=3", "data.max_prompt_length=64", "actor_rollout_ref.rollout.nn=4"]
    assert cli(["check-config", *overrides]) == 2
    assert error_line(capsys) == (
        "writing-rl check-config: error: unknown config key 'trainer.totl_epochs': did you mean 'trainer.total_epochs'?; "
        "unknown config key 'actor_rollout_ref.rollout.nn': did you mean 'actor_rollout_ref.rollout.n'?"
    )


def test_a_mistyped_overlay_name_gets_the_nearest(capsys):
    assert cli(["check-config", "--config-name", "writing-rl"]) == 2
    assert "no overlay 'writing-rl' in " in (line := error_line(capsys)) and "did you mean 'writing_rl'?" in line


def test_score_reports_config_mistakes_before_it_starts(tmp_path, sample_data, tokenizer_dir, capsys):
    out = tmp_path / "out"
    args = score_args(sample_data, out, tokenizer_dir, "http://127.0.0.1:9/v1")
    assert cli([*args, "data.max_prompt_lenght=10"]) == 2
    assert error_line(capsys) == (
        "writing-rl score: error: unknown config key 'data.max_prompt_lenght': did you mean 'data.max_prompt_length'?"
    )
    # A key added with '+' passes Hydra; our own validation names it and the keys it could have meant.
    assert cli([*args, "+reward.reward_kwargs.judge.max_concurency=4"]) == 2
    line = error_line(capsys)
    assert (
        "unknown key(s) under reward.reward_kwargs.judge: max_concurency; did you mean reward.reward_kwargs.judge.max_concurrency? (known: "
        in line
    )
    assert "max_concurrency" in line
    assert cli([*args, "reward.reward_kwargs.judge.api_key_env=WRITING_RL_TEST_UNSET_KEY"]) == 2
    assert "names $WRITING_RL_TEST_UNSET_KEY, but that environment variable is not set" in error_line(capsys)
    assert not out.exists()  # nothing started, nothing to resume


@pytest.mark.parametrize(
    "command, option",
    [
        ("score", "--data"),
        ("score", "--responses"),
        ("score", "--tokenizer"),
        ("score", "--config-dir"),
        ("select", "--data"),
        ("order-references", "--input"),
        ("check-config", "--config-dir"),
        ("curriculum", "--state-dir"),
    ],
)
def test_a_missing_path_names_its_option(tmp_path, sample_data, tokenizer_dir, capsys, command, option):
    missing = str(tmp_path / "nope")
    if option == "--tokenizer":
        missing = "./no-such-tokenizer-dir"  # written as a path: not taken for a hub id
    args = {
        "score": score_args(sample_data, tmp_path / "out", tokenizer_dir, "http://127.0.0.1:9/v1"),
        "select": select_args(sample_data, tmp_path / "out", "http://127.0.0.1:9/v1"),
        "order-references": ["order-references", "--input", "x.jsonl", "--output", str(tmp_path / "out")],
        "check-config": ["check-config"],
        "curriculum": ["curriculum", "show", "--state-dir", "x"],
    }[command]
    if option in args:
        args[args.index(option) + 1] = missing
    else:
        args += [option, missing]
    assert cli(args) == 2
    assert error_line(capsys) == f"writing-rl {command}: error: {option}: no such file or directory: {missing}"
    assert not (tmp_path / "out").exists()


def test_wrong_kinds_of_path_are_one_line(tmp_path, sample_data, tokenizer_dir, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert cli(score_args(sample_data, a_file, tokenizer_dir, "http://127.0.0.1:9/v1")) == 2
    assert error_line(capsys) == f"writing-rl score: error: --out: {a_file} is a file, expected a directory to write to"
    args = score_args(sample_data, tmp_path / "out", tokenizer_dir, "http://127.0.0.1:9/v1")
    args[args.index("--responses") + 1] = str(sample_data)  # a parquet is not JSONL
    assert cli(args) == 2
    assert error_line(capsys).startswith(f"writing-rl score: error: {sample_data}: not a UTF-8 JSONL file (")


@pytest.mark.parametrize(
    "status, message, hint",
    [
        (401, "Incorrect API key provided", "set the variable judge.api_key_env names"),
        (404, "The model `scripted` does not exist", "check --judge-url"),
        (400, "Unsupported parameter: top_k", "check judge.model, judge.max_tokens"),
    ],
)
def test_a_judge_4xx_names_status_message_and_fix(
    tmp_path, sample_data, tokenizer_dir, judge_server, capsys, status, message, hint
):
    server = judge_server(script=lambda request, i: openai_error(status, message))
    out = tmp_path / "out"
    assert cli(score_args(sample_data, out, tokenizer_dir, server.base_url)) == 1
    line = error_line(capsys)
    assert line.startswith(f"writing-rl score: error: judge {server.base_url} answered HTTP {status}: {message} (")
    assert hint in line and line.endswith(")")  # nothing was scored: nothing kept, no resume to speak of
    assert not (out / PROGRESS).exists()


def test_a_judge_context_length_error_names_the_lengths_and_the_fix(
    tmp_path, sample_data, tokenizer_dir, judge_server, capsys
):
    said = "This model's maximum context length is 512 tokens. However, you requested 900 tokens (700 in the messages, 200 in the completion)."
    server = judge_server(script=lambda request, i: openai_error(400, said))
    assert cli(score_args(sample_data, tmp_path / "out", tokenizer_dir, server.base_url)) == 1
    line = error_line(capsys)
    assert line.startswith(
        f"writing-rl score: error: judge {server.base_url} answered HTTP 400: context length exceeded"
    )
    assert "judge context 512 tokens, requested 900 tokens = 700 prompt + 200 completion" in line
    assert "judge.max_tokens" in line and "max_model_len" in line


@pytest.mark.parametrize(
    "body, said",
    [
        (json.dumps({"error": {"message": "x" * 5000}}), "x" * 250),  # cut short, read all the same
        (json.dumps({"object": "error", "message": "context too long", "code": 400}), "context too long"),  # older vLLM
        (json.dumps({"detail": "Not Found"}), "Not Found"),  # FastAPI: a URL without /v1
        ("<html>\n<h1>502 Bad Gateway</h1>\n</html>", "<html> <h1>502 Bad Gateway</h1> </html>"),
    ],
)
def test_the_judge_message_is_read_from_any_body_onto_one_line(
    tmp_path, sample_data, tokenizer_dir, judge_server, capsys, body, said
):
    server = judge_server(script=lambda request, i: Reply(status=404, body=body.encode()))
    assert cli(score_args(sample_data, tmp_path / "out", tokenizer_dir, server.base_url)) == 1
    line = error_line(capsys)
    assert line.startswith(f"writing-rl score: error: judge {server.base_url} answered HTTP 404: {said}")
    assert "{" not in line and len(line) < 600 and line.endswith("and --judge-model)")


def test_an_unreachable_judge_is_one_line(tmp_path, sample_data, tokenizer_dir, capsys):
    with socket.socket() as reserved:  # bound, never listening: connections to it are refused
        reserved.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{reserved.getsockname()[1]}/v1"
        args = score_args(sample_data, tmp_path / "out", tokenizer_dir, url, "reward.reward_kwargs.judge.max_retries=0")
        assert cli(args) == 1
    line = error_line(capsys)
    assert line.startswith(f"writing-rl score: error: judge at {url} failed after 1 attempt(s): ")
    assert line.endswith("(is the judge up at that address? check --judge-url / judge.base_url)")


def test_select_stops_at_the_first_reply_every_call_would_get(tmp_path, sample_data, judge_server, capsys):
    server = judge_server(script=lambda request, i: openai_error(401, "Incorrect API key provided"))
    out = tmp_path / "out"
    assert cli(select_args(sample_data, out, server.base_url, "--max-concurrency", "2")) == 1
    assert error_line(capsys) == (
        f"writing-rl select: error: judge {server.base_url} answered HTTP 401: Incorrect API key provided (the "
        "judge refused the API key: set the variable judge.api_key_env names (--api-key-env where a command has "
        "it)); stopped at the first such reply"
    )
    assert len(server.requests) <= 2  # the calls already in flight, not one per job
    assert not (out / "selected.parquet").exists()


def test_eval_stops_at_a_refused_key_with_one_line_not_a_crash(tmp_path, judge_server, capsys):
    server = judge_server(script=lambda request, i: openai_error(401, "Incorrect API key provided"))
    data = tmp_path / "rb.jsonl"
    data.write_text(json.dumps({"subset": "mt-bench-easy", "prompt": "Hi", "chosen": "a", "rejected": "b"}) + "\n")
    args = ["eval", "rewardbench", "--data", str(data), "--version", "1", "--out", str(tmp_path / "out"), "--quiet"]
    assert cli([*args, "--judge-url", server.base_url, "--judge-model", "m"]) == 1
    line = error_line(capsys)
    assert line.startswith(f"writing-rl eval: error: judge {server.base_url} answered HTTP 401: Incorrect API key")
    assert "JudgeFailures" not in line and "--debug" not in line


def test_select_quotes_the_first_failure(tmp_path, sample_data, judge_server, capsys):
    server = judge_server(script=lambda request, i: openai_error(400, "prompt too long"))
    assert cli(select_args(sample_data, tmp_path / "out", server.base_url)) == 1
    line = error_line(capsys)
    assert re.match(
        r"writing-rl select: error: all \d+ judge calls failed after retries \(http \d+\); nothing written", line
    )
    assert f"The first failure: judge {server.base_url} answered HTTP 400: prompt too long (" in line


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(ConfigError, match="did you mean 'data.max_prompt_length'"):
        cli(["--debug", "check-config", "data.max_prompt_lenght=10"])
    with pytest.raises(ConfigError, match="did you mean 'data.max_prompt_length'"):
        cli(["check-config", "data.max_prompt_lenght=10", "--debug"])  # after the command too


def test_an_unexpected_error_is_one_line_with_its_type(tmp_path, sample_data, tokenizer_dir, monkeypatch, capsys):
    def crash(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("writing_rl.tools.score.run_score", crash)
    args = score_args(sample_data, tmp_path / "out", tokenizer_dir, "http://127.0.0.1:9/v1")
    assert cli(args) == 1
    assert (
        error_line(capsys)
        == "writing-rl score: error: RuntimeError: disk on fire (rerun with --debug for the traceback)"
    )
    with pytest.raises(RuntimeError, match="disk on fire"):
        cli([*args, "--debug"])


def test_no_traceback_from_the_console_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "writing_rl.tools.cli", "check-config", "data.max_prompt_lenght=10"],
        capture_output=True, text=True, cwd=REPO_DIR,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "writing-rl check-config: error: unknown config key 'data.max_prompt_lenght': "
        "did you mean 'data.max_prompt_length'?"
    ]


def test_version(capsys):
    from writing_rl.tools.cli import _version

    with pytest.raises(SystemExit) as exit_:
        cli(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"writing-rl {_version()}\n"
    assert re.fullmatch(r"\d+\.\d+\S*", _version())


def test_every_option_shows_its_default_and_every_command_an_example():
    parser = build_parser()
    commands = list(_parsers(parser))
    assert {sub.prog.split()[-1] for sub in commands} >= {
        "score", "preflight", "check-config", "serve-judge", "select", "order-references", "curriculum", "show",
    }  # fmt: skip
    for sub in [parser, *commands]:
        formatter = HelpFormatter(sub.prog)
        for action in sub._actions:
            if not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue
            assert action.help, (sub.prog, action.option_strings)
            if action.nargs != 0 and not action.required:  # flags have no default worth naming
                assert "default" in formatter._get_help_string(action).lower(), (sub.prog, action.option_strings)
        assert "example" in sub.format_help(), sub.prog


def test_score_keeps_what_it_scored_and_resumes(tmp_path, sample_data, tokenizer_dir, judge_server, capsys):
    def dies_after_six(request, i):
        return default_script(request, i) if i < 6 else Reply(status=500, body=b"engine dead")

    broken = judge_server(script=dies_after_six)
    out = tmp_path / "out"
    args = score_args(sample_data, out, tokenizer_dir, broken.base_url, "reward.reward_kwargs.judge.max_retries=0")
    assert cli(args) == 1
    line = error_line(capsys)
    kept = int(re.search(rf"(\d+) of {SAMPLES} samples were scored and kept in ", line).group(1))
    assert "answered HTTP 500: engine dead (the judge failed: check its logs, or retry later)" in line
    assert line.endswith(f": the same command resumes and judges only the other {SAMPLES - kept}")
    assert 0 < kept < SAMPLES  # the chunks finished before the judge died
    assert not (out / "scores.jsonl").exists()
    done = kept_samples(out)
    assert len(done) == kept

    healthy = judge_server()  # another endpoint: where the judge runs may change between attempts
    assert cli(score_args(sample_data, out, tokenizer_dir, healthy.base_url)) == 0
    records = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert len(records) == SAMPLES and not (out / PROGRESS).exists()
    # Only the samples the first run did not finish were judged again.
    assert len(healthy.requests) == sum(r["judge_calls"] for i, r in enumerate(records) if i not in done) > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == SAMPLES and summary["resumed_samples"] == kept


def test_ctrl_c_keeps_what_was_scored(tmp_path, sample_data, tokenizer_dir, judge_server, capsys, monkeypatch):
    def add_then_interrupt(self, outputs):
        add(self, outputs)
        raise KeyboardInterrupt

    add = ProgressFile.add
    monkeypatch.setattr(ProgressFile, "add", add_then_interrupt)
    out = tmp_path / "out"
    assert cli(score_args(sample_data, out, tokenizer_dir, judge_server().base_url)) == 130
    line = error_line(capsys)
    assert line.startswith(f"writing-rl score: error: interrupted. 4 of {SAMPLES} samples were scored and kept in ")
    assert kept_samples(out) == {0, 1, 2, 3}


def test_progress_of_other_inputs_is_refused_unless_restarted(
    tmp_path, sample_data, tokenizer_dir, judge_server, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    other_run = [{"fingerprint": "from-another-run"}, {"sample": 0, "output": {"reward_score": 1.0}}]
    (out / PROGRESS).write_text("".join(json.dumps(line) + "\n" for line in other_run))
    server = judge_server()
    args = score_args(sample_data, out, tokenizer_dir, server.base_url)
    assert cli(args) == 2
    assert error_line(capsys) == (
        f"writing-rl score: error: {out} holds 1 samples scored from other data, responses or settings: "
        "pass --restart to discard them, or use another --out"
    )
    assert not server.requests
    assert cli([*args, "--restart"]) == 0
    records = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert (
        len(records) == SAMPLES
        and records[0]["key"] == "id=0"
        and "resumed_samples" not in json.loads((out / "summary.json").read_text())
    )


def test_progress_that_kept_nothing_is_no_obstacle(tmp_path, sample_data, tokenizer_dir, judge_server):
    out = tmp_path / "out"
    out.mkdir()
    (out / PROGRESS).write_text(json.dumps({"fingerprint": "from-another-run"}) + "\n")
    assert cli(score_args(sample_data, out, tokenizer_dir, judge_server().base_url)) == 0
    assert (out / "scores.jsonl").exists() and not (out / PROGRESS).exists()


@pytest.mark.parametrize(
    "override, expected",
    [
        ("reward.reward_kwargs.judge.max_concurrency=abc", "judge.max_concurrency must be of type int (like 64), got 'abc'"),
        ("reward.reward_kwargs.log_summary=maybe", "log_summary must be of type bool (like True), got 'maybe'"),
        ("+reward.reward_kwargs.judge.max_concurency=4", "max_concurency; did you mean reward.reward_kwargs.judge.max_concurrency?"),
    ],
)  # fmt: skip
def test_our_settings_of_the_wrong_type_or_name_are_one_line(capsys, override, expected):
    judge = ["reward.reward_kwargs.judge.base_url=http://127.0.0.1:9/v1", "reward.reward_kwargs.judge.model=m"]
    assert cli(["check-config", *judge, override]) == 2
    assert expected in error_line(capsys)
