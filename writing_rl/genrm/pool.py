"""A GenRM hosted on Ray actors, behind the same ``await judge.complete(messages)`` as the HTTP client.

``GenRMPool`` starts one ``GenRMReplica`` actor (``replica.py``) per placement-group bundle; ``PoolConfig`` and
the pool's errors are in ``pool_config.py``. Placement, routing, what a dead replica costs, and an example:
docs/genrm/hosting.md ("In Python: ``GenRMPool``"). Use it from one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import ray
from ray.exceptions import ActorUnavailableError, RayActorError, RayTaskError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from writing_rl.genrm.engine import ContextTooLong, EngineUnavailable, Generation, RequestRejected, Sampling
from writing_rl.genrm.pool_config import JudgeEngineError, JudgeRequestError, PoolConfig, PoolStartError
from writing_rl.genrm.replica import replica_class
from writing_rl.judge.base import JudgeReply, Messages
from writing_rl.judge.errors import JudgeConnectionError, JudgeContextLengthError, JudgeTimeout

logger = logging.getLogger(__name__)


@dataclass
class _Slot:
    """One bundle of the placement group and the replica currently living on it."""

    index: int
    actor: Any = None
    state: str = "starting"  # starting -> ready -> replacing -> ready ... or failed
    outstanding: int = 0
    served: int = 0
    replacements: int = 0
    info: dict = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class PoolReply:
    generation: Generation
    latency_s: float
    attempts: int
    replica: int


class GenRMPool:
    def __init__(self, config: PoolConfig):
        self.config = config.validate()
        self.endpoint = f"genrm-pool:{config.engine}:{config.name}"
        self._slots: list[_Slot] = []
        self._pg = None
        self._device = "cpu"
        self._ready: asyncio.Event | None = None
        self._replacing: set[asyncio.Task] = set()
        self._turn = 0
        self._closed = False

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> GenRMPool:
        if not ray.is_initialized():
            raise PoolStartError("Ray is not initialised: call ray.init() (or ray.init(address=...)) first")
        self._ready = asyncio.Event()
        bundle = self._bundle(ray.cluster_resources())
        self._pg = placement_group([bundle] * self.config.replicas, strategy=self.config.placement_strategy)
        try:
            await asyncio.wait_for(_await(self._pg.ready()), self.config.start_timeout_s)
        except asyncio.TimeoutError:
            await self.close()
            raise PoolStartError(
                f"could not reserve {self.config.replicas} x {bundle} ({self.config.placement_strategy}) within "
                f"{self.config.start_timeout_s:.0f}s; the cluster has {_resources_summary(ray.cluster_resources())}"
            ) from None

        self._slots = [_Slot(index=i, actor=self._spawn(i)) for i in range(self.config.replicas)]
        results = await asyncio.gather(
            *(asyncio.wait_for(_await(s.actor.ready.remote()), self.config.start_timeout_s) for s in self._slots),
            return_exceptions=True,
        )
        failures = [(s.index, r) for s, r in zip(self._slots, results) if isinstance(r, BaseException)]
        if failures:
            await self.close()
            index, error = failures[0]
            raise PoolStartError(f"replica {index} of {self.endpoint} failed to start: {_describe(error)}")
        for slot, info in zip(self._slots, results):
            slot.info, slot.state = info, "ready"
        self._ready.set()
        logger.info("%s: %d replica(s) ready on %s", self.endpoint, len(self._slots), self._device)
        return self

    def _bundle(self, cluster: Mapping[str, float]) -> dict[str, float]:
        config = self.config
        gpus = 0
        if config.engine == "vllm":
            if cluster.get("GPU", 0) == 0:
                raise PoolStartError(
                    "the vllm engine needs GPUs and this Ray cluster has none; use engine=hf on CPU machines"
                )
            gpus, self._device = config.tensor_parallel_size, "cuda"
        elif config.device == "cuda" or (config.device == "auto" and cluster.get("GPU", 0) >= config.replicas):
            gpus, self._device = 1, "cuda"
        bundle = {"CPU": config.num_cpus}
        if gpus:
            bundle["GPU"] = gpus
        return bundle

    def _engine_options(self, index: int) -> dict[str, Any]:
        c = self.config
        common = {
            "dtype": c.dtype,
            "max_model_len": c.max_model_len,
            "default_max_tokens": c.default_max_tokens,
            "chat_template_kwargs": dict(c.chat_template_kwargs),
            "trust_remote_code": c.trust_remote_code,
            "seed": c.seed + index,
        }
        if c.engine == "vllm":
            return {
                **common,
                "tensor_parallel_size": c.tensor_parallel_size,
                "gpu_memory_utilization": c.gpu_memory_utilization,
                "engine_kwargs": dict(c.engine_kwargs),
            }
        return {
            **common,
            "device": self._device,
            "max_batch_size": c.max_batch_size,
            "max_batch_tokens": c.max_batch_tokens,
            "num_threads": max(1, int(c.num_cpus)) if self._device == "cpu" else None,
        }

    def _spawn(self, index: int):
        bundle = self._pg.bundle_specs[index]
        actor_cls = replica_class().options(
            num_cpus=bundle["CPU"],
            num_gpus=bundle.get("GPU", 0),
            max_restarts=0,  # the pool replaces dead replicas itself and retries their requests elsewhere
            max_concurrency=10_000,
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=self._pg, placement_group_bundle_index=index
            ),
        )
        return actor_cls.remote(self.config.engine, self.config.model, self._engine_options(index))

    async def close(self) -> None:
        """Kill every replica and remove the placement group (frees its GPUs). Safe to call twice."""
        self._closed = True
        for task in list(self._replacing):
            task.cancel()

        async def stop(actor) -> None:
            with contextlib.suppress(Exception):  # a dead or hung replica must not stop the cleanup
                await asyncio.wait_for(_await(actor.close.remote()), 30)
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)

        await asyncio.gather(*(stop(slot.actor) for slot in self._slots if slot.actor is not None))
        for slot in self._slots:
            slot.actor, slot.state = None, "closed"
        if self._pg is not None:
            with contextlib.suppress(Exception):
                remove_placement_group(self._pg)
            self._pg = None
        if self._ready is not None:
            self._ready.set()  # wake anyone waiting for a replica: they will see the pool closed

    async def __aenter__(self) -> GenRMPool:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ---------------------------------------------------------------- requests

    async def complete(self, messages: Messages) -> JudgeReply:
        """The judge interface: one completion with the pool's default sampling."""
        reply = await self.generate(messages, self.config.sampling)
        return JudgeReply(
            text=reply.generation.text,
            finish_reason=reply.generation.finish_reason,
            latency_s=reply.latency_s,
            attempts=reply.attempts,
        )

    async def generate(
        self,
        messages: Messages,
        sampling: Sampling | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> PoolReply:
        sampling_dict = (sampling or self.config.sampling).to_dict()
        template_kwargs = dict(chat_template_kwargs) if chat_template_kwargs else None
        start = time.perf_counter()
        deadline = start + self.config.request_timeout_s
        lost: list[str] = []
        for attempt in range(1, self.config.max_attempts + 1):
            slot = await self._acquire(deadline, attempt)
            actor = slot.actor
            slot.outstanding += 1
            ref = actor.generate.remote(messages, sampling_dict, template_kwargs)
            try:
                result = await asyncio.wait_for(_await(ref), max(deadline - time.perf_counter(), 0.001))
            except asyncio.TimeoutError:
                ray.cancel(ref)
                raise JudgeTimeout(
                    self.endpoint, f"no reply within request_timeout_s={self.config.request_timeout_s}", attempt
                ) from None
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
            except RayActorError as exc:
                lost.append(f"replica {slot.index}: {type(exc).__name__}")
                # Unavailable may be transient (the node is unreachable for a moment): retry elsewhere,
                # replace only a replica that is known dead.
                if not isinstance(exc, ActorUnavailableError):
                    self._replace_later(slot, actor, exc)
                continue
            except RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                if isinstance(cause, ContextTooLong):
                    raise JudgeContextLengthError(self.endpoint, 400, str(cause), attempt) from None
                if isinstance(cause, RequestRejected):
                    raise JudgeRequestError(self.endpoint, str(cause), attempt) from None
                raise JudgeEngineError(self.endpoint, f"{type(cause).__name__}: {cause}", attempt) from None
            finally:
                slot.outstanding -= 1
            slot.served += 1
            return PoolReply(Generation(**result), time.perf_counter() - start, attempt, slot.index)
        raise JudgeConnectionError(
            self.endpoint, f"replicas died while serving this request ({'; '.join(lost)})", self.config.max_attempts
        )

    async def _acquire(self, deadline: float, attempt: int) -> _Slot:
        """The ready replica with the fewest requests outstanding (ties in turn); waits while all are
        being replaced."""
        while True:
            if self._closed:
                raise JudgeConnectionError(self.endpoint, "the pool is closed", attempt)
            ready = [s for s in self._slots if s.state == "ready"]
            if ready:
                fewest = min(s.outstanding for s in ready)
                candidates = [s for s in ready if s.outstanding == fewest]
                self._turn += 1
                return candidates[self._turn % len(candidates)]
            if self._slots and all(s.state == "failed" for s in self._slots):
                errors = "; ".join(f"replica {s.index}: {s.error}" for s in self._slots)
                raise JudgeConnectionError(self.endpoint, f"no live replica left ({errors})", attempt)
            if self._ready is None:
                raise JudgeConnectionError(self.endpoint, "the pool is not started: await pool.start()", attempt)
            self._ready.clear()
            remaining = deadline - time.perf_counter()
            try:
                await asyncio.wait_for(self._ready.wait(), max(remaining, 0.001))
            except asyncio.TimeoutError:
                raise JudgeTimeout(
                    self.endpoint,
                    f"no replica became ready within request_timeout_s={self.config.request_timeout_s}",
                    attempt,
                ) from None

    # ---------------------------------------------------------------- replacement

    def _replace_later(self, slot: _Slot, actor, cause: BaseException) -> None:
        if slot.actor is not actor or slot.state != "ready" or self._closed:
            return  # another request already noticed this replica died
        slot.state, slot.error = "replacing", _describe(cause)
        logger.warning("%s: replica %d died (%s); starting a replacement", self.endpoint, slot.index, slot.error)
        task = asyncio.get_running_loop().create_task(self._replace(slot, actor))
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _replace(self, slot: _Slot, dead_actor) -> None:
        with contextlib.suppress(Exception):
            ray.kill(dead_actor, no_restart=True)
        for restart in range(self.config.max_restarts):
            actor = self._spawn(slot.index)
            try:
                info = await asyncio.wait_for(_await(actor.ready.remote()), self.config.start_timeout_s)
            except (asyncio.TimeoutError, RayActorError, RayTaskError) as exc:
                slot.error = _describe(exc)
                logger.warning(
                    "%s: replacement %d of replica %d failed: %s", self.endpoint, restart + 1, slot.index, slot.error
                )
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
                await asyncio.sleep(min(2.0**restart, 30.0))
                continue
            if self._closed:
                ray.kill(actor, no_restart=True)
                return
            slot.actor, slot.info, slot.state, slot.error = actor, info, "ready", None
            slot.replacements += 1
            logger.warning("%s: replica %d replaced (pid %s)", self.endpoint, slot.index, info.get("pid"))
            self._ready.set()
            return
        slot.state = "failed"
        logger.error(
            "%s: replica %d given up after %d failed restarts", self.endpoint, slot.index, self.config.max_restarts
        )
        self._ready.set()  # let waiters see whether any replica is left

    # ---------------------------------------------------------------- introspection

    def health(self) -> dict[str, Any]:
        """Replica states as the pool sees them (no remote call)."""
        return {
            "model": self.config.name,
            "engine": self.config.engine,
            "device": self._device,
            "replicas": len(self._slots),
            "ready": sum(s.state == "ready" for s in self._slots),
            "slots": [
                {
                    "index": s.index,
                    "state": s.state,
                    "outstanding": s.outstanding,
                    "served": s.served,
                    "replacements": s.replacements,
                    "pid": s.info.get("pid"),
                    "node_id": s.info.get("node_id"),
                    "error": s.error,
                }
                for s in self._slots
            ],
        }

    async def replica_stats(self) -> list[dict[str, Any] | None]:
        """Each ready replica's engine counters (batches, tokens, ...); None for a replica not ready."""

        async def one(slot: _Slot):
            if slot.state != "ready":
                return None
            try:
                return await asyncio.wait_for(_await(slot.actor.stats.remote()), 30)
            except (asyncio.TimeoutError, RayActorError):
                return None

        return list(await asyncio.gather(*(one(s) for s in self._slots)))

    @property
    def max_model_len(self) -> int | None:
        lengths = [s.info.get("max_model_len") for s in self._slots if s.info.get("max_model_len")]
        return min(lengths) if lengths else None


async def _await(ref):
    """An ObjectRef as a coroutine (asyncio.wait_for and gather want one)."""
    return await ref


def _describe(error: BaseException) -> str:
    """A short cause for logs and errors: the engine's own message when a replica failed to load."""
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    text = str(error)
    for known in (EngineUnavailable, RequestRejected):
        name = known.__name__
        if name in text:  # Ray folds an actor's creation error into its ActorDiedError text
            text = text[text.index(name) :]
            break
    return f"{type(error).__name__}: {' '.join(text.split())[:600]}"


def _resources_summary(resources: Mapping[str, float]) -> str:
    keys = [k for k in ("CPU", "GPU", "memory") if k in resources]
    return ", ".join(f"{k}={resources[k]:g}" for k in keys) or "no resources"
