"""The `writing-rl` CLI: one clear line per error (no traceback unless --debug), --version, option
help with defaults, and `score` keeping and resuming what it scored before a failure."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

import pytest

from data_prep.build_parquet import main as build_parquet
from writing_rl.cli import HelpFormatter, _parsers, build_parser
from writing_rl.cli import main as cli
from writing_rl.score import PROGRESS

from conftest import PER_SAMPLE, REPO_DIR
from judge_server import Reply, default_script

ROLLOUTS = REPO_DIR / "examples/rollouts.jsonl"


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


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err) and err[-1].startswith("writing-rl "), err
    assert all(line.startswith("\rscored ") or line.startswith("scored ") for line in err[:-1]), err
    return err[-1]  # the progress line, then one line for the error


def test_a_hydra_typo_names_the_nearest_key(capsys):
    assert cli(["check-config", "reward.reward_kwargs.judge.max_concurency=4"]) == 2
    assert error_line(capsys) == (
        "writing-rl check-config: error: unknown config key 'reward.reward_kwargs.judge.max_concurency': "
        "did you mean 'reward.reward_kwargs.judge.max_concurrency'?"
    )
    assert cli(["check-config", "data.no_such_thing=1"]) == 2
    assert "unknown config key 'data.no_such_thing' (to add a new key write +data.no_such_thing=...)" in error_line(
        capsys
    )
    assert cli(["check-config", "--config-name", "writing-rl"]) == 2
    assert "no overlay 'writing-rl'" in error_line(capsys)


def test_a_missing_file_is_one_line(tmp_path, tokenizer_dir, capsys):
    args = score_args(tmp_path / "nope.parquet", tmp_path / "out", tokenizer_dir, "http://127.0.0.1:9/v1")
    assert cli(args) == 2
    assert error_line(capsys) == f"writing-rl score: error: no such file or directory: {tmp_path / 'nope.parquet'}"


@pytest.mark.parametrize(
    "status, message, hint",
    [
        (401, "Incorrect API key provided", "set the variable named by --api-key-env"),
        (404, "The model `scripted` does not exist", "check --judge-url"),
    ],
)
def test_a_judge_4xx_names_status_message_and_fix(
    tmp_path, sample_data, tokenizer_dir, judge_server, capsys, status, message, hint
):
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    server = judge_server(script=lambda request, i: Reply(status=status, body=body))
    assert cli(score_args(sample_data, tmp_path / "out", tokenizer_dir, server.base_url)) == 1
    line = error_line(capsys)
    assert line.startswith(f"writing-rl score: error: judge {server.base_url} answered HTTP {status}: {message} (")
    assert hint in line and "0 of 12 samples were scored and kept" in line


def test_debug_shows_the_traceback(tmp_path, tokenizer_dir):
    args = score_args(tmp_path / "nope.parquet", tmp_path / "out", tokenizer_dir, "http://127.0.0.1:9/v1")
    with pytest.raises(FileNotFoundError):
        cli(["--debug", *args])
    with pytest.raises(FileNotFoundError):
        cli([*args, "--debug"])


def test_no_traceback_from_the_console_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "writing_rl.cli", "check-config", "data.max_prompt_lenght=10"],
        capture_output=True, text=True, cwd=REPO_DIR,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "did you mean 'data.max_prompt_length'?" in result.stderr


def test_version_and_every_option_shows_its_default(capsys):
    with pytest.raises(SystemExit):
        cli(["--version"])
    assert capsys.readouterr().out.startswith("writing-rl 0.")
    parser = build_parser()
    for sub in [parser, *_parsers(parser)]:
        formatter = HelpFormatter(sub.prog)
        for action in sub._actions:
            if not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue
            assert action.help, (sub.prog, action.option_strings)
            if action.nargs != 0 and not action.required:  # flags have no default worth naming
                assert "default" in formatter._get_help_string(action).lower(), (sub.prog, action.option_strings)
        if sub is not parser and sub._subparsers is None:
            assert "example" in (sub.epilog or ""), sub.prog


def test_score_keeps_what_it_scored_and_resumes(tmp_path, sample_data, tokenizer_dir, judge_server, capsys):
    def dies_after_six(request, i):
        return default_script(request, i) if i < 6 else Reply(status=500, body=b"engine dead")

    broken = judge_server(script=dies_after_six)
    out = tmp_path / "out"
    args = score_args(sample_data, out, tokenizer_dir, broken.base_url, "reward.reward_kwargs.judge.max_retries=0")
    assert cli(args) == 1
    line = error_line(capsys)
    kept = int(re.search(r"(\d+) of 12 samples were scored and kept", line).group(1))
    assert "HTTP 500" in line and "the same command resumes" in line
    assert 0 < kept < 12  # the chunks finished before the judge died
    assert not (out / "scores.jsonl").exists()
    done = {json.loads(line)["sample"] for line in (out / PROGRESS).read_text().splitlines()[1:]}
    assert len(done) == kept

    healthy = judge_server()  # another endpoint: where the judge runs may change between attempts
    assert cli(score_args(sample_data, out, tokenizer_dir, healthy.base_url)) == 0
    records = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert len(records) == 12 and not (out / PROGRESS).exists()
    # Only the samples the first run did not finish were judged again.
    assert len(healthy.requests) == sum(r["judge_calls"] for i, r in enumerate(records) if i not in done) > 0


def test_a_partial_score_of_other_settings_is_not_mixed_in(tmp_path, sample_data, tokenizer_dir, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / PROGRESS).write_text(json.dumps({"fingerprint": "from-another-run"}) + "\n")
    assert cli(score_args(sample_data, out, tokenizer_dir, "http://127.0.0.1:9/v1")) == 2
    assert "holds a partial score of other data, responses or settings" in error_line(capsys)
