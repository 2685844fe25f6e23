"""kill -9 of the curriculum scheduler right after advances were acknowledged: a plain process, a Ray
actor, and a whole Ray cluster. A new scheduler over the same state dir has every acknowledged advance."""

import os
import signal
import subprocess
import sys

import ray
from curriculum_helpers import scheduler_alive

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.log import read_state
from writing_rl.curriculum.scheduler import ReferenceScheduler, get_or_create_scheduler

from conftest import REPO_DIR
from waiting import wait_until

# Rounds of BATCH advances of new ids (all at once, as concurrent groups); a line per acknowledged round.
ROUNDS = """
import asyncio, os, sys
from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.scheduler import ReferenceScheduler, get_or_create_scheduler, scheduler_name

state_dir, prefix, batch, compact, use_ray = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
config = CurriculumConfig(state_dir=state_dir, compact_records=compact)


async def rounds(pin, advance, pid):
    print("pid", pid, flush=True)
    r = 0
    while True:
        keys = [f"{prefix}-{r}-{k}" for k in range(batch)]
        await asyncio.gather(*(pin(k, 3) for k in keys))
        assert all(await asyncio.gather(*(advance(k, 0) for k in keys)))
        print("acked", r, flush=True)
        r += 1

if use_ray == "ray":
    import ray
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    actor = ray.remote(ReferenceScheduler).options(num_cpus=0, max_concurrency=1000).remote(config, "crash")
    pid = ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))
    asyncio.run(rounds(lambda k, n: actor.pin.remote(k, n), lambda k, p: actor.advance.remote(k, p), pid))
else:
    async def main():
        scheduler = ReferenceScheduler(config, "crash")
        await rounds(scheduler.pin, scheduler.advance, os.getpid())
    asyncio.run(main())
"""


def run_and_kill(state_dir, prefix: str, after_rounds: int, compact: int, use_ray: str = "plain") -> tuple[int, int]:
    """Start the rounds, SIGKILL the process group once ``after_rounds`` are acknowledged; (the rounds
    acknowledged before the kill, the scheduler's pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", ROUNDS, str(state_dir), prefix, "25", str(compact), use_ray],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_DIR,
        start_new_session=True,  # its own process group: the kill takes Ray's processes too
    )
    pid = int(proc.stdout.readline().split()[1])
    for _ in range(after_rounds):
        assert proc.stdout.readline().startswith("acked")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    acked = after_rounds + sum(line.startswith("acked") for line in proc.stdout)  # printed before the kill
    return acked, pid


def assert_all_acknowledged(state_dir, prefix: str, acked: int) -> None:
    levels = read_state(state_dir).table.as_dict()
    for r in range(acked):
        assert all(levels.get(f"{prefix}-{r}-{k}") == 1 for k in range(25)), f"round {r} of {prefix} lost"
    # Nothing from beyond the round in flight at the kill.
    assert not any(key.startswith(f"{prefix}-{acked + 1}-") for key in levels)


def pid_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.split() == ["State:", "Z", "(zombie)"] for line in f)
    except FileNotFoundError:
        return True


def test_kill_9_of_a_scheduler_process_at_many_points(tmp_path):
    state_dir = tmp_path / "state"
    # A small compaction threshold: the kills also land in and around compactions.
    acked = {}
    for life, after in enumerate((1, 2, 5, 9, 14)):
        acked[f"life{life}"], _ = run_and_kill(state_dir, f"life{life}", after, compact=40)
        for prefix, rounds in acked.items():
            assert_all_acknowledged(state_dir, prefix, rounds)
    # A scheduler starting over it has the same levels.
    assert (
        ReferenceScheduler(CurriculumConfig(state_dir=str(state_dir))).table.as_dict()
        == read_state(state_dir).table.as_dict()
    )


def test_kill_9_of_the_scheduler_actor_loses_no_acknowledged_advance(ray_cluster, tmp_path):
    assert wait_until(lambda: not scheduler_alive())  # another test's scheduler goes with its workers
    handle = get_or_create_scheduler(CurriculumConfig(state_dir=str(tmp_path / "state")).for_scheduler())
    try:
        keys = [f"k{i}" for i in range(50)]
        ray.get([handle.pin.remote(k, 3) for k in keys])
        assert all(ray.get([handle.advance.remote(k, 0) for k in keys]))
        pid = ray.get(handle.__ray_call__.remote(lambda self: os.getpid()))
        os.kill(pid, signal.SIGKILL)
        # Ray starts it again under the same handle (the reward workers keep theirs); it recovered everything.
        snapshot = ray.get(handle.snapshot.remote())
        assert snapshot["levels"] == {k: 1 for k in keys} and "restarted within the run" in snapshot["source"]
        assert ray.get(handle.__ray_call__.remote(lambda self: os.getpid())) != pid
    finally:
        ray.kill(handle, no_restart=True)
    assert wait_until(lambda: not scheduler_alive())


def test_kill_9_of_a_whole_ray_cluster(tmp_path):
    state_dir = tmp_path / "state"
    acked, actor_pid = run_and_kill(state_dir, "cluster", 3, compact=10**6, use_ray="ray")
    assert wait_until(lambda: pid_gone(actor_pid))  # the scheduler's worker died with the cluster
    assert_all_acknowledged(state_dir, "cluster", acked)
