"""A vLLM GenRM engine: one ``AsyncLLM`` per replica, which batches continuously by itself (docs/genrm/hosting.md).

vLLM is imported when a replica starts, inside the Ray actor, so the driver never needs it. The replica's Ray
actor holds ``tensor_parallel_size`` GPUs, on which vLLM's multiprocessing executor runs the tensor-parallel
workers (Ray sets ``CUDA_VISIBLE_DEVICES``): the same executor verl uses for its own vLLM servers. Prompts are
rendered by ``requests.ChatRequests``, as in the HF engine; only the request's sampling applies (vLLM's
``SamplingParams`` defaults otherwise).
"""

from __future__ import annotations

import uuid
from typing import Any

from writing_rl.genrm.engine import EngineUnavailable, Generation, Sampling
from writing_rl.genrm.requests import ChatRequests, Usage


def _import_vllm():
    try:
        import vllm
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.sampling_params import RequestOutputKind, SamplingParams
    except ImportError as exc:
        raise EngineUnavailable(
            "the vllm engine needs vLLM installed on every GPU node of the Ray cluster "
            f"(pip install 'writing-rl[vllm]'); importing it failed: {exc}"
        ) from None
    try:
        from vllm.v1.engine.async_llm import AsyncLLM as engine_cls
    except ImportError:  # releases before the v1 engine
        engine_cls = vllm.AsyncLLMEngine
    return engine_cls, AsyncEngineArgs, SamplingParams, RequestOutputKind


class VLLMEngine:
    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        dtype: str = "auto",
        default_max_tokens: int = 4096,
        chat_template_kwargs: dict[str, Any] | None = None,
        trust_remote_code: bool = False,
        seed: int = 0,
        engine_kwargs: dict[str, Any] | None = None,
    ):
        import torch

        if not torch.cuda.is_available():
            raise EngineUnavailable("the vllm engine runs on GPUs only and this replica sees none; use engine=hf")
        engine_cls, AsyncEngineArgs, self._SamplingParams, self._OutputKind = _import_vllm()
        self.chat = ChatRequests.load(
            model, default_max_tokens, chat_template_kwargs, trust_remote_code=trust_remote_code
        )
        args = AsyncEngineArgs(
            model=model,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            dtype=dtype,
            seed=seed,
            trust_remote_code=trust_remote_code,
            # Workers are processes of this actor, on the GPUs Ray gave it; never nested Ray actors.
            distributed_executor_backend="mp",
            **(engine_kwargs or {}),
        )
        self.engine = engine_cls.from_engine_args(args)
        model_config = getattr(self.engine, "model_config", None) or self.engine.engine.model_config
        self.max_model_len = model_config.max_model_len
        self._usage = Usage()

    async def generate(
        self,
        messages: list[dict[str, str]],
        sampling: Sampling,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> Generation:
        prepared = self.chat.prepare(messages, sampling, self.max_model_len, chat_template_kwargs)
        params = self._SamplingParams(
            n=1,
            max_tokens=prepared.max_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            seed=sampling.seed,
            output_kind=self._OutputKind.FINAL_ONLY,
        )
        final = None
        async for output in self.engine.generate(
            {"prompt_token_ids": prepared.ids}, params, request_id=uuid.uuid4().hex
        ):
            final = output
        if final is None or not final.outputs:
            raise RuntimeError("vLLM finished the request without an output")
        completion = final.outputs[0]
        generation = prepared.generation(completion.text, completion.finish_reason or "stop", len(completion.token_ids))
        self._usage.add(generation)
        return generation

    def stats(self) -> dict[str, Any]:
        return {
            "engine": "vllm",
            "device": "cuda",
            **self._usage.to_dict(),
        }

    def close(self) -> None:
        shutdown = getattr(self.engine, "shutdown", None)
        if shutdown is not None:
            shutdown()
