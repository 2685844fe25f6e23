"""The pieces of a Ray job submission (writing_rl/tools/shared/cluster/) without a cluster: the variables forwarded,
the working directory upload, the job's demand against a cluster's nodes, the command on the cluster, and the
job server's errors (tests/test_ray_job.py runs them against a real cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from writing_rl.offline.compose import compose
from writing_rl.settings import ConfigError
from writing_rl.tools.shared.cluster.demand import Group, job_demand, schedulability, unplaced
from writing_rl.tools.shared.cluster.job_env import check_upload, forwarded_env, job_env_from_environ, upload_files
from writing_rl.tools.shared.cluster.submit import entrypoint, joining_overrides, judge_key_envs

REPO = Path(__file__).resolve().parent.parent


def test_the_job_gets_the_platform_and_caches_set_here_and_the_names_asked_for_and_nothing_else():
    environ = {
        "VERL_PLATFORM": "cpu",
        "HF_HOME": "/shared/hf",
        "HOME": "/root",
        "MY_FLAG": "1",
        "FORWARD_ENV": "MY_FLAG",
    }
    assert forwarded_env(environ) == {"VERL_PLATFORM": "cpu", "HF_HOME": "/shared/hf", "MY_FLAG": "1"}
    with pytest.raises(ConfigError, match="not set here: NOT_SET"):
        forwarded_env({"FORWARD_ENV": "NOT_SET"})


def test_the_judge_key_goes_to_the_job_only_when_asked():
    environ = {"RAY_ADDRESS": "http://head:8265", "JUDGE_KEY": "secret"}
    assert "JUDGE_KEY" not in job_env_from_environ(REPO, lambda: ("JUDGE_KEY",), environ).env_vars
    asked = job_env_from_environ(REPO, lambda: ("JUDGE_KEY",), {**environ, "FORWARD_JUDGE_API_KEY": "1"})
    assert asked.env_vars["JUDGE_KEY"] == "secret"
    assert asked.runtime_env()["env_vars"] == {"JUDGE_KEY": "secret"}


def test_every_judge_key_the_reward_workers_read_is_forwarded_each_once():
    """The judge's, each ensemble member's own (a member without one reads the judge's) and the shadow judge's."""
    judge = "reward.reward_kwargs.judge"
    overrides = [
        f"{judge}.base_url=http://judge:8000/v1",
        f"{judge}.model=main",
        f"{judge}.api_key_env=MAIN_KEY",
        f"+{judge}.ensemble.members=[{{model: a, api_key_env: MEMBER_KEY}},{{model: b}},{{model: c, api_key_env: MAIN_KEY}}]",
        "reward.reward_kwargs.shadow.fraction=0.1",
        "reward.reward_kwargs.shadow.judge.base_url=http://gold:8000/v1",
        "reward.reward_kwargs.shadow.judge.model=gold",
        "reward.reward_kwargs.shadow.judge.api_key_env=GOLD_KEY",
    ]
    config = compose("writing_rl", overrides, REPO / "hydra_configs")
    assert judge_key_envs(config) == ("MAIN_KEY", "MEMBER_KEY", "GOLD_KEY")
    environ = {"RAY_ADDRESS": "http://head:8265", "FORWARD_JUDGE_API_KEY": "1"}
    keys = {"MAIN_KEY": "m", "MEMBER_KEY": "e", "GOLD_KEY": "g"}
    job = job_env_from_environ(REPO, lambda: judge_key_envs(config), {**environ, **keys})
    assert job.env_vars == keys
    with pytest.raises(ConfigError, match="not set here: MEMBER_KEY"):
        job_env_from_environ(REPO, lambda: judge_key_envs(config), {**environ, "MAIN_KEY": "m", "GOLD_KEY": "g"})
    plain = compose(
        "writing_rl", [f"{judge}.base_url=http://judge:8000/v1", f"{judge}.model=m"], REPO / "hydra_configs"
    )
    assert judge_key_envs(plain) == ()
    rule_based = compose("genrm_pairwise_rl", [], REPO / "hydra_configs")  # no judge: its settings never read
    assert (
        job_env_from_environ(REPO, lambda: judge_key_envs(rule_based), {"RAY_ADDRESS": "http://h:8265"}).env_vars == {}
    )


def test_the_upload_leaves_out_what_ray_leaves_out_and_refuses_a_large_one(tmp_path):
    (tmp_path / "writing_rl" / "data").mkdir(parents=True)
    (tmp_path / "writing_rl" / "data" / "driver.py").write_text("x = 1\n")  # a package named data: uploaded
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.parquet").write_bytes(b"0" * 1000)
    (tmp_path / ".gitignore").write_text("/big/\n")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "weights.bin").write_bytes(b"0" * 1000)
    (tmp_path / ".rayignore").write_text("*.log\n")
    (tmp_path / "run.log").write_text("log")
    assert sorted(path for _, path in upload_files(tmp_path)) == [
        ".gitignore",
        ".rayignore",
        "writing_rl/data/driver.py",
    ]
    (tmp_path / "model.safetensors").write_bytes(b"0" * 3 * 2**20)
    with pytest.raises(ConfigError, match=r"would upload 3 MiB .* model\.safetensors \(3\.0 MiB\).*\.rayignore"):
        check_upload(tmp_path, limit_mib=2)
    assert "files" in check_upload(REPO)  # this repository, as shipped, is under the limit


NODES = {"head": {"GPU": 2, "CPU": 16}, "worker": {"GPU": 0, "CPU": 4}}


def test_a_group_that_no_node_can_hold_is_refused_and_the_message_names_both_sides():
    assert unplaced([Group("policy", 2, 3)], NODES) == []
    assert unplaced([Group("policy", 2, 3), Group("rollout", 1, 2)], NODES) == [Group("rollout", 1, 2)]
    message = schedulability([Group("the policy's training workers", 4, 3)], NODES)
    assert "1 x 4 GPU(s) on one node" in message and "{GPU: 4, CPU: 12}" in message
    assert "head: {GPU: 2, CPU: 16}" in message and "worker: {GPU: 0, CPU: 4}" in message
    # CPUs count too: a bundle of one GPU takes 3 CPUs
    assert unplaced([Group("policy", 1, 3)], {"head": {"GPU": 1, "CPU": 2}}) == [Group("policy", 1, 3)]


@pytest.mark.parametrize(
    "overrides, groups",
    [
        ((), [("the policy's training workers", 8, 3)]),
        (("trainer.nnodes=2", "trainer.n_gpus_per_node=4"), [("the policy's training workers", 4, 3)] * 2),
        (
            ("+genrm=standalone",),
            [("the policy's training workers", 4, 3), ("the GenRM's own GPUs", 4, 2)],
        ),
        (
            ("+entry=fully_async", "rollout.n_gpus_per_node=2", "rollout.nnodes=1"),
            [("the policy's training workers", 8, 3), ("a rollout replica", 2, 2)],  # the overlay's TP of 2
        ),
    ],
)
def test_the_demand_follows_verls_resource_pools(overrides, groups):
    config = compose("writing_rl", list(overrides))
    assert [(g.what, g.gpus, g.cpus_per_gpu) for g in job_demand(config)] == groups


def test_joining_a_cluster_drops_the_cpu_backends_own_resources_and_the_overlays_come_from_the_jobs_copy():
    assert joining_overrides(compose("writing_rl", [])) == []
    assert joining_overrides(compose("writing_rl", ["+backend=cpu"])) == [
        "ray_kwargs.ray_init.num_cpus=null",
        "ray_kwargs.ray_init.num_gpus=null",
    ]
    command = entrypoint("/opt/env/bin/python", "verl.trainer.main_ppo", "writing_rl", ["a=b c", "x=1"])
    assert command == (
        '/opt/env/bin/python -m verl.trainer.main_ppo --config-path "$PWD/hydra_configs" '
        "--config-name writing_rl 'a=b c' x=1"
    )


def test_a_wrong_address_is_one_line_naming_what_ray_address_should_be():
    from writing_rl.tools.shared.cluster.client import connect

    from ray_cluster import free_ports

    (port,) = free_ports(1)
    with pytest.raises(ConfigError, match=r"no Ray job server at RAY_ADDRESS=http://127.0.0.1:\d+ .*http://HEAD:8265"):
        connect(f"http://127.0.0.1:{port}")
