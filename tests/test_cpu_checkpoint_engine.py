"""The CPU backend's checkpoint engine (``gloo``): the trainer's weights reach every rollout replica whole,
whatever their size against the bucket, through the calls verl's CheckpointEngineManager makes (prepare,
build_topology, init_process_group, send/receive, finalize), again at every update. Each rank runs in a
thread of its own here, as each runs in a process of its own under verl. The engine under verl's trainers:
tests/test_trainer_cpu.py."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch

from writing_rl.cpu_backend.checkpoint_engine import GlooCheckpointEngine

BUCKET = 64  # bytes: most tensors below span several buckets


def weights(version: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(version)
    return {
        "embed.weight": torch.randn(7, 5, generator=generator),  # 140 bytes: three buckets
        "norm.weight": torch.randn(3, generator=generator),  # fits beside others in one bucket
        "proj.weight": torch.randn(4, 6, generator=generator).t(),  # not contiguous
        "half.weight": torch.randn(9, generator=generator).to(torch.bfloat16),
        "bias": torch.tensor([version], dtype=torch.int64),
    }


def run_ranks(*jobs) -> list:
    """Each job in a thread, all at once (a rank blocks until the others join); their results in order."""
    results, errors = [None] * len(jobs), []

    def run(index, job):
        try:
            results[index] = job()
        except BaseException as error:  # noqa: BLE001  (reported below, with the rank)
            errors.append((index, error))

    threads = [threading.Thread(target=run, args=(i, job), daemon=True) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a rank never finished"
    assert not errors, errors
    return results


def sync(actor_ranks: list[GlooCheckpointEngine], rollout: list[GlooCheckpointEngine], state: dict) -> list[dict]:
    """One update as verl's CheckpointEngineManager drives it; what each rollout rank received."""
    metadata = [engine.prepare() for engine in actor_ranks + rollout]
    actor_kwargs, rollout_kwargs = GlooCheckpointEngine.build_topology(len(actor_ranks), len(rollout), metadata)

    def init(engine, kwargs, index):
        return lambda: engine.init_process_group(**{key: values[index] for key, values in kwargs.items()})

    run_ranks(*(init(e, actor_kwargs, i) for i, e in enumerate(actor_ranks)),
              *(init(e, rollout_kwargs, i) for i, e in enumerate(rollout)))  # fmt: skip
    walked = []

    def send(engine):
        def produce():  # a generator every actor rank must walk, as FSDP's gathers are collective
            for name, tensor in state.items():
                walked.append((engine, name))
                yield name, tensor

        return lambda: asyncio.run(engine.send_weights(produce()))

    def receive(engine):
        async def collect():
            return {name: tensor.clone() async for name, tensor in engine.receive_weights()}

        return lambda: asyncio.run(collect())

    received = run_ranks(*(send(e) for e in actor_ranks), *(receive(e) for e in rollout))[len(actor_ranks) :]
    assert sorted(walked, key=lambda w: (id(w[0]), w[1])) == sorted(
        ((e, name) for e in actor_ranks for name in state), key=lambda w: (id(w[0]), w[1])
    )
    for engine in actor_ranks + rollout:
        engine.finalize()
    return received


@pytest.mark.parametrize("replicas", [1, 2])
def test_every_replica_gets_every_tensor_whole_at_every_update(replicas):
    actor_ranks = [GlooCheckpointEngine(BUCKET, is_master=True), GlooCheckpointEngine(BUCKET)]
    rollout = [GlooCheckpointEngine(BUCKET) for _ in range(replicas)]
    for version in (1, 2):  # a new group each update, as verl builds one before every sync
        state = weights(version)
        for got in sync(actor_ranks, rollout, state):
            assert list(got) == list(state)
            for name, tensor in state.items():
                assert got[name].dtype == tensor.dtype and got[name].shape == tensor.shape, name
                assert torch.equal(got[name], tensor), name


def test_a_rollout_rank_cannot_receive_outside_a_group():
    with pytest.raises(RuntimeError, match="before init_process_group"):
        asyncio.run(anext(GlooCheckpointEngine(BUCKET).receive_weights()))


def test_the_topology_needs_actor_rank_zero_to_hold_the_store():
    with pytest.raises(RuntimeError, match="actor rank 0"):
        GlooCheckpointEngine.build_topology(1, 1, [None, None])


def test_verl_finds_the_engine_by_its_name():
    from verl.checkpoint_engine import CheckpointEngineRegistry

    from writing_rl.cpu_backend.platform_name import CHECKPOINT_ENGINE

    assert CheckpointEngineRegistry.get(CHECKPOINT_ENGINE) is GlooCheckpointEngine
