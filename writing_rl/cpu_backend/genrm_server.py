"""A GenRM verl hosts on the CPU: ``writing-rl serve-judge``'s HTTP layer over one hf engine in the
calling process (the rollout server actor), instead of over a pool of replica actors."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from writing_rl.genrm.engine import ContextTooLong, RequestRejected, Sampling
from writing_rl.genrm.hf_engine import HFEngine
from writing_rl.genrm.pool import PoolReply
from writing_rl.genrm.pool_config import JudgeEngineError, JudgeRequestError
from writing_rl.genrm.server import JudgeServer
from writing_rl.judge.errors import JudgeContextLengthError


class EngineAsPool:
    """What ``JudgeServer`` needs of a pool, answered by one engine: replies, and the pool's errors."""

    def __init__(self, engine: HFEngine, name: str):
        self.engine = engine
        self.name = name
        self.endpoint = f"cpu-genrm:{name}"
        self.max_model_len = engine.max_model_len

    async def generate(self, messages, sampling: Sampling | None = None, chat_template_kwargs=None) -> PoolReply:
        start = time.perf_counter()
        try:
            generation = await self.engine.generate(messages, sampling or Sampling(), chat_template_kwargs)
        except ContextTooLong as exc:
            raise JudgeContextLengthError(self.endpoint, 400, str(exc)) from None
        except RequestRejected as exc:
            raise JudgeRequestError(self.endpoint, str(exc)) from None
        except Exception as exc:  # the engine failed on this request; the server answers 500 and lives on
            raise JudgeEngineError(self.endpoint, f"{type(exc).__name__}: {exc}") from None
        return PoolReply(generation, time.perf_counter() - start, attempts=1, replica=0)

    def health(self) -> dict[str, Any]:
        return {"model": self.name, "engine": "hf", "device": "cpu", "replicas": 1, "ready": 1}


def build_genrm_app(model_path: str, served_name: str, config) -> tuple[web.Application, JudgeServer]:
    """The HTTP app serving ``model_path`` under ``served_name``; ``config`` is verl's rollout config of
    the reward model (its ``max_model_len`` and ``max_num_seqs`` bound the engine)."""
    engine = HFEngine(
        model_path,
        device="cpu",
        max_model_len=getattr(config, "max_model_len", None),
        max_batch_size=min(int(getattr(config, "max_num_seqs", 16) or 16), 64),
        num_threads=1,
    )
    server = JudgeServer(EngineAsPool(engine, served_name), served_name, max_pending=4096)
    return server.app(), server
