"""writing-rl preflight: every problem a run would meet, one line each, before anything starts."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pandas as pd
import pytest

from writing_rl.offline.compose import compose
from writing_rl.tools.preflight.runner import run_preflight

from conftest import REPO_DIR, writing_row

STORY = "Write a story about a lighthouse keeper and the storm. "


def write_parquet(path, rows) -> str:
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def rows_with_prompt_words(words: list[int]) -> list[dict]:
    return [writing_row(i, prompt=" ".join(["lighthouse"] * n)) for i, n in enumerate(words)]


@pytest.fixture
def data(tmp_path):
    rows = [writing_row(i, prompt=STORY * (1 + i % 3)) for i in range(12)]
    return write_parquet(tmp_path / "train.parquet", rows), write_parquet(tmp_path / "val.parquet", rows[:4])


def preflight(model, train, val, base_url, *overrides, **options):
    config = compose(
        "writing_rl",
        [
            f"actor_rollout_ref.model.path={model}",
            f"data.train_files={train}",
            f"data.val_files={val}",
            f"reward.reward_kwargs.judge.base_url={base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            *overrides,
        ],
    )
    return run_preflight(config, **options)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_sound_setup_passes_and_reports_lengths(tokenizer_dir, data, judge_server):
    server = judge_server(models={"scripted-judge": 100_000})
    report = preflight(tokenizer_dir, *data, server.base_url)
    assert report.problems == []
    text = "\n".join(report.lines)
    assert "prompt tokens p50" in text and "every row fits" in text
    assert f"judge {server.base_url} serves 'scripted-judge', context 100000 tokens" in text
    assert "<= the judge's context 100000" in text


def test_every_problem_is_listed_at_once(tokenizer_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("WRL_TEST_KEY", raising=False)
    report = preflight(
        tmp_path / "no-model",
        tmp_path / "no-train.parquet",
        tmp_path / "no-val.parquet",
        closed_port_url(),
        "reward.reward_kwargs.judge.api_key_env=WRL_TEST_KEY",
    )
    problems = "\n".join(report.problems)
    assert len(report.problems) == 5, problems
    for name in ("MODEL_PATH", "TRAIN_FILES", "VAL_FILES"):
        assert f"({name})=" in problems and "no such file or directory" in problems
    assert "$WRL_TEST_KEY is not set" in problems
    assert "is unreachable" in problems and "JUDGE_BASE_URL" in problems


def test_the_shadow_judge_is_pinged_and_its_key_checked(tokenizer_dir, data, judge_server, monkeypatch):
    training, gold = judge_server(), judge_server(models={"gold-judge": None})
    shadow = ["reward.reward_kwargs.shadow.fraction=0.05", "reward.reward_kwargs.shadow.judge.model=gold-judge"]
    report = preflight(
        tokenizer_dir, *data, training.base_url, *shadow, f"reward.reward_kwargs.shadow.judge.base_url={gold.base_url}"
    )
    assert report.problems == []
    text = "\n".join(report.lines)
    assert f"shadow judge {gold.base_url} serves 'gold-judge'" in text and "5% of training rollouts" in text
    monkeypatch.delenv("WRL_GOLD_KEY", raising=False)
    report = preflight(
        tokenizer_dir,
        *data,
        training.base_url,
        *shadow,
        f"reward.reward_kwargs.shadow.judge.base_url={closed_port_url()}",
        "reward.reward_kwargs.shadow.judge.api_key_env=WRL_GOLD_KEY",
    )
    problems = "\n".join(report.problems)
    assert len(report.problems) == 2, problems
    assert "$WRL_GOLD_KEY is not set" in problems and "shadow.judge.api_key_env" in problems
    assert "is unreachable" in problems


def test_every_judge_of_an_ensemble_is_pinged(tokenizer_dir, data, judge_server):
    server = judge_server(models={"scripted-judge": 100_000, "second-judge": 50_000})
    members = "[{name: first}, {name: second, model: second-judge}, {name: third, model: missing-judge}]"
    report = preflight(tokenizer_dir, *data, server.base_url, f"reward.reward_kwargs.judge.ensemble.members={members}")
    text = "\n".join(report.lines)
    assert f"judge first {server.base_url} serves 'scripted-judge', context 100000 tokens" in text
    assert f"judge second {server.base_url} serves 'second-judge', context 50000 tokens" in text
    assert "<= the judge's context 50000" in text  # the smallest context bounds the judge prompt
    (problem,) = report.problems
    assert "missing-judge" in problem


def test_the_runs_judge_calls_are_counted_against_the_budget(tokenizer_dir, data, judge_server):
    server = judge_server(models={"scripted-judge": 100_000})
    run = ["data.train_batch_size=4", "actor_rollout_ref.rollout.n=2", "trainer.total_epochs=3"]
    price = [
        "reward.reward_kwargs.judge.price.prompt_per_mtok=2",
        "reward.reward_kwargs.judge.price.completion_per_mtok=8",
    ]
    report = preflight(tokenizer_dir, *data, server.base_url, *run, *price)
    assert report.problems == []
    text = "\n".join(report.lines)
    # 12 rows: 3 batches of 4 a epoch, 3 epochs; 4 prompts x 2 rollouts a step; one judged order each.
    assert "judge calls for the run: 9 training steps x 8 rollouts x 1 calls = 72" in text
    assert "judge cost for the run: at most" in text
    both = preflight(
        tokenizer_dir, *data, server.base_url, *run, "reward.custom_reward_function.reward_kwargs.strategy=both"
    )
    assert "x 2 calls = 144" in "\n".join(both.lines)
    short = preflight(tokenizer_dir, *data, server.base_url, *run, "reward.reward_kwargs.judge.budget.calls=40")
    (problem,) = short.problems
    assert "budget.calls=40 covers about 5 of the run's 9 steps (72 calls)" in problem
    ensemble = ["reward.reward_kwargs.judge.ensemble.members=[{name: a}, {name: b}, {name: c}]"]
    three = preflight(tokenizer_dir, *data, server.base_url, *run, *ensemble)
    assert "x 3 calls = 216" in "\n".join(three.lines)  # each judgment asks the ensemble's three judges


def test_hub_ids_and_paths_marked_remote_are_not_problems(tmp_path, judge_server):
    server = judge_server()
    report = preflight(
        "Qwen/Qwen3-8B", "hdfs://cluster/train.parquet", "/cluster/val.parquet", server.base_url, remote=["VAL_FILES"]
    )
    assert report.problems == []
    text = "\n".join(report.lines)
    assert "Qwen/Qwen3-8B: not a local path; taken as a hub id" in text
    assert "hdfs://cluster/train.parquet: remote, not checked here" in text
    assert "/cluster/val.parquet: remote, not checked here" in text


def test_a_model_the_judge_does_not_serve_is_named_with_what_it_serves(tokenizer_dir, data, judge_server):
    server = judge_server(models={"Qwen/Qwen3-32B": None, "other": None})
    report = preflight(tokenizer_dir, *data, server.base_url, "reward.reward_kwargs.judge.model=Qwen/Qwen3-32b")
    (problem,) = report.problems
    assert "serves Qwen/Qwen3-32B, other, not 'Qwen/Qwen3-32b'" in problem and "to 'Qwen/Qwen3-32B'" in problem


def test_a_base_url_without_the_api_root_is_explained(tokenizer_dir, data, judge_server):
    server = judge_server()
    report = preflight(tokenizer_dir, *data, server.base_url.removesuffix("/v1"))
    (problem,) = report.problems
    assert "HTTP 404" in problem and "should end with the API root" in problem


def test_overlong_prompts_are_counted_against_max_prompt_length(tokenizer_dir, tmp_path, judge_server):
    server = judge_server()
    rows = rows_with_prompt_words([5] * 18 + [400, 400])  # 2 of 20 rows are long
    train = write_parquet(tmp_path / "train.parquet", rows)
    val = write_parquet(tmp_path / "val.parquet", rows[:5])
    limit = "data.max_prompt_length=200"

    report = preflight(tokenizer_dir, train, val, server.base_url, limit)  # 10% dropped > --max-drop 5%
    (problem,) = report.problems
    assert "2 rows (10.0%) are over and dropped by data.filter_overlong_prompts" in problem
    assert "more than --max-drop 5%" in problem and "data.max_prompt_length=1024 keeps all" in problem

    report = preflight(tokenizer_dir, train, val, server.base_url, limit, max_drop=0.2)
    assert report.problems == [] and any("2 rows (10.0%) are over" in line for line in report.lines)

    report = preflight(tokenizer_dir, train, val, server.base_url, limit, "data.filter_overlong_prompts=false")
    (problem,) = report.problems
    assert "2 rows (10.0%) are over" in problem and "cuts their beginning off" in problem


def test_rows_the_reward_cannot_score_are_named_by_row(tokenizer_dir, tmp_path, judge_server):
    server = judge_server()
    rows = [writing_row(i) for i in range(4)]
    rows[1] = writing_row(1, target=())  # no reference: the pairwise reward has nothing to compare with
    rows[3]["prompt"] = []
    train = write_parquet(tmp_path / "train.parquet", rows)
    report = preflight(tokenizer_dir, train, train, server.base_url)
    problems = [p for p in report.problems if p.startswith(train)]
    assert len(problems) == 4  # rows 1 and 3, in train and in val (the same file)
    assert f"{train} row 1: " in problems[0] and "ground_truth.target must be" in problems[0]
    assert f"{train} row 3: the prompt must be a non-empty list of chat messages" in problems[1]


def test_a_parquet_without_the_columns_verl_reads(tokenizer_dir, tmp_path, judge_server):
    server = judge_server()
    train = write_parquet(tmp_path / "train.parquet", [{"question": "q", "answer": "a"}])
    report = preflight(tokenizer_dir, train, train, server.base_url)
    assert report.problems and "no column(s) prompt, reward_model, data_source" in report.problems[0]


def test_the_judge_prompt_at_max_response_length_must_fit_the_judges_context(tokenizer_dir, data, judge_server):
    server = judge_server(models={"scripted-judge": 12_000})
    report = preflight(tokenizer_dir, *data, server.base_url)  # 8192 response tokens + 4096 judge tokens
    (problem,) = report.problems
    assert "+ judge.max_tokens 4096" in problem and "> the judge's context 12000" in problem
    report = preflight(tokenizer_dir, *data, server.base_url, "data.max_response_length=2048")
    assert report.problems == []


def test_without_a_local_policy_tokenizer_the_judge_prompt_is_still_checked(data, judge_server):
    # A hub id that is neither local nor cached, as in the docs' examples (the same with --remote).
    hub_id = "writing-rl-tests/not-downloaded"
    server = judge_server(models={"scripted-judge": 8192})
    report = preflight(hub_id, *data, server.base_url)  # 8192 response tokens + 4096 judge tokens
    assert any(f"prompt lengths not measured: no tokenizer for {hub_id} on this machine" in n for n in report.lines)
    (problem,) = report.problems  # the responses alone overflow the judge: a problem however it was counted
    assert "> the judge's context 8192" in problem and "an upper bound, one token per UTF-8 byte" in problem

    # The rest of the prompt, bounded by its bytes, may overflow: a warning that says how to count exactly.
    report = preflight(
        hub_id, *data, server.base_url, "data.max_response_length=3900", "reward.reward_kwargs.judge.max_tokens=4096"
    )
    assert report.problems == []
    (note,) = [line for line in report.lines if "judge prompt at max_response_length" in line]
    assert note.startswith("note") and "counted as bytes: it may still fit" in note and "POST /tokenize" in note

    # A judge server that counts tokens (vLLM's /tokenize) settles it.
    counting = judge_server(models={"scripted-judge": 8192}, tokens_per_message=4)
    report = preflight(
        hub_id, *data, counting.base_url, "data.max_response_length=3900", "reward.reward_kwargs.judge.max_tokens=4096"
    )
    (line,) = [line for line in report.lines if "judge prompt at max_response_length" in line]
    assert line.startswith("ok") and f"(counted by the judge server, {counting.base_url[:-3]}/tokenize)" in line
    assert counting.tokenized and all(body["model"] == "scripted-judge" for body in counting.tokenized)


def test_the_group_ranking_prompt_counts_every_rollout(tokenizer_dir, tmp_path, judge_server):
    server = judge_server(models={"scripted-judge": 100_000})
    rows = [writing_row(i) for i in range(3)]
    train = write_parquet(tmp_path / "train.parquet", rows)
    config = compose(
        "grrm_mt_grpo",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"data.train_files={train}",
            f"data.val_files={train}",
            f"reward.reward_kwargs.judge.base_url={server.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
        ],
    )
    report = run_preflight(config)
    (line,) = [line for line in report.lines if "judge prompt at max_response_length" in line]
    tokens = int(line.split("up to ")[1].split(" tokens")[0])
    assert 8 * 1024 < tokens < 8 * 1024 + 2000  # 8 rollouts of max_response_length=1024, plus the prompt


# ---------------------------------------------------------------- the scripts


def scripts_copy(tmp_path):
    """A checkout of the scripts with a recording .venv/bin/python that runs the real interpreter."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO_DIR / "scripts", repo / "scripts")
    shutil.copytree(REPO_DIR / "hydra_configs", repo / "hydra_configs")
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/usr/bin/env bash\necho "$0 $*" >> "{tmp_path}/calls"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return repo


def script_env(**values):
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "DRY_RUN", "PYTHON", "N_GPUS", "GENRM")}
    env.update(values)
    return env


def test_dry_run_uses_the_quickstart_venv_and_runs_the_preflight(tmp_path, tokenizer_dir, data, judge_server):
    server = judge_server()
    repo = scripts_copy(tmp_path)
    env = script_env(
        MODEL_PATH=str(tokenizer_dir), TRAIN_FILES=data[0], VAL_FILES=data[1], JUDGE_BASE_URL=server.base_url,
        JUDGE_MODEL="scripted-judge", DRY_RUN="1",
    )  # fmt: skip
    result = subprocess.run(
        ["bash", str(repo / "scripts/train_writing_rl.sh")], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls] == [str(repo / ".venv/bin/python")] * 2
    assert "-m verl.trainer.main_ppo" in calls[0] and "-m writing_rl.tools.preflight" in calls[1]
    assert "preflight: ok" in result.stdout and "prompt tokens p50" in result.stdout

    # An explicit PYTHON wins over the .venv.
    (tmp_path / "calls").unlink()
    result = subprocess.run(
        ["bash", str(repo / "scripts/train_writing_rl.sh")], env={**env, "PYTHON": sys.executable},
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0 and not (tmp_path / "calls").exists()


def test_mistyped_overrides_are_named_and_every_other_check_still_runs(capsys, tmp_path):
    from writing_rl.tools.preflight.runner import main

    overrides = [
        f"actor_rollout_ref.model.path={tmp_path / 'no-model'}",
        f"data.train_files={tmp_path / 'no-train.parquet'}",
        f"data.val_files={tmp_path / 'no-val.parquet'}",
        f"reward.reward_kwargs.judge.base_url={closed_port_url()}",
        "reward.reward_kwargs.judge.model=scripted-judge",
        "trainer.totl_epochs=3",  # misspelt, without the '+' Hydra asks for: at any level
        "actor_rollout_ref.rollout.nn=4",
        "reward.custom_reward_function.reward_kwargs.stratgy=both",
    ]
    assert main(overrides) == 1
    out = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("[validate_config]")]
    assert out[:3] == [
        "PROBLEM  config: unknown config key 'trainer.totl_epochs': did you mean 'trainer.total_epochs'?",
        "PROBLEM  config: unknown config key 'actor_rollout_ref.rollout.nn': did you mean 'actor_rollout_ref.rollout.n'?",
        "PROBLEM  config: unknown config key 'reward.custom_reward_function.reward_kwargs.stratgy': "
        "did you mean 'reward.custom_reward_function.reward_kwargs.strategy'?",
    ]
    # The rest of the config composed without them: checked, and so are the paths and the judge.
    assert "ok       verl validate_config" in out
    for name in ("MODEL_PATH", "TRAIN_FILES", "VAL_FILES"):
        assert any(f"({name})=" in line and "no such file or directory" in line for line in out), name
    assert any(line.startswith("PROBLEM  judge http://127.0.0.1:") and "is unreachable" in line for line in out)
    assert out[-1] == "preflight: 7 problem(s); nothing was started"


def test_a_problem_in_each_config_stage_is_reported_and_the_judge_still_checked(tokenizer_dir, data, judge_server):
    server = judge_server(models={"scripted-judge": 100_000})
    report = preflight(
        tokenizer_dir, *data, server.base_url,
        "actor_rollout_ref.rollout.tensor_model_parallel_size=16",  # verl's side: no replica fits 8 GPUs
        "+reward.reward_kwargs.stratgy=both",  # ours: passes Hydra with '+', refused by our key check
    )  # fmt: skip
    problems = "\n".join(report.problems)
    assert len(report.problems) == 2, problems
    assert "a replica takes 16 GPUs" in report.problems[0]
    assert report.problems[1].startswith("config: unknown key(s) under reward.reward_kwargs: stratgy")
    text = "\n".join(report.lines)
    assert f"judge {server.base_url} serves 'scripted-judge'" in text  # the judge section alone is still read
    assert "prompt tokens p50" in text and "<= the judge's context 100000" in text


def test_the_gpu_layout_names_the_rollout_engine_configured():
    from writing_rl.tools.preflight.config_checks import check_gpu_layout

    assert check_gpu_layout(compose("writing_rl")) == ["the policy: 4 vLLM replica(s) of 2 GPU(s) on 8 GPU(s)"]
    assert check_gpu_layout(compose("writing_rl", ["+backend=cpu"])) == [
        "the policy: 1 transformers (CPU rollout) replica(s) of 1 device(s) on 1 device(s)"
    ]


def test_a_real_run_stops_before_verl_starts_when_the_preflight_fails(tmp_path, tokenizer_dir, data):
    repo = scripts_copy(tmp_path)
    env = script_env(
        MODEL_PATH=str(tokenizer_dir), TRAIN_FILES=data[0], VAL_FILES=str(tmp_path / "missing.parquet"),
        JUDGE_BASE_URL=closed_port_url(), JUDGE_MODEL="scripted-judge",
    )  # fmt: skip
    result = subprocess.run(
        ["bash", str(repo / "scripts/train_writing_rl.sh")], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "PROBLEM  data.val_files (VAL_FILES)=" in result.stdout and "is unreachable" in result.stdout
    assert "preflight: 2 problem(s); nothing was started" in result.stdout
    calls = (tmp_path / "calls").read_text()
    assert "writing_rl.tools.preflight" in calls and "verl.trainer.main_ppo" not in calls


def test_a_genrm_hosted_by_verl_is_measured_with_its_own_context_and_tokenizer(tokenizer_dir, data, tmp_path):
    genrm = tmp_path / "genrm"
    shutil.copytree(tokenizer_dir, genrm)
    (genrm / "config.json").write_text('{"model_type": "qwen2", "max_position_embeddings": 4096}')
    report = preflight(
        tokenizer_dir, *data, "http://unused:1/v1", "+genrm=colocated", f"reward.reward_model.model_path={genrm}",
        "~reward.reward_kwargs.judge.base_url",
    )  # fmt: skip
    assert any(f"the GenRM verl hosts ({genrm}), context 4096 tokens; not pinged" in line for line in report.lines)
    (problem,) = report.problems
    assert "> the judge's context 4096" in problem and "(counted with the policy tokenizer)" not in problem


def test_each_method_counts_the_judge_calls_of_a_rollout():
    from types import SimpleNamespace

    from reward_fns import brpo, group_ranking, pairwise, rubric

    assert pairwise.METHOD.calls_per_rollout(None, 4, {}) == 1  # position-disadvantage: one order
    assert pairwise.METHOD.calls_per_rollout(None, 4, {"strategy": "both"}) == 2
    # BRPO, a group of 4, one reference: 3 comparisons in both orders, shared by 4 rollouts.
    assert brpo.METHOD.calls_per_rollout(None, 4, {}) == 6 / 4
    options = {"num_references": 2, "strategy": "position-advantage", "votes": 3}
    assert brpo.METHOD.calls_per_rollout(None, 4, options) == (2 * 2 * 3) / 4
    assert group_ranking.METHOD.calls_per_rollout(None, 8, {}) == 1 / 8  # one ranking call per group
    row = SimpleNamespace(ground_truth={"prompt": "p", "rubric": [{"criterion": "a", "weight": 2}, {"criterion": "b"}]})
    assert rubric.METHOD.calls_per_rollout(row, 4, {}) == 1
    assert rubric.METHOD.calls_per_rollout(row, 4, {"per_criterion": True}) == 2
