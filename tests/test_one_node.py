"""The one-node presets (hydra_configs/node/*.yaml, docs/one-node.md): each policy overlay with each preset
passes verl's validate_config and the preflight against a judge of the context the page names, on rows at
the preset's limits (a prompt of max_prompt_length tokens, references of max_response_length); the train
scripts add the preset from NODE_PRESET; the preflight refuses a GPU layout no replica fits."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from transformers import AutoTokenizer

from data_prep.build_parquet import main as build
from writing_rl.offline.compose import compose
from writing_rl.tools.preflight.runner import run_preflight

from conftest import REPO_DIR

PAGE = REPO_DIR / "docs/one-node.md"
PRESETS = ("one_gpu", "eight_gpus")
# What the page tells translation users to add after the preset.
KEEP_OWN_LENGTHS = {"grrm_mt_grpo": ("data.max_prompt_length=512", "data.max_response_length=1024")}
BUILDERS = {"writing_rl": "writing-rl", "brpo": "prompts", "rubric": "rubric", "grrm_mt_grpo": "prompts"}


def judge_contexts() -> dict[str, int]:
    """The page's table: overlay -> the judge context it says is needed."""
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) tokens \|$", PAGE.read_text(encoding="utf-8"), re.M)
    return {overlay: int(tokens.replace(",", "")) for overlay, tokens in rows}


def test_the_page_names_a_judge_context_for_every_policy_overlay():
    assert set(judge_contexts()) == set(BUILDERS)


def text_of(tokenizer, tokens: int) -> str:
    """Prose of about ``tokens`` tokens (never more) under ``tokenizer``."""
    sentence = "The keeper climbed the stairs of the lighthouse while the storm broke over the rocks. "
    ids = tokenizer(sentence * (tokens // 8 + 1), add_special_tokens=False).input_ids[:tokens]
    return tokenizer.decode(ids).strip()


def rows_at_the_limits(overlay: str, tokenizer, prompt_tokens: int, response_tokens: int) -> list[dict]:
    prompt = text_of(tokenizer, prompt_tokens)
    if overlay == "writing_rl":
        return [{"prompt": prompt, "references": [text_of(tokenizer, response_tokens)]}] * 4
    if overlay == "rubric":
        rubric = [{"criterion": text_of(tokenizer, 40), "weight": w} for w in (2, 1, -1)]
        return [{"prompt": prompt, "rubric": rubric}] * 4
    if overlay == "grrm_mt_grpo":
        return [{"src_text": prompt, "src_lang": "de", "trg_lang": "en"}] * 4
    return [{"prompt": prompt}] * 4


def build_rows(tmp_path, overlay: str, rows: list[dict]) -> str:
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert build([BUILDERS[overlay], "--quiet", "--input", str(source), "--output", str(tmp_path / "data")]) == 0
    return str(tmp_path / "data" / "train.parquet")


def preflight(overlay: str, model: str, train: str, base_url: str, *overrides: str):
    config = compose(
        overlay,
        [
            f"actor_rollout_ref.model.path={model}",
            f"data.train_files={train}",
            f"data.val_files={train}",
            f"reward.reward_kwargs.judge.base_url={base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            *overrides,
        ],
    )
    return config, run_preflight(config)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("overlay", sorted(BUILDERS))
def test_each_overlay_with_each_preset_passes_the_preflight_at_its_limits(
    overlay, preset, tokenizer_dir, tmp_path, judge_server
):
    context = judge_contexts()[overlay]
    overrides = (f"+node={preset}", *KEEP_OWN_LENGTHS.get(overlay, ()))
    sized = compose(overlay, ["actor_rollout_ref.model.path=x", *overrides])
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    # The chat template and the builder's wording take some of the prompt's budget.
    prompt_tokens = int(sized.data.max_prompt_length) - 120
    train = build_rows(
        tmp_path, overlay, rows_at_the_limits(overlay, tokenizer, prompt_tokens, int(sized.data.max_response_length))
    )
    server = judge_server(models={"scripted-judge": context})

    config, report = preflight(overlay, tokenizer_dir, train, server.base_url, *overrides)
    assert report.problems == [], "\n".join(report.lines)
    text = "\n".join(report.lines)
    assert f"<= the judge's context {context}" in text  # the judge prompt was measured, not skipped
    assert "every row fits" in text
    assert "the policy: " in text and "vLLM replica(s)" in text
    gpus = 1 if preset == "one_gpu" else 8
    assert int(config.trainer.n_gpus_per_node) == gpus
    assert int(config.actor_rollout_ref.rollout.tensor_model_parallel_size) == 1
    if preset == "eight_gpus":  # the page: the next power of two down does not hold it
        smaller = judge_server(models={"scripted-judge": context // 2})
        _, report = preflight(overlay, tokenizer_dir, train, smaller.base_url, *overrides)
        (problem,) = report.problems
        assert f"> the judge's context {context // 2}" in problem


def test_without_the_preset_the_same_judge_is_too_small(tokenizer_dir, tmp_path, judge_server):
    """The overlay's own 8 k responses need more than the page's 16 k judge: the preset is what makes it fit."""
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    train = build_rows(tmp_path, "writing_rl", rows_at_the_limits("writing_rl", tokenizer, 900, 4096))
    server = judge_server(models={"scripted-judge": judge_contexts()["writing_rl"]})
    _, report = preflight("writing_rl", tokenizer_dir, train, server.base_url, "+node=one_gpu")
    assert report.problems == [], "\n".join(report.lines)
    _, report = preflight("writing_rl", tokenizer_dir, train, server.base_url)
    (problem,) = report.problems
    assert "judge prompt at max_response_length" in problem and "> the judge's context 16384" in problem


@pytest.mark.parametrize(
    "preset, genrm, pool",
    [("one_gpu", "colocated", "the GenRM: 1 vLLM replica(s) of 1 GPU(s) on 1 GPU(s)"),
     ("eight_gpus", "standalone", "the GenRM: 4 vLLM replica(s) of 1 GPU(s) on 4 GPU(s)")],
)  # fmt: skip
def test_a_preset_with_a_genrm_verl_hosts(preset, genrm, pool, tokenizer_dir, tmp_path):
    genrm_dir = tmp_path / "genrm"
    shutil.copytree(tokenizer_dir, genrm_dir)
    context = judge_contexts()["writing_rl"]
    (genrm_dir / "config.json").write_text(json.dumps({"model_type": "qwen2", "max_position_embeddings": context}))
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    sized = compose("writing_rl", ["actor_rollout_ref.model.path=x", f"+node={preset}"])
    rows = rows_at_the_limits(
        "writing_rl", tokenizer, int(sized.data.max_prompt_length) - 120, int(sized.data.max_response_length)
    )
    train = build_rows(tmp_path, "writing_rl", rows)
    config, report = preflight(
        "writing_rl", tokenizer_dir, train, "http://unused:1/v1", f"+node={preset}", f"+genrm={genrm}",
        f"reward.reward_model.model_path={genrm_dir}", "~reward.reward_kwargs.judge.base_url",
    )  # fmt: skip
    assert report.problems == [], "\n".join(report.lines)
    assert any(pool in line for line in report.lines)
    assert any(f"<= the judge's context {context}" in line for line in report.lines)


@pytest.mark.parametrize(
    "overrides, problem",
    [
        (["trainer.n_gpus_per_node=1", "data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=8"],
         "actor_rollout_ref.rollout: a replica takes 2 GPUs (tensor x data x pipeline parallel sizes) but the policy "
         "has 1 (trainer.n_gpus_per_node x trainer.nnodes): no replica could start. Set "
         "actor_rollout_ref.rollout.tensor_model_parallel_size to at most 1"),
        (["+genrm=standalone", "reward.reward_model.model_path=/m", "reward.reward_model.rollout.tensor_model_parallel_size=8"],
         "reward.reward_model.rollout: a replica takes 8 GPUs (tensor x data x pipeline parallel sizes) but the GenRM "
         "has 4 (its pool, reward.reward_model.n_gpus_per_node x nnodes)"),
    ],
)  # fmt: skip
def test_a_replica_bigger_than_its_gpus_is_refused_before_the_run(overrides, problem):
    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.config_checks import check_config

    config = compose("writing_rl", ["actor_rollout_ref.model.path=x", "reward.reward_kwargs.judge.base_url=http://j:1/v1",
                                    "reward.reward_kwargs.judge.model=m", *overrides])  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        check_config(config)
    assert str(refused.value).startswith(problem)


def test_gpus_no_replica_uses_are_a_warning():
    from writing_rl.tools.preflight.config_checks import check_gpu_layout

    config = compose("writing_rl", ["actor_rollout_ref.model.path=x", "trainer.n_gpus_per_node=5"])
    assert check_gpu_layout(config) == [
        "WARNING 1 of the policy's 5 GPUs serve no replica (actor_rollout_ref.rollout: 2 GPUs each)"
    ]


def run_script(tmp_path, **env):
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MODEL_PATH": "m", "TRAIN_FILES": "t", "VAL_FILES": "v",
            "JUDGE_BASE_URL": "http://j:1/v1", "JUDGE_MODEL": "judge", "PYTHON": "/bin/false"}  # fmt: skip
    return subprocess.run(
        ["bash", str(REPO_DIR / "scripts/train_writing_rl.sh")], env={**base, **env}, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "env, error",
    [({"NODE_PRESET": "two_gpus"}, "error: NODE_PRESET must be one_gpu or eight_gpus (hydra_configs/node/), got 'two_gpus'"),
     ({"NODE_PRESET": "one_gpu", "GENRM": "standalone", "GENRM_PATH": "/g"},
      "error: NODE_PRESET=one_gpu has one GPU and GENRM=standalone needs GPUs of its own")],
)  # fmt: skip
def test_the_scripts_refuse_a_preset_they_cannot_run(tmp_path, env, error):
    done = run_script(tmp_path, **env)
    assert done.returncode == 2 and done.stderr.startswith(error), done.stderr


def test_the_scripts_add_the_preset(tmp_path, judge_server, tokenizer_dir):
    out = tmp_path / "dry"
    import sys

    done = run_script(
        tmp_path, NODE_PRESET="one_gpu", DRY_RUN="1", DRY_RUN_OUT=str(out), REMOTE_PATHS="all", PYTHON=sys.executable,
        JUDGE_BASE_URL=judge_server().base_url, JUDGE_MODEL="scripted-judge", MODEL_PATH=str(tokenizer_dir),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    composed = (out / "writing_rl.yaml").read_text()
    assert "n_gpus_per_node: 1\n" in composed and "max_response_length: 2048\n" in composed
    assert done.stdout.rstrip().splitlines()[-1].startswith("preflight: ok")
