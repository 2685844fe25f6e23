"""verl's rollout backend ``transformers``: the policy's rollouts, and a GenRM verl hosts, on the CPU, selected
as vLLM is (``actor_rollout_ref.rollout.name=transformers``, ``reward.reward_model.rollout.name`` for a GenRM).

- ``TransformersReplica`` (a verl ``RolloutReplica``) starts one server actor per replica, named as vLLM names
  its own so that the adapter finds it: a ``PolicyServer`` (token ids in, token ids and log-probs out) that
  verl's agent loop calls ``generate`` on, or a ``GenRMServer`` (``writing-rl serve-judge``'s OpenAI-compatible
  HTTP server over the hf engine) that verl's reward router forwards chat completions to.
- ``TransformersServerAdapter`` (a verl ``BaseRollout``) lives in the training worker (and, for a GenRM, in
  verl's checkpoint worker): it hands the trainer's weights to the policy server after each step.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
from typing import Any

import ray
import torch
from aiohttp import web
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import HFModelConfig
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput
from verl.workers.rollout.utils import ensure_async_iterator

from writing_rl.cpu_backend.generator import TokenGenerator, sampling_key
from writing_rl.cpu_backend.platform_name import HOST
from writing_rl.cpu_backend.platform_name import ROLLOUT as NAME

logger = logging.getLogger(__name__)


def server_name(replica_rank: int, is_reward_model: bool, suffix: str = "") -> str:
    kind = "server_reward" if is_reward_model else "server"
    return f"{NAME}_{kind}_{replica_rank}_0{suffix}"


class _Server:
    """What every server actor answers: its address, and the control calls verl makes around a step
    (sleep, wake-up, cache, profiling), which mean nothing on a CPU."""

    address = ""

    async def _listen(self, app: web.Application) -> None:
        listening = socket.socket()
        listening.bind((HOST, 0))  # a free port, held from here on
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, listening).start()
        self.address = f"{HOST}:{listening.getsockname()[1]}"

    async def get_server_address(self) -> str:
        return self.address

    async def wake_up(self, tags: list[str] | None = None) -> None: ...

    async def sleep(self) -> None: ...

    async def clear_kv_cache(self) -> None: ...

    async def release_kv_cache(self) -> None: ...

    async def resume_kv_cache(self) -> None: ...

    async def wait_for_requests_to_drain(self) -> None: ...

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict:
        return {"aborted": 0}

    async def resume_generation(self) -> None: ...

    async def start_profile(self, **kwargs) -> None: ...

    async def stop_profile(self) -> None: ...


class PolicyServer(_Server):
    def __init__(self, config, model_config, replica_rank: int):
        from transformers import AutoModelForCausalLM

        self.config = config
        model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
        path = model_config.local_path or model_config.path
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        self.tokenizer = model_config.tokenizer
        stop_ids = {i for i in _as_list(self.model.generation_config.eos_token_id) if i is not None}
        if self.tokenizer is not None and self.tokenizer.eos_token_id is not None:
            stop_ids.add(self.tokenizer.eos_token_id)
        if not stop_ids:
            raise ValueError(f"{path}: neither its tokenizer nor its generation config names an EOS token")
        pad = self.model.generation_config.pad_token_id
        self.generator = TokenGenerator(self.model, stop_ids, pad if pad is not None else min(stop_ids))
        context = getattr(self.model.config, "max_position_embeddings", None)
        self.max_model_len = config.max_model_len or config.prompt_length + config.response_length
        if context:
            self.max_model_len = min(self.max_model_len, context)
        self.global_steps: int | None = None
        self.weight_updates = 0
        torch.manual_seed(config.seed if getattr(config, "seed", None) is not None else replica_rank)

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/health", lambda request: web.json_response({"status": "ok"}))
        await self._listen(app)
        return self.address

    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        request_id: str,
        image_data=None,
        video_data=None,
        audio_data=None,
        mm_processor_kwargs=None,
        priority: int = 0,
        **kwargs,
    ) -> TokenOutput:
        if image_data or video_data or audio_data:
            raise ValueError("the CPU rollout generates text only: this request carries images, video or audio")
        params = dict(sampling_params)
        max_tokens = params.pop("max_tokens", params.pop("max_new_tokens", None))
        budget = self.config.prompt_length + self.config.response_length - len(prompt_ids)
        if max_tokens is None:  # vLLM's rule: the response length, within the prompt + response budget
            max_tokens = min(self.config.response_length, budget)
        max_tokens = max(1, min(int(max_tokens), self.max_model_len - len(prompt_ids)))
        result = await self.generator.generate(prompt_ids, sampling_key(params, max_tokens))
        extra = {} if self.global_steps is None else {"global_steps": self.global_steps}
        return TokenOutput(
            token_ids=result.token_ids, log_probs=result.log_probs, stop_reason=result.stop_reason, extra_fields=extra
        )

    async def update_weights(self, state: dict[str, torch.Tensor], global_steps: int | None = None) -> int:
        """Load the trainer's weights; the batch in flight finishes on the old ones."""
        async with self.generator.model_lock:
            own = self.model.state_dict()
            unknown = sorted(set(state) - set(own))
            if unknown:
                raise ValueError(f"weights the rollout model does not have: {unknown[:5]}")
            self.model.load_state_dict(state, strict=False)
        self.weight_updates += 1
        if global_steps is not None:
            self.global_steps = global_steps
        # One line per update in the trainer's log: the tiny runs' tests count the tensors and compare the digest
        # of what the rollout now generates with against the actor's checkpoint.
        digest = weights_digest(self.model.state_dict())
        print(
            f"[writing-rl] CPU rollout: weights of step {global_steps} loaded ({len(state)} tensors, digest {digest})",
            flush=True,
        )
        return len(state)

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    async def state(self) -> dict[str, Any]:
        return {"weight_updates": self.weight_updates, "global_steps": self.global_steps}


class GenRMServer(_Server):
    """A GenRM verl hosts: the OpenAI-compatible server of ``writing-rl serve-judge`` over one hf engine
    in this actor, named after the model path (what the judge client sends as ``model``)."""

    def __init__(self, config, model_config, replica_rank: int):
        from writing_rl.cpu_backend.genrm_server import build_genrm_app

        model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
        path = model_config.local_path or model_config.path
        self.app, self.judge_server = build_genrm_app(path, served_name=model_config.path, config=config)

    async def start(self) -> str:
        await self._listen(self.app)
        self.judge_server.ready = True
        return self.address

    async def state(self) -> dict[str, Any]:
        return {"requests": dict(self.judge_server.counts)}


def weights_digest(state: dict[str, torch.Tensor]) -> str:
    """A short hash of a model's weights (names, shapes and float32 values), the same for the same weights
    wherever they live (a DTensor: its local shard, the whole tensor on one rank)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name]
        tensor = tensor.to_local() if hasattr(tensor, "to_local") else tensor
        digest.update(f"{name}{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class TransformersReplica(RolloutReplica):
    def rollout_worker_use_gpu(self) -> bool:
        return True

    async def launch_servers(self) -> None:
        if self.world_size != 1:
            raise ValueError(
                f"the CPU rollout runs one process per replica: set tensor_model_parallel_size, "
                f"data_parallel_size and pipeline_model_parallel_size to 1 (world size {self.world_size})"
            )
        server_class = GenRMServer if self.is_reward_model else PolicyServer
        name = server_name(self.replica_rank, self.is_reward_model, self.name_suffix)
        server = (
            ray.remote(server_class)
            .options(name=name, max_concurrency=self.max_concurrency, num_cpus=0)
            .remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank)
        )
        address = await server.start.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = address


class TransformersServerAdapter(BaseRollout):
    """The training worker's side: sends each new version of the weights to its replica's server."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, *args, **kwargs):
        super().__init__(config, model_config, device_mesh)
        world_size = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        rank = int(os.environ.get("RANK", 0))
        self.replica_rank = rank // world_size if replica_rank == -1 else replica_rank
        self.is_leader_rank = rank % world_size == 0
        self._server = None

    def _server_handle(self):
        if self._server is None:
            self._server = ray.get_actor(server_name(self.replica_rank, is_reward_model=False))
        return self._server

    async def resume(self, tags: list[str]) -> None:
        """Nothing to bring back: the CPU server keeps its weights in memory between steps."""

    async def release(self) -> None:
        """Nothing to free: there is no accelerator memory to hand back to the trainer."""

    async def update_weights(self, weights, global_steps: int | None = None, wire_format="named_tensors", **kwargs):
        if wire_format != "named_tensors":  # what naive (colocated) and gloo (to a replica of its own) send
            raise ValueError(
                f"the CPU rollout takes weights as named tensors, not {wire_format!r}: set "
                "actor_rollout_ref.rollout.checkpoint_engine.backend to naive or gloo"
            )
        start = time.perf_counter()
        state = {}
        # Every rank walks the weights: FSDP gathers each tensor collectively. A checkpoint engine's arrive
        # as an async generator, the colocated trainer's as a plain one.
        async for name, tensor in ensure_async_iterator(weights):
            full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
            state[name] = full.detach().to("cpu", copy=True)
        if self.is_leader_rank:
            await self._server_handle().update_weights.remote(state, global_steps)
            logger.info("CPU rollout: %d tensors loaded in %.2fs", len(state), time.perf_counter() - start)
