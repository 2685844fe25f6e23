"""What a composed config asks a Ray cluster for, and whether the cluster can ever give it.

verl places each group of workers in a placement group packed on one node (STRICT_PACK): one bundle per GPU
of ``{"GPU": 1, "CPU": c}``, c = 3 for the trainer's pools (verl's ResourcePoolManager) and 2 for a rollout
or GenRM server of its own (``RolloutReplica.init_standalone``). A cluster whose nodes cannot hold every group
at once never starts the job: verl waits on the placement group without a word. The check counts a node's
total resources, not what is free now (a busy cluster frees them), and only these groups: the few CPUs of
verl's other actors come on top.
"""

from __future__ import annotations

from dataclasses import dataclass

TRAINER_CPUS, SERVER_CPUS = 3, 2  # CPUs per GPU bundle


@dataclass(frozen=True)
class Group:
    """``gpus`` bundles of one GPU and ``cpus_per_gpu`` CPUs each, all on one node."""

    what: str
    gpus: int
    cpus_per_gpu: int

    @property
    def cpus(self) -> int:
        return self.gpus * self.cpus_per_gpu


def _groups(what: str, nnodes, gpus_per_node, cpus: int) -> list[Group]:
    return [Group(what, int(gpus_per_node), cpus) for _ in range(int(nnodes))]


def job_demand(config) -> list[Group]:
    """The node-packed groups a config's run asks for (the trainers in writing_rl/tools/shared/trainers.py)."""
    from writing_rl.tools.shared.trainers import trainer_of

    trainer = trainer_of(config)
    t = config.trainer
    groups = _groups("the policy's training workers", t.nnodes, t.n_gpus_per_node, TRAINER_CPUS)
    rollout = None
    if trainer in ("fully-async", "one-step-off"):
        rollout = config.rollout
    elif trainer == "v1-separate-async":
        rollout = config.actor_rollout_ref.rollout
    if rollout is not None:
        size = int(config.actor_rollout_ref.rollout.get("tensor_model_parallel_size", 1) or 1)
        replicas = int(rollout.nnodes) * int(rollout.n_gpus_per_node) // max(size, 1)
        groups += [Group("a rollout replica", size, SERVER_CPUS) for _ in range(replicas)]
    genrm = config.reward.reward_model
    if genrm.get("enable") and genrm.get("enable_resource_pool"):
        groups += _groups("the GenRM's own GPUs", genrm.nnodes, genrm.n_gpus_per_node, SERVER_CPUS)
    return [g for g in groups if g.gpus > 0]


def described(groups: list[Group]) -> str:
    counted: dict[tuple, int] = {}
    for g in groups:
        counted[(g.what, g.gpus, g.cpus_per_gpu)] = counted.get((g.what, g.gpus, g.cpus_per_gpu), 0) + 1
    return "; ".join(
        f"{what}: {n} x {gpus} GPU(s) on one node, each GPU with {cpus} CPUs ({{GPU: {gpus}, CPU: {gpus * cpus}}})"
        for (what, gpus, cpus), n in counted.items()
    )


def unplaced(groups: list[Group], nodes: dict[str, dict[str, float]]) -> list[Group]:
    """The groups left over when the largest are packed first onto the nodes' total CPUs and GPUs."""
    free = {name: [float(r.get("GPU", 0)), float(r.get("CPU", 0))] for name, r in nodes.items()}
    left = []
    for group in sorted(groups, key=lambda g: (g.gpus, g.cpus), reverse=True):
        fits = [n for n, (gpu, cpu) in free.items() if gpu >= group.gpus and cpu >= group.cpus]
        if not fits:
            left.append(group)
            continue
        best = min(fits, key=lambda n: (free[n][0] - group.gpus, free[n][1] - group.cpus))  # the tightest node
        free[best][0] -= group.gpus
        free[best][1] -= group.cpus
    return left


def schedulability(groups: list[Group], nodes: dict[str, dict[str, float]]) -> str | None:
    """None when the cluster can hold every group at once; else what the job asks and what the cluster has."""
    left = unplaced(groups, nodes)
    if not left:
        return None
    have = (
        "; ".join(
            f"{name}: {{GPU: {r.get('GPU', 0):g}, CPU: {r.get('CPU', 0):g}}}" for name, r in sorted(nodes.items())
        )
        or "no alive node"
    )
    return (
        f"the cluster can never schedule this job: it asks for {described(groups)}; the cluster's nodes have {have} "
        f"(no room for {described(left)}). verl would wait on its placement groups without a message. Ask for less "
        "(trainer.n_gpus_per_node, trainer.nnodes, the rollout's and GenRM's sizes) or add nodes; the CPU backend's "
        "GPUs are logical: start its nodes with `ray start --num-gpus N --num-cpus M`"
    )
