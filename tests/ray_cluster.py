"""A real Ray cluster on this machine, as `ray start` makes one: a head (with its job server) and worker nodes,
each a `ray start --block` in a session of its own, on ports of its own and the head's own temp dir, and
stopped by its own process group (never `ray stop`, which ends every Ray on the machine).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT_S = 180
WORKER_PORTS = 200  # per node


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def ephemeral_ports_start() -> int:
    """The first port the kernel hands out for port 0 (``free_ports``' ports are at or above it)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _node_ports() -> list[str]:
    manager, objects, agent, agent_grpc, metrics, runtime_env, low = free_ports(7)
    # Workers' ports: a range of their own (the machine's other Rays use theirs), below the kernel's ephemeral
    # ports, where every port above comes from: Ray refuses a component port inside the workers' range.
    first = 20000 + low % max(1, ephemeral_ports_start() - 20000 - WORKER_PORTS)
    return [
        f"--node-manager-port={manager}", f"--object-manager-port={objects}",
        f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--min-worker-port={first}", f"--max-worker-port={first + WORKER_PORTS - 1}",
    ]  # fmt: skip


def _resources(num_cpus: int, num_gpus: int, resources: dict | None) -> list[str]:
    args = [f"--num-cpus={num_cpus}", f"--num-gpus={num_gpus}", "--object-store-memory=200000000"]
    return args + ([f"--resources={json.dumps(resources)}"] if resources else [])


class LocalCluster:
    """With Ray's token authentication, as a `ray start` on a machine that has a token turns it on: a token of
    its own (``token_path``, what a user copies to the machines that submit), every node started with it."""

    def __init__(self, num_cpus: int, num_gpus: int):
        self.temp_dir = Path(tempfile.mkdtemp(prefix="wrl-ray-"))
        self.token_path = self.temp_dir / "auth_token"
        self.token_path.write_text(secrets.token_hex(32))
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
        self.env["RAY_AUTH_TOKEN_PATH"] = str(self.token_path)
        for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN"):
            self.env.pop(name, None)
        self.nodes: list[subprocess.Popen] = []
        gcs, dashboard, client = free_ports(3)
        self.gcs_address = f"127.0.0.1:{gcs}"
        self.address = f"http://127.0.0.1:{dashboard}"  # the job server: what RAY_ADDRESS names
        self._start(
            "head",
            ["--head", f"--port={gcs}", f"--dashboard-port={dashboard}", "--dashboard-host=127.0.0.1",
             f"--ray-client-server-port={client}", f"--temp-dir={self.temp_dir}"],
            num_cpus, num_gpus, None,
        )  # fmt: skip
        self.wait_for_nodes(1)

    def _start(self, name: str, args: list[str], num_cpus: int, num_gpus: int, resources: dict | None) -> None:
        log = (self.temp_dir / f"{name}.log").open("w")
        command = [RAY, "start", "--block", "--disable-usage-stats", *args, *_node_ports()]
        command += _resources(num_cpus, num_gpus, resources)
        self.nodes.append(
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        )

    def add_node(self, num_cpus: int, num_gpus: int = 0, resources: dict | None = None) -> None:
        """A worker node joining the head (`ray start --address`), waited for until the head counts it alive."""
        self._start(f"node{len(self.nodes)}", [f"--address={self.gcs_address}"], num_cpus, num_gpus, resources)
        self.wait_for_nodes(len(self.nodes))

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token_path.read_text().strip()}"}

    def state(self, kind: str) -> list[dict]:
        """Ray's state API at the job server: nodes, actors, placement_groups (dead ones kept for a while)."""
        url = f"{self.address}/api/v0/{kind}?limit=10000&detail=1"
        with urllib.request.urlopen(urllib.request.Request(url, headers=self.headers()), timeout=30) as reply:
            return json.load(reply)["data"]["result"]["result"]

    def wait_for_nodes(self, count: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            for node in self.nodes:
                if node.poll() is not None:
                    logs = "\n".join(p.read_text()[-2000:] for p in self.temp_dir.glob("*.log"))
                    raise RuntimeError(f"`ray start` exited with {node.returncode}:\n{logs}")
            try:
                if sum(n["state"] == "ALIVE" for n in self.state("nodes")) >= count:
                    return
            except (OSError, ValueError, KeyError):
                pass  # the job server is not up yet
            if time.monotonic() > deadline:
                raise TimeoutError(f"the local Ray cluster did not have {count} alive node(s) in {START_TIMEOUT_S}s")
            time.sleep(0.5)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)  # `ray start --block` stops its node's processes
        for node in reversed(self.nodes):
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(node.pid, signal.SIGKILL)  # what outlived it in its session
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)
