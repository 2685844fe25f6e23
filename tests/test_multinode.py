"""Group rewards and the curriculum on a three-node Ray cluster (``ray.cluster_utils.Cluster`` on this
machine), through verl's RewardLoopManager: verl puts one reward worker on each node, and
``actor_resources`` pins the group collector and the reference scheduler to two different nodes, so every
join, publish, pin and advance crosses nodes. The rewards and levels are the single-node tests' own.

The module runs its own cluster: a Ray the session already started (tests/conftest.py ``ray_cluster``)
is shut down first and started again, as conftest starts it, afterwards.
"""

import os
import tempfile

import pytest
import ray
from ray.cluster_utils import Cluster
from test_curriculum_reward_loop import step_batch
from test_group_reward_loop import N, expected_rewards, make_batch, new_groups

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.log import read_state
from writing_rl.curriculum.scheduler import scheduler_name
from writing_rl.offline.compose import compose
from writing_rl.reward_loop.config import GroupConfig, ManagerConfig
from writing_rl.reward_loop.group.collector import collector_name, get_or_create_collector
from writing_rl.settings import ConfigError

from conftest import compose_writing_rl, reward_loop
from judge_server import ScriptedJudgeServer
from waiting import wait_until

SESSION_RAY = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": True}  # conftest's ray_cluster
NODE = {"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024, "include_dashboard": False}
# What the collector and the scheduler ask for: the first worker node offers {"collectors": 2}, the
# second {"curriculum": 1}, the head neither.
COLLECTORS = {"collectors": 1}
SCHEDULER = {"curriculum": 1}
PLACEMENT = [
    "++reward.reward_kwargs.groups.actor_resources={collectors:1}",
    "++reward.reward_kwargs.curriculum.actor_resources={curriculum:1}",
]


@pytest.fixture(scope="module")
def cluster():
    """A head and two worker nodes with one CPU each; the driver connected to the head."""
    session_ray = ray.is_initialized()
    if session_ray:
        ray.shutdown()
    # A private temp dir: Cluster records its address in {temp}/ray/ray_current_cluster, where any other
    # ray.init() on this machine (another test run) would otherwise find it and join this cluster.
    with tempfile.TemporaryDirectory(prefix="wrl-mn-", dir="/tmp") as temp, pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_TMPDIR", temp)
        nodes = Cluster(initialize_head=True, head_node_args=NODE)
        try:
            nodes.add_node(**NODE, resources={"collectors": 2})
            nodes.add_node(**NODE, resources=SCHEDULER)
            nodes.wait_for_nodes()
            ray.init(address=nodes.address)
            yield nodes
        finally:
            ray.shutdown()
            nodes.shutdown()
    if session_ray:
        ray.init(**SESSION_RAY)


@pytest.fixture(scope="module")
def judge():
    with ScriptedJudgeServer(latency_s=0.01) as server:
        yield server


def node_of(actor) -> str:
    return ray.get(actor.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id()))


def nodes_offering(resources: dict) -> set[str]:
    return {
        n["NodeID"]
        for n in ray.nodes()
        if n["Alive"] and all(n["Resources"].get(r, 0) >= a for r, a in resources.items())
    }


def wait_for_actor(name: str):
    assert wait_until(lambda: actor_or_none(name) is not None), f"no actor {name}"
    return actor_or_none(name)


def actor_or_none(name: str):
    try:
        return ray.get_actor(name)
    except ValueError:
        return None


def worker_nodes(manager) -> list[str]:
    return [node_of(worker) for worker in manager.reward_loop_workers]


# --- the settings, without Ray ---


@pytest.mark.parametrize(
    "value, message",
    [
        (5, "actor_resources must be a mapping of Ray resource names"),
        ({"collectors": 0}, r"actor_resources.collectors must be a number >= 0.0001"),
        ({"collectors": True}, r"actor_resources.collectors must be a number"),
        ({"collectors": float("inf")}, r"actor_resources.collectors must be a number"),
        ({"CPU": 1}, r"actor_resources.CPU: the shared actors take no CPU"),
        ({"": 1}, "actor_resources: resource names must be non-empty strings"),
    ],
)
@pytest.mark.parametrize("section, read", [("groups", GroupConfig), ("curriculum", CurriculumConfig)])
def test_bad_actor_resources_name_the_key(section, read, value, message):
    config = {"reward": {"reward_kwargs": {section: {"actor_resources": value}}}}
    with pytest.raises(ConfigError, match=f"reward.reward_kwargs.{section}.{message}"):
        read.from_verl(config)


def test_actor_resources_compose_from_hydra_overrides(tokenizer_dir):
    head = "++reward.reward_kwargs.groups.actor_resources={node\\:__internal_head__:0.01}"
    config = compose(
        "writing_rl",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            "reward.reward_kwargs.judge.base_url=http://j:1/v1",
            "reward.reward_kwargs.judge.model=m",
            head,
            PLACEMENT[1],
        ],
    )
    settings = ManagerConfig.from_verl(config)
    assert settings.groups.actor_resources == {"node:__internal_head__": 0.01}
    assert settings.extras["curriculum"].actor_resources == SCHEDULER


# --- on the cluster ---


def test_the_cluster_is_not_advertised_to_other_ray_inits(cluster):
    default = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ray", "ray_current_cluster")
    recorded = open(default).read() if os.path.exists(default) else ""
    assert cluster.address not in recorded


def test_a_resource_no_node_offers_fails_at_creation_naming_the_key(cluster):
    with pytest.raises(
        ConfigError, match=r"reward.reward_kwargs.groups.actor_resources=\{'collectors': 3\}.*collectors"
    ):
        get_or_create_collector(GroupConfig(actor_resources={"collectors": 3}), shard=7)
    assert actor_or_none(collector_name(7)) is None


def test_an_existing_actor_is_found_whatever_the_settings_ask(cluster):
    # Options matter only at creation: a node that is down for a while is no configuration error.
    created = get_or_create_collector(GroupConfig(actor_resources=COLLECTORS), shard=8)
    try:
        assert {node_of(created)} == nodes_offering(COLLECTORS)
        found = get_or_create_collector(GroupConfig(actor_resources={"collectors": 3}), shard=8)
        assert found._actor_id == created._actor_id
    finally:
        ray.kill(created, no_restart=True)


def test_brpo_groups_straddle_workers_on_three_nodes(cluster, judge, tokenizer_dir, tokenizer):
    assert wait_until(lambda: actor_or_none(collector_name()) is None)  # an earlier test's went with its workers
    config = compose(
        "brpo",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.reward_kwargs.judge.base_url={judge.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            "reward.num_workers=3",
            f"actor_rollout_ref.rollout.n={N}",
            "reward.reward_kwargs.groups.timeout_s=60",
            "reward.reward_kwargs.groups.settle_s=60",  # distinct responses: groups seal once complete
            PLACEMENT[0],
        ],
    )
    with reward_loop(config) as manager:
        workers = worker_nodes(manager)
        assert len(set(workers)) == 3  # verl's round robin: one reward worker per node
        # 4 groups x 3 rollouts in chunks of 4: groups 1 and 2 straddle two workers (and nodes) each.
        groups = new_groups(4)
        output = manager.compute_rm_score(make_batch(tokenizer, groups)[0])
        assert output.batch["rm_scores"].sum(-1).tolist() == expected_rewards(groups)
        assert output.non_tensor_batch["partial_group"].tolist() == [0] * 12

        collector = wait_for_actor(collector_name())
        assert {node_of(collector)} == nodes_offering(COLLECTORS)
        assert ray.get(collector.stats.remote())["joined"] == 6  # the two split groups' members, from 3 nodes

        # Streaming: each rollout of a group sent alone to the worker of another node.
        groups = new_groups(2)
        batch = make_batch(tokenizer, groups)[0]
        calls = [manager.reward_loop_workers[i % 3].compute_score.remote(batch[i : i + 1]) for i in range(len(batch))]
        assert [r["reward_score"] for r in ray.get(calls)] == expected_rewards(groups)
        assert ray.get(collector.stats.remote())["joined"] == 6 + 2 * N


def test_curriculum_levels_with_the_scheduler_on_another_node(cluster, judge, tokenizer_dir, tokenizer, tmp_path):
    assert wait_until(lambda: actor_or_none(collector_name()) is None)  # the BRPO test's went with its workers
    state_dir = tmp_path / "curriculum"
    config = compose_writing_rl(
        tokenizer_dir,
        judge.base_url,
        "reward.num_workers=3",
        "actor_rollout_ref.rollout.n=3",
        "reward.reward_kwargs.groups.timeout_s=60",
        "reward.reward_kwargs.groups.settle_s=60",
        f"reward.reward_kwargs.curriculum.state_dir={state_dir}",
        f"trainer.default_local_dir={tmp_path / 'ckpt'}",
        *PLACEMENT,
        per_sample=False,
    )
    with reward_loop(config) as manager:
        # 2 ids x 3 rollouts in chunks of 2 over three workers: both groups straddle two nodes.
        # Step 1: id 0 has a winner against the easy reference; id 1 ties and loses.
        first = manager.compute_rm_score(
            step_batch(tokenizer, {0: ["a good story", "a bad story", "a story"], 1: ["a story", "bad", "plain"]})
        )
        assert first.non_tensor_batch["curriculum/level"].tolist() == [0] * 6
        assert first.batch["rm_scores"].sum(-1).tolist() == [1.0, 0.0, 0.5, 0.5, 0.0, 0.5]

        # Writing-RL needs no collector: each rollout is judged where it lands, against the level its
        # group pinned at the scheduler (on its own node).
        scheduler = wait_for_actor(scheduler_name())
        scheduler_node = node_of(scheduler)
        assert {scheduler_node} == nodes_offering(SCHEDULER) and actor_or_none(collector_name()) is None
        workers = worker_nodes(manager)
        (head,) = nodes_offering({"node:__internal_head__": 1})
        assert len(set(workers)) == 3 and head in workers and head != scheduler_node

        # Step 2: id 0 is judged against the medium reference and wins again; id 1 stays at the easy one.
        calls_before = len(judge.requests)
        second = manager.compute_rm_score(
            step_batch(tokenizer, {0: ["a good story", "good good good", "bad"], 1: ["x", "y", "z"]})
        )
        assert second.non_tensor_batch["curriculum/level"].tolist() == [1, 1, 1, 0, 0, 0]
        assert second.batch["rm_scores"].sum(-1).tolist() == [0.5, 1.0, 0.0, 0.5, 0.5, 0.5]
        asked = [r["messages"][-1]["content"] for r in judge.requests[calls_before:]]
        assert sum("medium good reference" in q for q in asked) == 3 and sum("easy reference" in q for q in asked) == 3
        assert ray.get(scheduler.snapshot.remote())["levels"] == {"0": 2, "1": 0}
        # Durable on the scheduler's node before the rewards returned.
        assert read_state(state_dir).table.as_dict() == {"0": 2, "1": 0}
