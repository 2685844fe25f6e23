"""The CPU backend for verl (writing_rl/cpu_backend/): registered only through verl's plugin points and only
when VERL_PLATFORM=cpu, shims that verl still needs, and the rollout's generation and weight loading.
The whole backend under verl's trainer: tests/test_trainer_cpu.py."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from writing_rl.cpu_backend.generator import SamplingKey, TokenGenerator, sampling_key

PROBE = """
import json, verl
from verl.workers.rollout.base import _ROLLOUT_REGISTRY
from verl.workers.rollout.replica import RolloutReplicaRegistry
from verl.plugin.platform import PlatformRegistry
print(json.dumps({
    "platforms": list(PlatformRegistry.registered_names()),
    "replicas": list(RolloutReplicaRegistry._registry),
    "adapters": [name for name, _ in _ROLLOUT_REGISTRY],
}))
"""


def probe(**env) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != "VERL_PLATFORM"} | env
    done = subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_verl_loads_the_backend_through_its_entry_point_only_when_the_cpu_platform_is_chosen():
    plain = probe()
    assert "cpu" not in plain["platforms"] and "transformers" not in plain["replicas"] + plain["adapters"]
    chosen = probe(VERL_PLATFORM="cpu")
    assert "cpu" in chosen["platforms"]
    assert "transformers" in chosen["replicas"] and "transformers" in chosen["adapters"]


# What each shim of writing_rl/cpu_backend/shims.py works around, read in verl's own code.
MIXED_BACKEND = 'f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}"'


def function_source(module, name: str) -> str:
    """The source of ``module.name`` as verl's file has it (not as a shim may have replaced it)."""
    text = inspect.getsource(module)
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node) or ""
    return ""


def process_group_needed() -> bool:
    from verl.utils import distributed

    return MIXED_BACKEND in function_source(distributed, "initialize_global_process_group_ray")


def sft_process_group_needed() -> bool:
    from verl.utils import distributed

    source = function_source(distributed, "initialize_global_process_group")
    return MIXED_BACKEND in source and "backend=None" not in source


def rollout_registry_needed() -> bool:
    from verl.workers.rollout import base

    return not any(name.startswith("register") for name in dir(base)) and hasattr(base, "_ROLLOUT_REGISTRY")


def pin_memory_needed() -> bool:
    from verl.workers.engine.fsdp import transformer_impl

    return "CPUOffloadPolicy(pin_memory=True)" in inspect.getsource(transformer_impl)


@pytest.mark.parametrize(
    "needed", [process_group_needed, sft_process_group_needed, rollout_registry_needed, pin_memory_needed]
)
def test_each_shim_is_still_needed_by_this_verl(needed):
    """When this fails, verl fixed what the shim works around: delete the shim (writing_rl/cpu_backend/shims.py)
    and its line in docs/train-on-a-laptop.md."""
    assert needed(), f"{needed.__name__}: verl no longer needs this shim"


@pytest.fixture(scope="module")
def tiny_model(tokenizer_dir, tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from tiny import build_tiny_qwen2

    path = build_tiny_qwen2(tmp_path_factory.mktemp("policy") / "policy", tokenizer_dir)
    return path, AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def generator(model, tokenizer) -> TokenGenerator:
    return TokenGenerator(model, {tokenizer.eos_token_id}, tokenizer.pad_token_id)


def prompts(tokenizer) -> list[list[int]]:
    texts = ["Write a story about a lighthouse.", "The storm was good", "verdict judge [[A]] and a longer prompt here"]
    return [tokenizer(text)["input_ids"] for text in texts]


def test_a_batch_gives_each_prompt_what_it_gets_alone_with_its_log_probs(tiny_model, tokenizer):
    _, model = tiny_model
    gen = generator(model, tokenizer)
    key = sampling_key({"temperature": 0, "top_p": 1.0, "top_k": -1, "logprobs": True}, max_tokens=12)
    together = gen.run_batch(prompts(tokenizer), key)
    for ids, result in zip(prompts(tokenizer), together):
        alone = gen.run_batch([ids], key)[0]
        assert result.token_ids == alone.token_ids
        # The log-probs are the model's own, of exactly the tokens returned.
        full = torch.tensor([ids + result.token_ids])
        with torch.no_grad():
            logits = model(full).logits[0, len(ids) - 1 : -1]
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(result.token_ids)[:, None]).squeeze(-1)
        assert torch.allclose(torch.tensor(result.log_probs), expected, atol=1e-4)
        assert len(result.token_ids) <= 12


def test_generation_ends_at_the_stop_token_and_keeps_it(tiny_model, tokenizer):
    _, model = tiny_model
    stop = tokenizer.eos_token_id
    gen = generator(model, tokenizer)
    tokens = [5, 6, stop, tokenizer.pad_token_id, tokenizer.pad_token_id]
    assert gen._finish(0, tokens, None).token_ids == [5, 6, stop]
    assert gen._finish(0, [5, 6, 7], None).token_ids == [5, 6, 7]


def test_unknown_sampling_parameters_are_refused():
    with pytest.raises(ValueError, match="min_p"):
        sampling_key({"temperature": 1.0, "min_p": 0.1}, max_tokens=4)
    key = sampling_key({"temperature": 0.7, "top_k": 0}, max_tokens=4)
    assert key == SamplingKey(4, 0.7, 1.0, -1, 1.0, False) and not key.greedy


def test_concurrent_requests_share_a_batch_and_each_gets_its_own_answer(tiny_model, tokenizer):
    _, model = tiny_model
    gen = generator(model, tokenizer)
    key = sampling_key({"temperature": 0}, max_tokens=8)
    sizes = []
    run_batch = gen.run_batch
    gen.run_batch = lambda batch, k: sizes.append(len(batch)) or run_batch(batch, k)

    async def all_at_once():
        return await asyncio.gather(*(gen.generate(ids, key) for ids in prompts(tokenizer)))

    answers = asyncio.run(all_at_once())
    assert sum(sizes) == 3 and len(sizes) < 3  # at least two of them ran in one generate call
    assert [a.token_ids for a in answers] == [r.token_ids for r in run_batch(prompts(tokenizer), key)]


def test_the_policy_server_loads_the_trainers_weights_and_refuses_foreign_ones(tiny_model, tokenizer):
    from verl.workers.config import HFModelConfig

    from writing_rl.cpu_backend.rollout import PolicyServer

    path, model = tiny_model
    config = SimpleNamespace(prompt_length=64, response_length=8, max_model_len=None, seed=0)
    server = PolicyServer(config, HFModelConfig(path=str(path)), replica_rank=0)
    ids = prompts(tokenizer)[0]
    params = {"temperature": 0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": False}
    before = asyncio.run(server.generate(ids, dict(params), "r1"))
    assert 1 <= len(before.token_ids) <= 8

    changed = {name: tensor + 0.5 for name, tensor in model.state_dict().items()}  # tied weights stay tied
    assert asyncio.run(server.update_weights(changed, global_steps=3)) == len(changed)
    for name, tensor in server.model.state_dict().items():
        assert torch.equal(tensor, changed[name])
    after = asyncio.run(server.generate(ids, dict(params), "r2"))
    assert after.extra_fields["global_steps"] == 3
    with pytest.raises(ValueError, match="does not have"):
        asyncio.run(server.update_weights({"model.not_a_layer.weight": torch.zeros(1)}))


def test_check_config_names_a_missing_trainer_package_and_its_install(monkeypatch):
    import importlib.util

    from writing_rl.offline.compose import compose
    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.config_checks import check_config

    judge = ["reward.reward_kwargs.judge.base_url=http://127.0.0.1:9/v1", "reward.reward_kwargs.judge.model=m"]
    config = compose("writing_rl", judge)
    assert "trainer packages: transfer_queue, cachetools, uvicorn, fastapi importable" in check_config(config)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "transfer_queue" else find_spec(name, *a)
    )
    with pytest.raises(
        ConfigError, match=r"imports TransferQueue>=0.1.10 at start.*pip install 'TransferQueue>=0.1.10'"
    ):
        check_config(config)
    # The legacy trainer does not import TransferQueue.
    assert "trainer packages: cachetools, uvicorn, fastapi importable" in check_config(
        compose("writing_rl", [*judge, "trainer.use_v1=false"])
    )


def test_check_config_wants_the_cpu_platform_chosen_for_the_cpu_backend(monkeypatch):
    from writing_rl.offline.compose import compose
    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.config_checks import check_config

    judge = ["reward.reward_kwargs.judge.base_url=http://127.0.0.1:9/v1", "reward.reward_kwargs.judge.model=m"]
    config = compose("writing_rl", [*judge, "+backend=cpu"])
    monkeypatch.delenv("VERL_PLATFORM", raising=False)
    with pytest.raises(ConfigError, match="needs VERL_PLATFORM=cpu in the environment"):
        check_config(config)
    monkeypatch.setenv("VERL_PLATFORM", "cpu")
    assert "CPU backend: VERL_PLATFORM=cpu, rollout transformers" in check_config(config)
