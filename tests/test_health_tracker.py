"""Judge health reaches the tracker through verl's v1 trainer: our reward manager scores each sample through
verl's RewardLoopWorker the way the agent loop streams it, the scored trajectories go into the TransferQueue as
verl's AgentLoopOutput, ``JudgeHealthSampler`` (verl's replay buffer + health) samples them, and verl's
MetricsAggregator and ``Tracking`` (file backend) write the step's metrics, which the test reads back.

Needs TransferQueue (verl's ``verl-core`` extra, which the v1 trainer imports): skipped without it."""

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import ray

pytest.importorskip("transfer_queue")

import transfer_queue as tq  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput  # noqa: E402
from verl.trainer.ppo.v1.utils import MetricsAggregator  # noqa: E402
from verl.utils.tensordict_utils import list_of_dict_to_tensordict  # noqa: E402
from verl.utils.tracking import Tracking  # noqa: E402

from writing_rl.reward_loop.batch import build_reward_batch  # noqa: E402
from writing_rl.reward_loop.health.sampler import JudgeHealthSampler  # noqa: E402

from conftest import compose_writing_rl, reward_loop, writing_row  # noqa: E402
from judge_server import Reply  # noqa: E402
from offline_helpers import pair_of, verdict  # noqa: E402
from waiting import DEADLINE_S, wait_until  # noqa: E402

# Both orders judged per sample ("a plain story" is the reference). The good story wins both orders, the long
# bad one loses both, the lighthouse gets no verdict when the reference comes first, and the fox is shown to
# a judge that always prefers Response A (position-inconsistent).
RESPONSES = ["good story", "bad story bad story bad story bad story", "a lighthouse", "The quick brown fox"]


def scripted(request, index):
    a, b = pair_of(request)
    response_first = "plain" not in a
    policy = a if response_first else b
    if "good" in policy or "bad" in policy:
        wins = "good" in policy
        return verdict("A" if wins == response_first else "B")
    if "lighthouse" in policy and not response_first:
        return Reply(content="Both have merit.")
    return verdict("A")


@contextlib.contextmanager
def transfer_queue():
    # One storage unit: the controller and each unit hold a CPU, and the session's Ray has two.
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    try:
        yield
    finally:
        tq.close()


# Release: a minute of CI's 30; in CI tests/test_tracker_judge_metrics.py reads the judge/ metrics of a v1 trainer
# run (the tournament's) in verl's tracker.
@pytest.mark.release
def test_judge_health_reaches_the_tracker_on_the_v1_trainer(
    ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path, monkeypatch
):
    server = judge_server(script=scripted)
    config = compose_writing_rl(
        tokenizer_dir, server.base_url, "reward.custom_reward_function.reward_kwargs.strategy=both"
    )
    rows = [writing_row(i) for i in range(len(RESPONSES))]
    batch = build_reward_batch(tokenizer, rows, RESPONSES)
    with reward_loop(config) as manager:
        # The agent loop's streaming call: one sample to a reward worker's compute_score.
        results = ray.get([manager.reward_loop_workers[0].compute_score.remote(batch[i : i + 1]) for i in range(4)])

    # TransferQueue after the reward workers are placed (an actor needs a free CPU to start).
    with transfer_queue():
        uids = [f"p{i}" for i in range(4)]
        tq.kv_batch_put(
            keys=uids, partition_id="train", tags=[{"is_prompt": True, "status": "finished", "global_steps": 1}] * 4
        )
        fields = []
        for i, result in enumerate(results):
            output = AgentLoopOutput(
                prompt_ids=[1, 2, 3],
                response_ids=tokenizer.encode(RESPONSES[i]),
                response_mask=[1] * len(tokenizer.encode(RESPONSES[i])),
                reward_score=result["reward_score"],
                extra_fields={"reward_extra_info": result["reward_extra_info"]},
                metrics=AgentLoopMetrics(),
            )
            fields.append(output.as_dict())
        tq.kv_batch_put(
            keys=[f"{uid}_0_0" for uid in uids],
            partition_id="train",
            fields=list_of_dict_to_tensordict(fields),
            tags=[{"status": "success", "global_steps": 1, "min_global_steps": 1, "max_global_steps": 1}] * 4,
        )

        sampler = JudgeHealthSampler(
            trainer_mode="sync",
            trainer_config={},
            max_off_policy_threshold=None,
            max_off_policy_strategy="drop",
            sampler_kwargs={},
        )
        # verl's sample() polls until the batch is there (it is): the deadline only bounds a failing test.
        with ThreadPoolExecutor(1) as pool:
            call = pool.submit(sampler.sample, global_steps=1, partition_id="train", batch_size=4)
            sampled, metrics = call.result(timeout=DEADLINE_S)
        assert len(sampled.keys) == 4
    aggregator = MetricsAggregator()
    aggregator.add_step_metrics(metrics, sample_count=4)

    log = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(log))
    tracker = Tracking(project_name="p", experiment_name="e", default_backend=["file"], config={})
    tracker.log(data=aggregator.get_aggregated_metrics(), step=1)
    tracker.finish()

    logged = json.loads(log.read_text().splitlines()[0])
    assert logged["step"] == 1
    data = logged["data"]
    assert data["judge/samples_total"] == 4
    assert data["judge/calls_total"] == 8
    assert data["judge/parse_error_rate"] == 0.25
    assert data["judge/error_rate"] == 0.0
    # The good and bad stories are judged consistently, the fox not; the lighthouse has one unreadable order.
    assert data["judge/position_consistency"] == pytest.approx(2 / 3)
    assert data["judge/latency_p95_s"] >= data["judge/latency_p50_s"] > 0
    # The long response lost: length and reward are negatively correlated.
    assert data["judge/reward_length_corr"] < 0


@pytest.mark.parametrize(
    "mode, expected", [("sync", "JudgeHealthReplayBuffer"), ("async", "JudgeHealthReplayBufferAsync")]
)
def test_verl_builds_the_sampler_from_the_config(tokenizer_dir, mode, expected):
    from types import SimpleNamespace

    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    config = compose_writing_rl(
        tokenizer_dir,
        "http://127.0.0.1:9/v1",
        "trainer.v1.sampler.custom_sampler.path=pkg://writing_rl.reward_loop.health.sampler",
        "trainer.v1.sampler.custom_sampler.name=JudgeHealthSampler",
    )
    # verl's own builder, on a trainer of the given mode (only the attributes it reads).
    trainer = SimpleNamespace(config=config, trainer_mode=mode, _add_prompts_to_generate=lambda n: n)
    buffer = PPOTrainer._build_replay_buffer(trainer)
    assert type(buffer).__name__ == expected
    assert buffer.trainer_mode == mode and buffer.refill_fn(3) == 3


def put_group(uid: str, status: str, judge_calls: list[int], tokenizer, global_steps: int = 1) -> None:
    """A prompt group as verl's v1 agent loop leaves it in the TransferQueue: its status, its scored rollouts."""
    tq.kv_put(key=uid, partition_id="train", tag={"is_prompt": True, "status": status, "global_steps": global_steps})
    response = tokenizer.encode("a story")
    fields = [
        AgentLoopOutput(
            prompt_ids=[1, 2, 3],
            response_ids=response,
            response_mask=[1] * len(response),
            reward_score=1.0,
            extra_fields={"reward_extra_info": {"judge_calls": calls, "judge_error": 0}},
            metrics=AgentLoopMetrics(),
        ).as_dict()
        for calls in judge_calls
    ]
    tags = {"status": "success", "global_steps": global_steps, "min_global_steps": 1, "max_global_steps": 1}
    tq.kv_batch_put(
        keys=[f"{uid}_{i}_0" for i in range(len(judge_calls))],
        partition_id="train",
        fields=list_of_dict_to_tensordict(fields),
        tags=[tags] * len(judge_calls),
    )


def async_sampler(**kwargs):
    """What verl builds for an async trainer mode, dropping groups more than one step stale."""
    return JudgeHealthSampler(
        trainer_mode="async",
        trainer_config={},
        max_off_policy_threshold=1,
        max_off_policy_strategy="drop",
        sampler_kwargs={},
        **kwargs,
    )


def wait_for(call):
    """``call()``'s first non-empty answer."""
    answers = []
    assert wait_until(lambda: answers.append(call()) or answers[-1])
    return answers[-1]


def test_groups_verl_evicts_untrained_report_their_judge_calls_and_take_their_curriculum_move_back(
    ray_cluster, tokenizer, tmp_path
):
    """verl's async replay buffer evicts a failed group and a stale one (judged, never trained): the step's
    metrics count their samples and judge calls, and the level the stale group moved goes back down."""
    from curriculum_helpers import settings

    from writing_rl.curriculum.scheduler import get_or_create_scheduler

    scheduler = get_or_create_scheduler(settings(tmp_path))
    try:
        assert ray.get(scheduler.batch.remote([("pin", "7", 3, "stale", 2, 60.0)])) == [0]
        assert ray.get(scheduler.batch.remote([("report", "stale", True, 0.0)] * 2)) == [False, True]
        with transfer_queue():
            put_group("trained", "finished", [2, 2], tokenizer, global_steps=3)
            put_group("failed", "failure", [2], tokenizer, global_steps=3)
            put_group("stale", "finished", [1, 3], tokenizer, global_steps=1)
            refilled = []
            sampler = async_sampler(refill_fn=refilled.append)
            with ThreadPoolExecutor(1) as pool:
                call = pool.submit(sampler.sample, global_steps=3, partition_id="train", batch_size=1)
                sampled, metrics = call.result(timeout=DEADLINE_S)
        assert sorted(sampled.keys) == ["trained_0_0", "trained_1_0"] and refilled == [2]
        assert metrics["judge/samples_total"] == 2 and metrics["judge/calls_total"] == 4
        assert metrics["judge/dropped_samples_total"] == 3 and metrics["judge/dropped_calls_total"] == 6
        # The scheduler's answer is not waited for: it is counted in this step's metrics or a later one's.
        assert wait_until(lambda: ray.get(scheduler.snapshot.remote())["levels"] == {"7": 0})
        withdrawn = metrics.get("curriculum/withdrawn_advances_total") or sum(wait_for(sampler.withdrawn).values())
        assert withdrawn == 1
    finally:
        ray.kill(scheduler)


def test_only_stale_and_failed_groups_take_their_curriculum_move_back():
    """A DAPO-filtered Writing-RL group is one whose every rollout beat its reference: filtered for having
    no signal, and exactly the group that should move its prompt on. Its move stays."""
    from collections import Counter

    sampler = async_sampler(refill_fn=lambda n: n, filter_groups_metric="reward")
    withdrawn, cleared = [], []
    sampler._withdraw = withdrawn.append
    sampler._clear_groups = lambda partition, uids: cleared.append(sorted(uids))
    sampler._evict_terminal_groups(3, "train", (set(), {"all-won"}, set(), Counter({1.0: 1})))
    sampler._evict_terminal_groups(3, "train", ({"stale"}, {"all-won"}, {"failed"}, Counter({1.0: 1})))
    assert withdrawn == [["failed", "stale"]]
    assert cleared == [["all-won"], ["all-won", "failed", "stale"]]
