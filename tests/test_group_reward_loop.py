"""Integration: BRPO through hydra_configs/brpo.yaml, GroupRewardManager and verl's real reward loop."""

import copy
import os
import random
import signal
import time
import uuid

import pytest
import ray

from reward_fns.brpo import choose_references
from writing_rl.judge import SampleJudge
from writing_rl.offline.compose import compose
from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.reward_loop.group.collector import collector_name
from writing_rl.reward_loop.results import FN_DEFAULTS, GROUP_KEYS

from conftest import reward_loop
from judge_server import ScriptedJudgeServer, quality
from waiting import wait_until

N = 3  # rollouts per prompt


@pytest.fixture(scope="module")
def server():
    with ScriptedJudgeServer(latency_s=0.01) as s:
        yield s


@pytest.fixture(scope="module")
def manager(ray_cluster, server, tokenizer_dir):
    config = compose(
        "brpo",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.reward_kwargs.judge.base_url={server.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            "reward.num_workers=2",
            f"actor_rollout_ref.rollout.n={N}",
            "actor_rollout_ref.rollout.val_kwargs.n=1",
            "reward.reward_kwargs.groups.timeout_s=5",
            # Groups here hold distinct responses, so they seal once complete; a padded copy that comes
            # first never seals a group early, however slow the machine.
            "reward.reward_kwargs.groups.settle_s=60",
        ],
    )
    with reward_loop(config) as m:
        yield m


def wait_for_actor(name, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return ray.get_actor(name)
        except ValueError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def collector_recovered() -> bool:
    """The run's collector answers again, or its name is free (the next batch then creates a new one)."""
    try:
        collector = ray.get_actor(collector_name())
    except ValueError:
        return True
    try:
        ray.get(collector.stats.remote(), timeout=10)
        return True
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return False


def collector_joins() -> int:
    """Members the run's collector has received so far (0 before it exists)."""
    try:
        return ray.get(ray.get_actor(collector_name()).stats.remote())["joined"]
    except ValueError:
        return 0


def group_rows(uid, texts, split="train"):
    prompt = "Write a toast for a wedding."
    row = {
        "data_source": "writing",
        "prompt": [{"role": "user", "content": prompt}],
        "reward_model": {"ground_truth": {"prompt": prompt}},
        "extra_info": {"index": 0, "split": split},
    }
    return [row] * len(texts), list(texts), [uid] * len(texts)


def make_batch(tokenizer, groups):
    rows, texts, uids = [], [], []
    for uid, group_texts in groups:
        r, t, u = group_rows(uid, group_texts)
        rows += r
        texts += t
        uids += u
    return build_reward_batch(tokenizer, rows, texts, uids), texts, uids


def expected_rewards(groups):
    """What BRPO must give: sign(quality - quality of the group's reference), 0 for the reference."""
    rewards = []
    for uid, texts in groups:
        (reference,) = choose_references(list(dict.fromkeys(texts)), 1, seed=0, uid=uid)
        for text in texts:
            diff = quality(text) - quality(reference)
            rewards.append(0.0 if text == reference else float((diff > 0) - (diff < 0)))
    return rewards


def new_groups(count):
    variants = ["good toast", "bad toast", "plain toast", "good good toast", "bad bad toast", "fine toast"]
    rng = random.Random(count)
    return [(str(uuid.uuid4()), rng.sample(variants, N)) for _ in range(count)]


def test_colocated_groups_straddle_workers_and_padding_is_harmless(manager, server, tokenizer):
    # 3 groups x 3 rollouts = 9 samples over 2 workers: chunks of 5 after verl pads with a copy of
    # sample 0, so the middle group is split between the workers.
    groups = new_groups(3)
    batch, _, _ = make_batch(tokenizer, groups)
    before = len(server.requests)
    joined_before = collector_joins()
    output = manager.compute_rm_score(batch)
    assert output.batch["rm_scores"].sum(-1).tolist() == expected_rewards(groups)
    extra = output.non_tensor_batch
    assert extra["group_size"].tolist() == [N] * 9
    assert extra["partial_group"].tolist() == [0] * 9 and extra["late_member"].tolist() == [0] * 9
    assert [extra["is_reference"][i : i + N].sum() for i in range(0, 9, N)] == [1, 1, 1]
    assert extra["position_consistent"].tolist() == [-1 if r else 1 for r in extra["is_reference"]]
    # (n - 1) candidates x 2 orders per group; the padded copy made no extra call
    assert len(server.requests) - before == 3 * (N - 1) * 2
    # Groups 0 and 2 were whole in one worker and scored there: only the split group's 3 members and
    # the padded copy of sample 0 went to the collector.
    collector = wait_for_actor(collector_name())
    assert ray.get(collector.stats.remote())["joined"] - joined_before == 3 + 1
    # the schema of writing_rl/reward_loop/results.py is what verl receives
    schema = {*FN_DEFAULTS, *SampleJudge.METRIC_KEYS, *GROUP_KEYS}
    assert set(output.meta_info["reward_extra_keys"]) >= {"is_reference", "verdict", *schema}


def test_streaming_per_sample_calls_in_random_order(manager, tokenizer):
    groups = new_groups(4)
    batch, _, _ = make_batch(tokenizer, groups)
    order = list(range(len(batch)))
    random.Random(7).shuffle(order)
    rng = random.Random(8)
    refs = {}
    for i in order:
        refs[i] = rng.choice(manager.reward_loop_workers).compute_score.remote(batch[i : i + 1])
        time.sleep(rng.random() * 0.05)  # rollouts finish at different times
    results = [ray.get(refs[i]) for i in range(len(batch))]
    assert [r["reward_score"] for r in results] == expected_rewards(groups)
    assert len({frozenset(r["reward_extra_info"]) for r in results}) == 1


def test_duplicate_member_after_completion_gets_the_same_result(manager, tokenizer):
    groups = new_groups(1)
    batch, _, _ = make_batch(tokenizer, groups)
    workers = manager.reward_loop_workers
    first = ray.get([workers[i % 2].compute_score.remote(batch[i : i + 1]) for i in range(N)])
    again = ray.get(workers[1].compute_score.remote(batch[1:2]))
    assert again["reward_score"] == first[1]["reward_score"]
    assert again["reward_extra_info"] == first[1]["reward_extra_info"]


def test_a_group_that_never_completes_pays_each_member_a_counted_loss(manager, tokenizer):
    # verl aborted the third rollout (or a filter dropped it): the two that arrived wait groups.timeout_s,
    # then each is a named, counted failure paid BRPO's loss (-1), with no judge call; the step goes on.
    groups = [(str(uuid.uuid4()), ["good toast", "bad toast"])]  # 2 of the 3 expected rollouts
    batch, _, _ = make_batch(tokenizer, groups)
    results = ray.get([manager.reward_loop_workers[i].compute_score.remote(batch[i : i + 1]) for i in range(2)])
    assert [r["reward_score"] for r in results] == [-1.0, -1.0]
    for result in results:
        info = result["reward_extra_info"]
        assert info["group_incomplete"] == 1 and info["judge_calls"] == 0 and info["judge_error"] == 0
        assert info["partial_group"] == 0 and "is_reference" in info  # the fn's own keys, as every sample
    # The next group is scored as usual.
    groups = new_groups(1)
    batch, _, _ = make_batch(tokenizer, groups)
    results = ray.get([manager.reward_loop_workers[i % 2].compute_score.remote(batch[i : i + 1]) for i in range(N)])
    assert [r["reward_score"] for r in results] == expected_rewards(groups)
    assert [r["reward_extra_info"]["group_incomplete"] for r in results] == [0] * N


def test_validation_rows_use_the_validation_group_size(manager, tokenizer):
    rows, texts, uids = group_rows(str(uuid.uuid4()), ["good toast"], split="test")
    batch = build_reward_batch(tokenizer, rows, texts, uids)
    result = ray.get(manager.reward_loop_workers[0].compute_score.remote(batch[0:1]))
    info = result["reward_extra_info"]
    assert info["group_size"] == 1 and info["partial_group"] == 0 and info["is_reference"] == 1


@pytest.mark.parametrize("how", ["ray.kill", "kill -9"])
def test_a_dead_collector_fails_the_step_and_is_recreated(manager, tokenizer, how):
    groups = new_groups(1)
    batch, _, _ = make_batch(tokenizer, groups)
    joined = collector_joins()
    waiting = manager.reward_loop_workers[0].compute_score.remote(batch[0:1])  # 1 of 3: waits
    assert wait_until(lambda: collector_joins() > joined)  # the member is waiting in the collector
    collector = wait_for_actor(collector_name())
    if how == "ray.kill":
        ray.kill(collector, no_restart=True)
    else:  # a crash: Ray restarts the collector under the same name
        os.kill(ray.get(collector.__ray_call__.remote(lambda actor: os.getpid())), signal.SIGKILL)
    with pytest.raises(ray.exceptions.RayTaskError, match="collector died"):
        ray.get(waiting, timeout=120)
    # The next step (minutes later in training) finds the collector again: restarted after a crash, or
    # gone from Ray's registry (its owner let go of it), so that the next batch creates a new one.
    del collector
    assert wait_until(collector_recovered)
    groups = new_groups(1)
    batch, _, _ = make_batch(tokenizer, groups)
    results = ray.get([manager.reward_loop_workers[i % 2].compute_score.remote(batch[i : i + 1]) for i in range(N)])
    assert [r["reward_score"] for r in results] == expected_rewards(groups)


@pytest.fixture(scope="module")
def brpo_preset(tokenizer_dir):
    return compose(
        "brpo", [f"actor_rollout_ref.model.path={tokenizer_dir}", "reward.reward_kwargs.judge.base_url=http://j:1/v1"]
    )


@pytest.mark.parametrize(
    "changes, needed_workers",
    [
        ({}, None),  # the preset: 64 prompts x 8 rollouts over 8 reward workers
        ({"data.train_batch_size": 1024}, 11),  # 8192 waiting rollouts: 1024 per worker > Ray's 1000 slots
        ({"data.train_batch_size": 1024, "reward.num_workers": 11}, None),
        ({"data.train_batch_size": 256, "data.gen_batch_size": 1024}, 11),
        ({"data.train_batch_size": 1024, "reward.reward_model.enable": True}, None),  # colocated: one call per chunk
        (
            {
                "data.train_batch_size": 1024,
                "reward.reward_model.enable": True,
                "reward.reward_model.enable_resource_pool": True,
            },
            11,
        ),
        ({"data.val_batch_size": 2000, "actor_rollout_ref.rollout.val_kwargs.n": 4}, 10),  # validation groups wait too
        ({"data.val_batch_size": 20000}, None),  # groups of one (val_kwargs.n=1) never wait
    ],
)
def test_streaming_group_rewards_need_a_worker_slot_per_waiting_rollout(brpo_preset, changes, needed_workers):
    # Reproduced on verl's loop: 1001 groups of 2 on one worker -> 1000 partial groups and 1000 late members.
    from omegaconf import OmegaConf, open_dict

    from writing_rl.reward_loop.group_manager import check_streaming_capacity
    from writing_rl.settings import ConfigError

    config = copy.deepcopy(brpo_preset)
    with open_dict(config):
        for key, value in changes.items():
            OmegaConf.update(config, key, value)
    if needed_workers is None:
        check_streaming_capacity(config)
    else:
        with pytest.raises(ConfigError, match=f"reward.num_workers>={needed_workers}"):
            check_streaming_capacity(config)


def test_check_config_reports_a_streaming_step_too_big_for_the_reward_workers(brpo_preset):
    from omegaconf import open_dict

    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.config_checks import check_config

    config = copy.deepcopy(brpo_preset)
    with open_dict(config):
        config.reward.reward_kwargs.judge.model = "m"
        config.data.train_batch_size = 1024
    with pytest.raises(ConfigError, match="reward.num_workers>=11"):
        check_config(config)
