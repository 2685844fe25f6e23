"""The GenRM pool on CPU with a tiny random Qwen2: the hf engine's batching in-process, then the Ray
pool (routing, replicas killed mid-request, start errors, the OpenAI SDK through serve-judge's server,
clean shutdown). The pool tests share one pool and run in file order; the last one closes it."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading

import pytest
import ray

from writing_rl.genrm.engine import ContextTooLong, RequestRejected, Sampling
from writing_rl.genrm.hf_engine import RAISE_CAP_AFTER, HFEngine
from writing_rl.genrm.pool import GenRMPool
from writing_rl.genrm.pool_config import PoolConfig, PoolStartError
from writing_rl.genrm.requests import resolve_max_tokens
from writing_rl.judge.errors import JudgeContextLengthError, JudgeError, context_length_numbers, is_context_length_error

from genrm_helpers import PROMPTS, LoopThread, direct_greedy, gather, start_site
from tiny import build_tiny_qwen2
from waiting import until, wait_until

MAX_NEW = 24


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tokenizer_dir):
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny-judge") / "model", tokenizer_dir)


@pytest.fixture(scope="module")
def expected(model_dir):
    return direct_greedy(model_dir, PROMPTS, MAX_NEW)


@pytest.fixture(scope="module")
def engine(model_dir):
    return HFEngine(str(model_dir), max_batch_size=8)


def test_reference_outputs_are_distinct_and_show_both_finish_reasons(expected):
    # Guards the fixtures: identical outputs would make every comparison below vacuous.
    assert len({e["text"] for e in expected}) == len(expected)
    assert {e["finish_reason"] for e in expected} == {"stop", "length"}


@pytest.mark.parametrize(
    "max_tokens, prompt_tokens, max_model_len, default, want",
    [
        (None, 10, 100, 4096, 90),  # default clipped to the room left
        (None, 10, 100, 16, 16),
        (90, 10, 100, 4096, 90),
        (91, 10, 100, 4096, "you requested 101 tokens"),  # explicit budget must fit
        (None, 100, 100, 4096, "maximum context length is 100 tokens, but the prompt has 100"),  # no room at all
    ],
)
def test_resolve_max_tokens(max_tokens, prompt_tokens, max_model_len, default, want):
    sampling = Sampling(max_tokens=max_tokens)
    if isinstance(want, int):
        assert resolve_max_tokens(sampling, prompt_tokens, max_model_len, default) == want
    else:
        with pytest.raises(ContextTooLong, match=want) as info:
            resolve_max_tokens(sampling, prompt_tokens, max_model_len, default)
        # worded so that every judge client of ours recognises a configuration error, with its numbers
        assert is_context_length_error(400, str(info.value))
        numbers = context_length_numbers(str(info.value))
        assert (numbers["max_context"], numbers["prompt_tokens"]) == (max_model_len, prompt_tokens)
        assert numbers["completion_tokens"] == max_tokens


def test_hf_engine_batches_queued_requests_and_matches_one_at_a_time(engine, expected):
    async def scenario():
        before = engine.stats()
        # All 12 are queued before the batching task runs: two generate calls (8 + 4), not 12.
        replies = await asyncio.gather(*(engine.generate(m, Sampling(max_tokens=MAX_NEW)) for m in PROMPTS))
        return before, engine.stats(), replies

    before, after, replies = asyncio.run(scenario())
    assert after["batches"] - before["batches"] == 2
    assert after["largest_batch"] == 8
    assert [r.to_dict() for r in replies] == expected


def test_hf_engine_stop_token_from_generation_config(engine, model_dir, tmp_path, expected):
    # Make the token the model emits first for PROMPTS[0] a stop token: generation must end right there.
    first_token = engine.tokenizer(expected[0]["text"], add_special_tokens=False)["input_ids"][0]
    stopping = tmp_path / "model"
    shutil.copytree(model_dir, stopping)
    config = json.loads((stopping / "generation_config.json").read_text())
    config["eos_token_id"] = [config["eos_token_id"], first_token]
    (stopping / "generation_config.json").write_text(json.dumps(config))

    reply = asyncio.run(HFEngine(str(stopping)).generate(PROMPTS[0], Sampling(max_tokens=MAX_NEW)))
    assert (reply.text, reply.finish_reason, reply.completion_tokens) == ("", "stop", 1)


def test_hf_engine_rejects_what_cannot_fit(model_dir):
    small = HFEngine(str(model_dir), max_model_len=64)
    with pytest.raises(RequestRejected, match="maximum context length is 64 tokens, but the prompt has"):
        asyncio.run(small.generate([{"role": "user", "content": "lighthouse " * 100}], Sampling()))
    with pytest.raises(RequestRejected, match=r"\(\d+ in the messages, 200 in the completion\)"):
        asyncio.run(small.generate(PROMPTS[0], Sampling(max_tokens=200)))


def test_hf_engine_seeded_sampling_is_reproducible(engine):
    sampled = Sampling(max_tokens=MAX_NEW, temperature=1.0, seed=7)

    async def twice():
        return await asyncio.gather(engine.generate(PROMPTS[3], sampled), engine.generate(PROMPTS[3], sampled))

    first, second = asyncio.run(twice())
    assert first == second


class ScriptedGenerate:
    """Wraps ``model.generate``: ``fail(rows, call)`` returns the exception a call raises (or None).
    With ``hold=True`` each call first waits for ``release`` (a slow failing generate, whose length
    the test decides); ``started`` is set once a call is running."""

    def __init__(self, generate, fail, hold: bool = False):
        self.generate, self.fail, self.sizes = generate, fail, []
        self.started, self.release = threading.Event(), threading.Event()
        if not hold:
            self.release.set()

    def __call__(self, input_ids, **kwargs):
        self.sizes.append(len(input_ids))
        self.started.set()
        assert self.release.wait(timeout=120), "the test never released generate"
        error = self.fail(len(input_ids), len(self.sizes))
        if error is not None:
            raise error
        return self.generate(input_ids=input_ids, **kwargs)


def out_of_memory_above(rows: int):
    import torch

    return lambda n, call: (
        torch.OutOfMemoryError(f"CUDA out of memory (scripted above {rows} rows)") if n > rows else None
    )


def test_hf_engine_halves_a_batch_that_runs_out_of_memory(model_dir, expected):
    engine = HFEngine(str(model_dir), max_batch_size=8)
    engine.model.generate = ScriptedGenerate(engine.model.generate, out_of_memory_above(2))

    replies = asyncio.run(gather_all(engine, PROMPTS))
    assert [r.to_dict() for r in replies] == expected  # every answer, the same as one at a time
    # 8 -> 4 + 4 -> 2 + 2 + 2 + 2 (3 halvings; the size limit falls to 2), then the last 4 as 2 + 2
    assert engine.model.generate.sizes == [8, 4, 2, 2, 4, 2, 2, 2, 2]
    stats = engine.stats()
    assert stats["oom_splits"] == 3 and stats["largest_batch"] == 2 and stats["requests"] == len(PROMPTS)
    assert stats["batch_cap"] == 2

    # Memory is back: after RAISE_CAP_AFTER full batches of 2 the limit grows to 3, and so on.
    engine.model.generate = engine.model.generate.generate
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(2 * RAISE_CAP_AFTER)]
    asyncio.run(gather_all(engine, prompts))
    assert engine.stats()["batch_cap"] == 3
    asyncio.run(gather_all(engine, PROMPTS[:3]))
    assert engine.stats()["largest_batch"] == 3


async def gather_all(engine, prompts):
    return await asyncio.gather(*(engine.generate(m, Sampling(max_tokens=MAX_NEW)) for m in prompts))


def test_hf_engine_fails_alone_a_request_that_does_not_fit(model_dir, expected):
    engine = HFEngine(str(model_dir), max_batch_size=8)
    engine.model.generate = ScriptedGenerate(engine.model.generate, out_of_memory_above(0))
    with pytest.raises(RuntimeError, match="out of memory generating a batch of 1"):
        asyncio.run(engine.generate(PROMPTS[0], Sampling(max_tokens=MAX_NEW)))
    engine.model.generate = engine.model.generate.generate  # memory is back: the engine still serves
    assert asyncio.run(engine.generate(PROMPTS[0], Sampling(max_tokens=MAX_NEW))).to_dict() == expected[0]


def test_hf_engine_split_halves_fail_on_their_own(model_dir, expected):
    import torch

    def fail(rows, call):  # the batch of 8 runs out of memory; its second half hits another error
        if rows == 8:
            return torch.OutOfMemoryError("CUDA out of memory")
        return ValueError("device-side assert") if call == 3 else None

    engine = HFEngine(str(model_dir), max_batch_size=8)
    engine.model.generate = ScriptedGenerate(engine.model.generate, fail)

    async def scenario():
        calls = (engine.generate(m, Sampling(max_tokens=MAX_NEW)) for m in PROMPTS[:8])
        return await asyncio.gather(*calls, return_exceptions=True)

    replies = asyncio.run(scenario())
    assert engine.model.generate.sizes == [8, 4, 4]
    assert [r.to_dict() for r in replies[:4]] == expected[:4]  # the half that ran keeps its answers
    assert all(isinstance(r, ValueError) for r in replies[4:])


def test_hf_engine_does_not_generate_for_requests_cancelled_during_a_split(model_dir, expected):
    engine = HFEngine(str(model_dir), max_batch_size=8)
    scripted = engine.model.generate = ScriptedGenerate(engine.model.generate, out_of_memory_above(2), hold=True)

    async def scenario():
        tasks = [asyncio.ensure_future(engine.generate(m, Sampling(max_tokens=MAX_NEW))) for m in PROMPTS[:8]]
        await until(scripted.started.is_set)  # inside the first generate call, the one that runs out of memory
        for task in tasks[4:]:
            task.cancel()
        scripted.release.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    replies = asyncio.run(scenario())
    assert [r.to_dict() for r in replies[:4]] == expected[:4]
    assert all(isinstance(r, asyncio.CancelledError) for r in replies[4:])
    assert engine.model.generate.sizes == [8, 4, 2, 2]  # nothing generated for the cancelled half


@pytest.mark.parametrize(
    "error, oom",
    [
        (MemoryError(), True),
        (RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"), True),
        (RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"), True),
        (RuntimeError("CUDA error: device-side assert triggered"), False),
        (ValueError("out of memory"), False),  # not an allocator's error type
    ],
)
def test_is_out_of_memory(error, oom):
    from writing_rl.genrm.hf_engine import is_out_of_memory

    assert is_out_of_memory(error) is oom


# ---------------------------------------------------------------- the Ray pool


@pytest.fixture(scope="module")
def pool(ray_cluster, model_dir):
    """Two replicas of the tiny model, living in one event loop for the module."""
    runner = LoopThread()
    config = PoolConfig(model=str(model_dir), engine="hf", replicas=2, num_cpus=0.5, default_max_tokens=MAX_NEW)
    pool = runner.run(GenRMPool(config).start())
    yield runner, pool
    runner.run(pool.close())
    runner.stop()


def test_pool_answers_concurrent_requests_like_direct_generate(pool, expected):
    runner, genrm = pool
    replies = runner.run(gather(*(genrm.generate(m, Sampling(max_tokens=MAX_NEW)) for m in PROMPTS)))
    assert [r.generation.to_dict() for r in replies] == expected
    assert all(r.attempts == 1 for r in replies)
    # Least-outstanding routing spreads a burst evenly over both replicas.
    assert sorted(s["served"] for s in genrm.health()["slots"]) == [6, 6]
    stats = runner.run(genrm.replica_stats())
    assert sum(s["requests"] for s in stats) >= len(PROMPTS)

    judge_reply = runner.run(genrm.complete(PROMPTS[1]))  # the judge interface: greedy, default budget
    assert (judge_reply.text, judge_reply.finish_reason) == (expected[1]["text"], expected[1]["finish_reason"])


def test_pool_request_errors_are_typed_and_not_retried(pool):
    runner, genrm = pool
    with pytest.raises(JudgeContextLengthError) as info:  # the same error an HTTP judge gives
        runner.run(genrm.generate(PROMPTS[0], Sampling(max_tokens=10**6)))
    assert info.value.attempts == 1 and info.value.completion_tokens == 10**6 and info.value.max_context
    assert "context length exceeded, a configuration error" in str(info.value)
    assert isinstance(info.value, JudgeError)
    assert genrm.health()["ready"] == 2


def test_replicas_killed_mid_request_are_replaced_and_requests_retried(pool):
    runner, genrm = pool
    before = {s["index"]: s["pid"] for s in genrm.health()["slots"]}
    burst = gather(*(genrm.generate(m, Sampling(max_tokens=120)) for m in PROMPTS))
    future = asyncio.run_coroutine_threadsafe(burst, runner.loop)
    actors = [slot.actor for slot in genrm._slots]

    def both_busy() -> bool:
        return all(ray.get(actor.stats.remote())["in_flight"] for actor in actors)

    # Kill both replicas while each holds part of the burst: every request must be retried, and the
    # retries can only succeed on the replacements.
    assert wait_until(both_busy, 60), "the burst never reached both replicas"
    for actor in actors:
        ray.kill(actor, no_restart=True)

    replies = future.result(timeout=180)
    assert len(replies) == len(PROMPTS) and all(r.generation.completion_tokens > 0 for r in replies)
    # The requests the killed replicas held were retried on the replacements. (Not all twelve: under load a
    # request may finish, or still wait in the pool's queue, when the kill lands; those take one attempt.)
    assert any(r.attempts >= 2 for r in replies)
    # The retries may all have been served by the first replacement up; the other one is still loading.
    assert wait_until(lambda: genrm.health()["ready"] == 2, 180), genrm.health()
    health = genrm.health()
    for slot in health["slots"]:
        assert slot["state"] == "ready" and slot["replacements"] == 1 and slot["pid"] != before[slot["index"]]
    again = runner.run(gather(*(genrm.generate(m, Sampling(max_tokens=4)) for m in PROMPTS[:4])))
    assert {r.replica for r in again} == {0, 1} and all(r.attempts == 1 for r in again)


def test_start_errors_name_the_cause(ray_cluster, tmp_path):
    with pytest.raises(PoolStartError, match="needs GPUs"):
        asyncio.run(GenRMPool(PoolConfig(model="/models/genrm", engine="vllm")).start())
    with pytest.raises(PoolStartError, match="replica 0 .* failed to start") as info:
        asyncio.run(GenRMPool(PoolConfig(model=str(tmp_path / "missing"), num_cpus=0.5)).start())
    assert "missing" in str(info.value)
    with pytest.raises(ValueError, match="tensor_parallel_size > 1 needs engine=vllm"):
        PoolConfig(model="m", tensor_parallel_size=2).validate()


def test_openai_sdk_through_serve_judge_on_the_pool(pool, expected):
    """The OpenAI client library against JudgeServer in front of the real pool."""
    from openai import OpenAI

    from writing_rl.genrm.server import JudgeServer

    runner, genrm = pool
    server = JudgeServer(genrm, "tiny-judge")
    server.ready = True
    site_runner, port = runner.run(start_site(server.app()))
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["tiny-judge"]
        completion = client.chat.completions.create(
            model="tiny-judge", messages=PROMPTS[5], max_tokens=MAX_NEW, temperature=0
        )
        choice = completion.choices[0]
        assert choice.message.content == expected[5]["text"]
        assert choice.finish_reason == expected[5]["finish_reason"]
        assert completion.usage.prompt_tokens == expected[5]["prompt_tokens"]
        assert completion.usage.completion_tokens == expected[5]["completion_tokens"]
    finally:
        runner.run(site_runner.cleanup())


def test_close_frees_the_reserved_resources(pool):
    """Runs last in this module: closes the module's pool (the fixture's own close is then a no-op)."""
    runner, genrm = pool

    def cpus() -> float:
        return ray.available_resources().get("CPU", 0.0)

    held = cpus()
    runner.run(genrm.close())
    assert wait_until(lambda: cpus() >= held + 1.0, 20), f"{cpus()} CPUs free after close, {held} before"
    with pytest.raises(JudgeError, match="closed"):
        runner.run(genrm.complete(PROMPTS[0]))


def test_a_burst_reaching_an_idle_queue_is_answered_together_not_its_first_request_alone(engine):
    """The first request of a burst waits ``fill_wait_s`` for the rest (they reach a replica one by one); without
    the wait it would be generated alone and the burst would wait for it (bench/serve_judge_vs_generate.py)."""
    from writing_rl.genrm.batching import BatchQueue
    from writing_rl.genrm.hf_engine import FILL_WAIT_S

    assert engine._batches._fill_wait_s == FILL_WAIT_S > 0

    async def burst(fill_wait_s: float) -> list[list[int]]:
        sizes = []

        class Request:
            def __init__(self):
                self.future = asyncio.get_running_loop().create_future()

        queue = BatchQueue(lambda batch, request: True, lambda batch: sizes.append(len(batch)) or [0] * len(batch),
                           fill_wait_s=fill_wait_s)  # fmt: skip
        first = asyncio.ensure_future(queue.submit(Request()))
        # the first request is queued; without a wait the worker takes it alone before the others arrive
        await until(lambda: queue._queue if fill_wait_s else (queue._worker is not None and not queue._queue))
        await asyncio.gather(first, queue.submit(Request()), queue.submit(Request()))
        return sizes

    assert asyncio.run(burst(fill_wait_s=2.0)) == [3]
    assert asyncio.run(burst(fill_wait_s=0.0)) == [1, 2]  # what the wait is for
