"""Where the named per-run actors (group collectors, the reference scheduler) go on a Ray cluster.

By default they take no resource (num_cpus=0) and Ray puts them wherever it likes, usually on the node
of the reward worker that creates them. ``actor_resources`` (``groups.`` / ``curriculum.``) pins them to
the nodes that offer those resources. A request no node offers would leave the actor pending and every
step waiting on it, so it fails at creation instead, naming the config key.
"""

from __future__ import annotations

import ray

from writing_rl.settings import ConfigError

SHOWN_RESOURCE_NAMES = 20  # an error lists at most this many of the cluster's resource names


def placement_options(name: str, resources: dict[str, float], key: str) -> dict:
    """Ray options for creating the actor ``name`` with ``resources`` (``key``: where they are set).

    Checked against the cluster only when the actor does not exist yet: the options of an existing
    actor do not matter (``get_if_exists``), and a node that is down for a while (the actor restarting)
    is no configuration error."""
    if not resources:
        return {}
    try:
        ray.get_actor(name)
    except ValueError:  # not created yet (or dead): it will be created with these resources
        check_offered(resources, key)
    return {"resources": dict(resources)}


def check_offered(resources: dict[str, float], key: str) -> None:
    """Some alive node of the cluster offers every resource of ``resources`` in the amount asked."""
    nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
    if any(all(node.get(r, 0.0) >= amount for r, amount in resources.items()) for node in nodes):
        return
    names = sorted({r for node in nodes for r in node if not r.startswith("node:") or r.endswith("_head__")})
    shown = ", ".join(names[:SHOWN_RESOURCE_NAMES]) + (", ..." if len(names) > SHOWN_RESOURCE_NAMES else "")
    raise ConfigError(
        f"{key}={resources}: no alive node of this Ray cluster offers that much of each (its resources: "
        f"{shown}); start a node with them (ray start --resources='{{\"name\": 1}}'), or set {key}={{}}"
    )
