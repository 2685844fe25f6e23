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


SEARCH_BUDGET = 200_000  # placements tried before a refusal rests on best fit alone


def unplaced(groups: list[Group], nodes: dict[str, dict[str, float]]) -> list[Group]:
    """The groups left over when the largest are packed first onto the tightest nodes (best fit, by the nodes'
    total CPUs and GPUs); none when that fails but a search over placements finds one that holds them all.
    Best fit is exact when group sizes divide each other (1, 2, 4, 8 GPUs), not in general: 3-GPU groups
    on nodes of 4 and 8 GPUs need the search."""
    left = _best_fit(groups, nodes)
    return [] if left and _fits(groups, nodes) else left


def _free(nodes: dict[str, dict[str, float]]) -> dict[str, list[float]]:
    return {name: [float(r.get("GPU", 0)), float(r.get("CPU", 0))] for name, r in nodes.items()}


def _largest_first(groups: list[Group]) -> list[Group]:
    return sorted(groups, key=lambda g: (g.gpus, g.cpus), reverse=True)


def _best_fit(groups: list[Group], nodes: dict[str, dict[str, float]]) -> list[Group]:
    free = _free(nodes)
    left = []
    for group in _largest_first(groups):
        fits = [n for n, (gpu, cpu) in free.items() if gpu >= group.gpus and cpu >= group.cpus]
        if not fits:
            left.append(group)
            continue
        best = min(fits, key=lambda n: (free[n][0] - group.gpus, free[n][1] - group.cpus))  # the tightest node
        free[best][0] -= group.gpus
        free[best][1] -= group.cpus
    return left


def _fits(groups: list[Group], nodes: dict[str, dict[str, float]], budget: int = SEARCH_BUDGET) -> bool:
    """Whether some placement holds every group: a depth-first search, largest group first, trying each node
    whose free room differs from the nodes tried before (equal rooms lead to the same placements); False
    also when ``budget`` placements were tried without finding one."""
    order, free = _largest_first(groups), list(_free(nodes).values())
    tries = [budget]

    def place(k: int) -> bool:
        if k == len(order):
            return True
        group, tried = order[k], set()
        for room in free:
            if room[0] < group.gpus or room[1] < group.cpus or tuple(room) in tried:
                continue
            tried.add(tuple(room))
            tries[0] -= 1
            if tries[0] < 0:
                return False
            room[0] -= group.gpus
            room[1] -= group.cpus
            if place(k + 1):
                return True
            room[0] += group.gpus
            room[1] += group.cpus
        return False

    return place(0)


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
