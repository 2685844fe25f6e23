"""What both GenRM engines share (``writing_rl.genrm.requests``), through each engine: the prompt token
ids, the completion budget, the sampling, the ``Generation`` and its token counts, and the requests an
engine refuses. The hf engine runs the tiny Qwen2 on CPU; the vllm engine runs against a stand-in
``vllm`` package (vLLM needs a GPU), which records what the engine hands to vLLM and answers like vLLM
(the stop token counted in ``token_ids``, not in the text)."""

from __future__ import annotations

import asyncio
import enum
import json
import sys
import types
from pathlib import Path

import pytest

from writing_rl.genrm.engine import ContextTooLong, EngineUnavailable, Generation, RequestRejected, Sampling
from writing_rl.genrm.hf_engine import HFEngine
from writing_rl.genrm.requests import ChatRequests, PreparedRequest, Usage

from genrm_helpers import PROMPTS, direct_greedy
from tiny import CHAT_TEMPLATE, build_tiny_qwen2

MAX_NEW = 24
DEFAULT_MAX = 16

# (messages, sampling): an explicit budget, the default budget, seeded and unseeded sampling.
REQUESTS = [
    (PROMPTS[0], Sampling(max_tokens=MAX_NEW)),
    (PROMPTS[4], Sampling()),
    (PROMPTS[2], Sampling(max_tokens=8, temperature=0.7, top_p=0.9, seed=3)),
    (PROMPTS[7], Sampling(max_tokens=MAX_NEW, temperature=1.0, top_p=0.5)),
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tokenizer_dir):
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny-engines") / "model", tokenizer_dir)


@pytest.fixture(scope="module")
def hf(model_dir):
    return HFEngine(str(model_dir), default_max_tokens=DEFAULT_MAX)


# ---------------------------------------------------------------- a stand-in vllm package


class RequestOutputKind(enum.Enum):
    CUMULATIVE = 0
    DELTA = 1
    FINAL_ONLY = 2


# The keywords vLLM's SamplingParams and AsyncEngineArgs take (vllm/sampling_params.py, vllm/engine/arg_utils.py;
# the engine args only those a GenRM replica would set): the stand-ins refuse any other, as vLLM does, so a
# misspelt argument fails here and not first on a GPU node.
SAMPLING_FIELDS = frozenset(
    "n best_of presence_penalty frequency_penalty repetition_penalty temperature top_p top_k min_p seed stop "
    "stop_token_ids bad_words include_stop_str_in_output ignore_eos max_tokens min_tokens logprobs prompt_logprobs "
    "detokenize skip_special_tokens spaces_between_special_tokens logits_processors truncate_prompt_tokens "
    "output_kind guided_decoding structured_outputs logit_bias allowed_token_ids extra_args".split()
)
ENGINE_ARG_FIELDS = frozenset(
    "model tokenizer revision trust_remote_code download_dir dtype kv_cache_dtype seed max_model_len "
    "distributed_executor_backend tensor_parallel_size pipeline_parallel_size gpu_memory_utilization swap_space "
    "enforce_eager enable_prefix_caching enable_chunked_prefill max_num_seqs max_num_batched_tokens quantization "
    "disable_log_stats".split()
)


def keywords_of(kind: str, fields: frozenset, kwargs: dict) -> dict:
    unknown = sorted(set(kwargs) - fields)
    if unknown:
        raise TypeError(f"{kind}.__init__() got unexpected keyword arguments {unknown}")
    return kwargs


class SamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = keywords_of("SamplingParams", SAMPLING_FIELDS, kwargs)


class AsyncEngineArgs:
    def __init__(self, **kwargs):
        self.kwargs = keywords_of("AsyncEngineArgs", ENGINE_ARG_FIELDS, kwargs)


class FakeAsyncLLM:
    """vLLM's async engine as far as VLLMEngine uses it. ``calls``: (prompt, SamplingParams.kwargs) per
    request. It answers greedily with transformers, one request at a time, as vLLM reports a completion."""

    def __init__(self, args: AsyncEngineArgs):
        self.args = args.kwargs
        config = json.loads((Path(self.args["model"]) / "config.json").read_text())
        self.model_config = types.SimpleNamespace(
            max_model_len=self.args["max_model_len"] or config["max_position_embeddings"]
        )
        self.calls: list[tuple[dict, dict]] = []
        self.shut_down = False
        self._model = None

    @classmethod
    def from_engine_args(cls, args):
        return cls(args)

    async def generate(self, prompt, params, request_id):
        assert request_id
        self.calls.append((prompt, params.kwargs))
        yield types.SimpleNamespace(outputs=[self.complete(prompt["prompt_token_ids"], params.kwargs["max_tokens"])])

    def complete(self, ids: list[int], max_tokens: int):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self._model is None:
            self._model = AutoModelForCausalLM.from_pretrained(self.args["model"]).eval()
            self._tokenizer = AutoTokenizer.from_pretrained(self.args["model"])
        model, tokenizer = self._model, self._tokenizer
        with torch.inference_mode():
            out = model.generate(
                input_ids=torch.tensor([ids]),
                max_new_tokens=max_tokens,
                do_sample=False,
                eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id,
                top_k=None,
                temperature=None,
                top_p=None,
            )
        tokens = out[0, len(ids) :].tolist()
        stopped = tokens[-1] == tokenizer.eos_token_id
        return types.SimpleNamespace(
            text=tokenizer.decode(tokens, skip_special_tokens=True),
            token_ids=tokens,
            finish_reason="stop" if stopped else "length",
        )

    def shutdown(self):
        self.shut_down = True


class FakeV0Engine(FakeAsyncLLM):
    """A release before the v1 engine: ``AsyncLLMEngine``, its model config one level down."""

    def __init__(self, args):
        super().__init__(args)
        self.engine = types.SimpleNamespace(model_config=self.model_config)
        del self.model_config
        self.shutdown = None


def install_fake_vllm(monkeypatch, v1: bool = True) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    modules = {
        "vllm": types.ModuleType("vllm"),
        "vllm.engine": types.ModuleType("vllm.engine"),
        "vllm.engine.arg_utils": types.ModuleType("vllm.engine.arg_utils"),
        "vllm.sampling_params": types.ModuleType("vllm.sampling_params"),
    }
    modules["vllm"].AsyncLLMEngine = FakeV0Engine
    modules["vllm.engine.arg_utils"].AsyncEngineArgs = AsyncEngineArgs
    modules["vllm.sampling_params"].SamplingParams = SamplingParams
    modules["vllm.sampling_params"].RequestOutputKind = RequestOutputKind
    for name in ("vllm.v1", "vllm.v1.engine"):
        modules[name] = types.ModuleType(name)
    if v1:
        modules["vllm.v1.engine.async_llm"] = types.ModuleType("vllm.v1.engine.async_llm")
        modules["vllm.v1.engine.async_llm"].AsyncLLM = FakeAsyncLLM
    else:
        modules["vllm.v1.engine.async_llm"] = None  # importing it raises ImportError
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


@pytest.fixture
def vllm_engine(monkeypatch, model_dir):
    install_fake_vllm(monkeypatch)
    from writing_rl.genrm.vllm_engine import VLLMEngine

    return VLLMEngine(str(model_dir), default_max_tokens=DEFAULT_MAX)


def hf_generate_calls(engine: HFEngine, requests, chat_template_kwargs=None) -> tuple[list[Generation], list[dict]]:
    """Each request alone through the hf engine, with what it handed ``model.generate``."""
    calls, generate = [], engine.model.generate

    def recording(**kwargs):
        calls.append({**kwargs, "input_ids": kwargs["input_ids"][0].tolist()})
        return generate(**kwargs)

    engine.model.generate = recording
    try:
        replies = [asyncio.run(engine.generate(m, s, chat_template_kwargs)) for m, s in requests]
    finally:
        engine.model.generate = generate
    return replies, calls


# ---------------------------------------------------------------- both engines, one request side


def test_vllm_gets_the_prompt_ids_and_sampling_the_hf_engine_generates_from(hf, vllm_engine, model_dir):
    from transformers import AutoTokenizer

    hf_replies, hf_calls = hf_generate_calls(hf, REQUESTS)
    vllm_replies = [asyncio.run(vllm_engine.generate(m, s)) for m, s in REQUESTS]
    assert len(vllm_engine.engine.calls) == len(REQUESTS) == len(hf_calls)

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    for (messages, sampling), hf_call, (prompt, params) in zip(REQUESTS, hf_calls, vllm_engine.engine.calls):
        # what each engine must send, from the model's own chat template: not from the shared code under test
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert prompt == {"prompt_token_ids": ids}
        assert hf_call["input_ids"] == ids  # one request alone: no padding
        budget = sampling.max_tokens or DEFAULT_MAX  # (every prompt here leaves room for it)
        assert params["max_tokens"] == hf_call["max_new_tokens"] == budget
        assert params["n"] == 1 and params["output_kind"] is RequestOutputKind.FINAL_ONLY
        assert (params["temperature"], params["top_p"], params["seed"]) == (
            sampling.temperature,
            sampling.top_p,
            sampling.seed,
        )
        assert hf_call["do_sample"] is not sampling.greedy
        if not sampling.greedy:
            assert (hf_call["temperature"], hf_call["top_p"]) == (sampling.temperature, sampling.top_p)
    # The default budget, clipped by neither context: the replica's default_max_tokens.
    assert vllm_engine.engine.calls[1][1]["max_tokens"] == DEFAULT_MAX

    # Greedy requests: the same Generation from both engines, and from transformers directly.
    for i in (0, 1):
        messages, sampling = REQUESTS[i]
        want = direct_greedy(hf.model.name_or_path, [messages], sampling.max_tokens or DEFAULT_MAX)[0]
        assert vllm_replies[i].to_dict() == hf_replies[i].to_dict() == want
    # Sampled ones still agree on everything but the tokens drawn.
    for i in (2, 3):
        assert (
            vllm_replies[i].prompt_tokens
            == hf_replies[i].prompt_tokens
            == len(vllm_engine.engine.calls[i][0]["prompt_token_ids"])
        )

    stats = vllm_engine.stats()
    assert stats["requests"] == len(REQUESTS)
    assert stats["prompt_tokens"] == sum(r.prompt_tokens for r in vllm_replies)
    assert stats["completion_tokens"] == sum(r.completion_tokens for r in vllm_replies)
    vllm_engine.close()
    assert vllm_engine.engine.shut_down


@pytest.mark.parametrize(
    "messages, sampling, error",
    [
        ([{"role": "user", "content": "lighthouse " * 100}], Sampling(), "but the prompt has"),
        (PROMPTS[0], Sampling(max_tokens=200), r"\(\d+ in the messages, 200 in the completion\)"),
    ],
)
def test_both_engines_refuse_what_cannot_fit_in_the_same_words(monkeypatch, model_dir, messages, sampling, error):
    install_fake_vllm(monkeypatch)
    from writing_rl.genrm.vllm_engine import VLLMEngine

    refused = []
    for engine in (HFEngine(str(model_dir), max_model_len=64), VLLMEngine(str(model_dir), max_model_len=64)):
        assert engine.max_model_len == 64
        with pytest.raises(ContextTooLong, match=error) as info:
            asyncio.run(engine.generate(messages, sampling))
        refused.append(str(info.value))
    assert refused[0] == refused[1]


def test_both_engines_pass_chat_template_kwargs_the_same_way(monkeypatch, model_dir, tmp_path):
    """The replica's ``chat_template_kwargs``, overridden by a request's, reach the chat template."""
    from transformers import AutoTokenizer

    templated = tmp_path / "templated"
    build_tiny_qwen2(templated, model_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(templated))
    tokenizer.chat_template = (
        "{% if note is defined %}<|im_start|>system\n{{ note }}<|im_end|>\n{% endif %}" + CHAT_TEMPLATE
    )
    tokenizer.save_pretrained(templated)

    install_fake_vllm(monkeypatch)
    from writing_rl.genrm.vllm_engine import VLLMEngine

    options = {"chat_template_kwargs": {"note": "from the replica"}, "default_max_tokens": 4}
    hf_engine, vllm = HFEngine(str(templated), **options), VLLMEngine(str(templated), **options)
    messages = PROMPTS[1]
    for request_kwargs, note in ((None, "from the replica"), ({"note": "from the request"}, "from the request")):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, note=note)
        want = tokenizer(text, add_special_tokens=False)["input_ids"]
        (hf_reply,), (call,) = hf_generate_calls(hf_engine, [(messages, Sampling())], request_kwargs)
        vllm_reply = asyncio.run(vllm.generate(messages, Sampling(), request_kwargs))
        assert call["input_ids"] == vllm.engine.calls[-1][0]["prompt_token_ids"] == want
        assert hf_reply.prompt_tokens == vllm_reply.prompt_tokens == len(want)


def test_both_engines_refuse_a_model_without_a_chat_template(monkeypatch, model_dir, tmp_path):
    plain = tmp_path / "plain"
    build_tiny_qwen2(plain, model_dir)
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((plain / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(config))

    install_fake_vllm(monkeypatch)
    from writing_rl.genrm.vllm_engine import VLLMEngine

    for engine_cls in (HFEngine, VLLMEngine):
        with pytest.raises(ValueError, match="the tokenizer has no chat template"):
            engine_cls(str(plain))


def test_vllm_engine_before_the_v1_engine(monkeypatch, model_dir):
    install_fake_vllm(monkeypatch, v1=False)
    from writing_rl.genrm.vllm_engine import VLLMEngine

    engine = VLLMEngine(str(model_dir), default_max_tokens=DEFAULT_MAX, max_model_len=512)
    assert isinstance(engine.engine, FakeV0Engine) and engine.max_model_len == 512
    reply = asyncio.run(engine.generate(PROMPTS[0], Sampling(max_tokens=4)))
    assert reply.completion_tokens <= 4 and engine.stats()["requests"] == 1
    assert engine.engine.args["distributed_executor_backend"] == "mp"
    engine.close()  # no shutdown method on that engine: nothing to call


def test_vllm_engine_unavailable(monkeypatch, model_dir):
    from writing_rl.genrm.vllm_engine import VLLMEngine

    install_fake_vllm(monkeypatch)
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(EngineUnavailable, match="needs vLLM installed"):
        VLLMEngine(str(model_dir))
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(EngineUnavailable, match="GPUs only"):
        VLLMEngine(str(model_dir))


# ---------------------------------------------------------------- the shared pieces alone


def test_chat_requests_prepare_and_reject(hf):
    chat = ChatRequests(hf.tokenizer, default_max_tokens=DEFAULT_MAX)
    prepared = chat.prepare(PROMPTS[0], Sampling(), max_model_len=4096)
    assert prepared == PreparedRequest(chat.encode(PROMPTS[0]), DEFAULT_MAX)
    clipped = chat.prepare(PROMPTS[0], Sampling(), max_model_len=len(prepared.ids) + 3)
    assert clipped.max_tokens == 3

    class Refusing:
        def apply_chat_template(self, messages, **kwargs):
            raise ValueError("Conversation roles must alternate")

    with pytest.raises(RequestRejected, match="chat template rejected the messages: Conversation roles"):
        ChatRequests(Refusing(), DEFAULT_MAX).encode(PROMPTS[0])


def test_prepared_generation_and_usage():
    prepared = PreparedRequest([5, 6, 7], max_tokens=4)
    usage = Usage()
    for generation in (prepared.generation("a", "stop", 2), prepared.generation("bcd", "length", 4)):
        usage.add(generation)
    assert prepared.generation("a", "stop", 2) == Generation("a", "stop", prompt_tokens=3, completion_tokens=2)
    assert usage.to_dict() == {"requests": 2, "prompt_tokens": 6, "completion_tokens": 6}
