"""GroupCollector: where the rollouts of one prompt meet when no single reward worker holds them all.

verl scores one sample at a time, on several reward workers, and in streaming mode as soon as each
rollout finishes, so a worker may hold only part of a group (same verl ``uid``). Each worker first
gathers the members that reach it together (``reward_loop/rendezvous.py``): a group complete there is
scored there, with no round trip. Otherwise the worker sends those members in one ``join`` to the
collector of the uid's shard (a named Ray actor per run and shard). When the group is complete, its
first member becomes the *leader*: its worker receives every member, runs the group reward fn once and
``publish``es one result per member; the collector hands the other workers' members their results.

- A group is complete with ``expected`` distinct responses. With ``expected`` arrivals but fewer
  distinct responses, sealing waits ``settle_s`` for more: verl pads a batch by repeating its first
  samples, and a padded copy that arrived early must not take the place of a real member that is
  still on its way (identical real rollouts are sealed after ``settle_s``).
- An arrival after the group is sealed gets the result of the member with the same response (a padded
  copy or an identical rollout). An arrival with a new response (the group was sealed without it:
  timeout, or a wrong expected size) is scored on its own and flagged ``late``.
- A group still incomplete ``timeout_s`` after its first arrival is sealed with what arrived
  (``partial``). A leader that fails publishes the error, so its members fail too instead of hanging.
- Results of finished groups (sealed here or in a worker, which ``remember``s them here) stay in a
  bounded cache for late copies, keyed by a digest of the response (long responses x thousands of
  groups would otherwise pin gigabytes in this actor). A failed group is remembered too: its late
  copies fail at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import ray

from writing_rl.reward_loop.config import GroupConfig
from writing_rl.reward_loop.placement import placement_options


@dataclass(frozen=True)
class Member:
    """What one rollout brings to its group."""

    uid: str  # verl's group id: the same for every rollout of one prompt
    text: str  # the decoded response
    response_length: int  # valid response tokens
    prompt: str  # the request as text (last user turn)
    data_source: str
    ground_truth: Any
    extra_info: dict


@dataclass(frozen=True)
class Ticket:
    """What one member learns from the rendezvous.

    ``lead``: run the group reward fn for ``members`` and publish the results. Else ``result`` is this
    member's result, or None when the leader came in the same batch of this worker: its worker hands the
    result over (``rendezvous.LocalBatch``)."""

    lead: bool
    index: int  # this member's position in the group's members
    members: list[Member] | None = None
    result: dict | None = None
    partial: bool = False
    late: bool = False
    sealed_here: bool = False  # sealed in the member's own worker: nobody at the collector waits for it


VALIDATION_SPLITS = ("test", "val", "validation")


def is_validation(extra_info: dict | None) -> bool:
    """A validation row, by the convention our builders and verl's example preprocessors follow."""
    return str((extra_info or {}).get("split", "")).lower() in VALIDATION_SPLITS


class GroupError(RuntimeError):
    """The group could not be scored: its leader failed, or nobody published in time."""


def choose_members(texts: list[str], expected: int) -> list[int]:
    """The arrivals that make up a sealed group: every distinct response first, then repeats (identical
    rollouts), up to ``expected``; in arrival order."""
    seen: set[str] = set()
    firsts, repeats = [], []
    for number, text in enumerate(texts):
        (repeats if text in seen else firsts).append(number)
        seen.add(text)
    return sorted(firsts + repeats[: max(0, expected - len(firsts))])


def member_index(texts: list[str], members: list[int], arrival: int) -> int | None:
    """An arrival's index among the members; a surplus copy maps to the member with the same response."""
    if arrival in members:
        return members.index(arrival)
    return next((index for index, number in enumerate(members) if texts[number] == texts[arrival]), None)


def response_key(text: str) -> bytes:
    """What the finished cache keys a response by: 16 bytes, however long the response."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def shard_of(uid: str, shards: int) -> int:
    """The collector shard of a uid: the same in every process (unlike ``hash``, which is salted)."""
    return int.from_bytes(hashlib.blake2b(uid.encode("utf-8", "surrogatepass"), digest_size=8).digest()) % shards


FAILED = b"failed"  # under a finished uid: the leader's error message (response keys are 16 bytes)


@dataclass
class _Group:
    expected: int
    deadline: float
    arrivals: list[Member] = field(default_factory=list)
    members: list[int] = field(default_factory=list)  # arrival numbers of the members, once sealed
    partial: bool = False
    sealed: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    results: list[dict] | None = None
    error: str | None = None
    settling: bool = False
    claimed: bool = False  # a worker holds the whole group and scores it (``claim``); arrivals here are copies
    elsewhere: dict[bytes, Any] | None = None  # the results that worker remembered, by response key

    def texts(self) -> list[str]:
        return [m.text for m in self.arrivals]

    def seal(self, partial: bool = False) -> None:
        if not self.sealed.is_set():
            self.members = choose_members(self.texts(), self.expected)
            self.partial = partial
            self.sealed.set()

    def ticket(self, arrival: int, leader_here: bool) -> Ticket:
        """A sealed group's answer to one arrival (``result`` still to be filled for other workers)."""
        index = member_index(self.texts(), self.members, arrival)
        if index is None:  # a new response after sealing: scored on its own
            return Ticket(lead=True, index=0, members=[self.arrivals[arrival]], late=True)
        if arrival == self.members[0]:
            return Ticket(lead=True, index=0, members=[self.arrivals[n] for n in self.members], partial=self.partial)
        return Ticket(lead=False, index=index, partial=self.partial)


class GroupCollector:
    """The rendezvous actor of one shard. One asyncio loop, so no locks: every method runs to its next await."""

    def __init__(self, finished_cache: int = 4096):
        self.finished_cache = finished_cache
        self.open: dict[str, _Group] = {}
        self.finished: OrderedDict[str, dict[bytes, Any]] = OrderedDict()  # uid -> response_key -> result
        self.joined = 0  # members received: those whose group no single worker held

    async def join(self, uid: str, members: list[Member], expected: int, settings: GroupConfig) -> list[Ticket]:
        """One worker's members of group ``uid``; one ticket each, in order. ``settings``: the caller's
        (one actor may outlive a config, e.g. across the tests of one Ray job)."""
        self.joined += len(members)
        group = self.open.get(uid)
        if group is None and uid in self.finished:  # the group is scored already
            return [_ticket_from(uid, self.finished[uid], m) for m in members]
        if group is None:
            deadline = time.monotonic() + settings.timeout_s
            group = self.open[uid] = _Group(expected=max(1, expected), deadline=deadline)
        mine = range(len(group.arrivals), len(group.arrivals) + len(members))
        group.arrivals.extend(members)
        if not group.sealed.is_set() and not group.claimed and len(group.arrivals) >= group.expected:
            # `expected` distinct responses: nobody can be missing. Fewer: a copy may hold a real member's place.
            if settings.settle_s > 0 and len(set(group.texts())) < group.expected:
                if not group.settling:
                    group.settling = True
                    asyncio.get_running_loop().call_later(settings.settle_s, group.seal)
            else:
                group.seal()

        while not group.sealed.is_set():  # (a claim may move the deadline while we wait)
            left = group.deadline - time.monotonic()
            if left <= 0:
                if not group.claimed:
                    group.seal(partial=True)
                break
            try:
                await asyncio.wait_for(group.sealed.wait(), timeout=left)
            except asyncio.TimeoutError:
                pass
        if group.elsewhere is not None:
            return [_ticket_from(uid, group.elsewhere, m) for m in members]
        if group.claimed:  # the worker scoring it is gone
            self.fail(
                uid,
                f"the worker that held it whole sent no result within groups.result_timeout_s={settings.result_timeout_s}",
            )
            raise GroupError(f"group {uid} failed in its leader: {group.error}")
        leader_here = group.members[0] in mine
        tickets = [group.ticket(arrival, leader_here) for arrival in mine]
        if leader_here or all(t.lead for t in tickets):
            return tickets

        try:
            await asyncio.wait_for(group.done.wait(), timeout=settings.result_timeout_s)
        except asyncio.TimeoutError:
            # The leader is gone (its worker died): fail the group once, so it leaves the open table and
            # its other members and late copies fail at once instead of waiting in turn.
            timeout = settings.result_timeout_s
            self.fail(uid, f"its leader published no result within groups.result_timeout_s={timeout}")
        if group.error is not None:
            raise GroupError(f"group {uid} failed in its leader: {group.error}")
        return [t if t.lead else _with_result(t, group.results[t.index]) for t in tickets]

    def publish(self, uid: str, results: list[dict]) -> None:
        """The leader's results, one per member of a group sealed here."""
        group = self.open.pop(uid, None)
        if group is None:
            return
        group.results = results
        group.done.set()
        self._remember(uid, {response_key(group.arrivals[n].text): r for n, r in zip(group.members, results)})

    def fail(self, uid: str, message: str) -> None:
        group = self.open.pop(uid, None)
        if group is not None:
            group.error = message
            group.done.set()
            self._remember(uid, {FAILED: message})

    def claim(self, groups: list[tuple[str, set[bytes]]], settings: GroupConfig) -> list[bool]:
        """For each group a worker holds whole (uid, its response keys): may it score the group there?
        The first claim wins, unless what arrived here holds a response the claimant lacks (a member it
        does not have): so a padded copy of a whole group, in another worker, is not scored twice.
        Arrivals of a claimed group wait for its results (``remember``) up to ``groups.result_timeout_s``."""
        won = []
        deadline = time.monotonic() + settings.result_timeout_s
        for uid, keys in groups:
            group = self.open.get(uid)
            if group is None:
                free = uid not in self.finished
                if free:
                    self.open[uid] = _Group(expected=1, deadline=deadline, claimed=True)
            else:  # copies waiting here, none of them new to the claimant
                free = not (group.claimed or group.sealed.is_set())
                free = free and all(response_key(m.text) in keys for m in group.arrivals)
                if free:
                    group.claimed, group.deadline = True, deadline
            won.append(free)
        return won

    def remember(self, entries: list[tuple[str, dict[bytes, Any]]]) -> None:
        """Results (by response key, or ``{FAILED: message}``) of groups scored in a worker: groups it
        claimed, and late members. Copies of such a group that wait here get their results at once."""
        for uid, results in entries:
            self._remember(uid, results)
            group = self.open.get(uid)
            if group is not None and (group.claimed or not group.sealed.is_set()):
                del self.open[uid]
                group.elsewhere = results
                group.sealed.set()

    def _remember(self, uid: str, results: dict[bytes, Any]) -> None:
        self.finished.setdefault(uid, {}).update(results)
        self.finished.move_to_end(uid)
        while len(self.finished) > self.finished_cache:
            self.finished.popitem(last=False)

    def stats(self) -> dict[str, int]:
        return {"open": len(self.open), "finished": len(self.finished), "joined": self.joined}


def _ticket_from(uid: str, results: dict[bytes, Any], member: Member) -> Ticket:
    """A member's ticket from the results of its group, scored already: its result, or late."""
    if FAILED in results:
        raise GroupError(f"group {uid} failed in its leader: {results[FAILED]}")
    result = results.get(response_key(member.text))
    if result is None:
        return Ticket(lead=True, index=0, members=[member], late=True)
    return Ticket(lead=False, index=0, result=result)


def _with_result(ticket: Ticket, result: dict) -> Ticket:
    return Ticket(lead=False, index=ticket.index, result=result, partial=ticket.partial)


def collector_name(shard: int = 0) -> str:
    """One collector per Ray job and shard: verl's reward workers all run in the trainer's job, and two
    training runs on one cluster are two jobs, so they never share groups."""
    return f"writing_rl_group_collector_{ray.get_runtime_context().get_job_id()}_{shard}"


def get_or_create_collector(settings: GroupConfig, shard: int = 0):
    """The collector of ``shard``, created on a node offering ``groups.actor_resources`` (placement.py)."""
    name = collector_name(shard)
    placement = placement_options(name, settings.actor_resources, "reward.reward_kwargs.groups.actor_resources")
    return (
        ray.remote(GroupCollector)
        # A collector that crashes (kill -9, OOM, its node lost) comes back under the same handle: the calls
        # in flight fail (their step fails, see rendezvous.GroupCollectorLost) and the next step finds it again.
        .options(name=name, get_if_exists=True, num_cpus=0, max_concurrency=100_000, max_restarts=-1, **placement)
        .remote(settings.finished_cache)
    )
