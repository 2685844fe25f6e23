"""GroupCollector: where the rollouts of one prompt meet when no single reward worker holds them all.

The workers' side is ``group/rendezvous.py``; the rules a user sees (group size, padding and ``settle_s``,
timeouts, late members): docs/methods/group-rewards.md. A worker talks to the collector of a uid's shard (a
named Ray actor per run and shard) with two calls, each carrying many groups at once:

- ``send``: the members that reached it (``joins``), the whole groups it wants to score itself (``claims``) and
  the results of groups it scored (``published``). It returns at once, with the answers to the claims and the
  events waiting for this worker: when a joined member completes its group, this worker *leads* it (a ``Lead``
  event with every member) in the same reply.
- ``poll``: a long poll that returns as soon as events wait for the worker (results of its members, leads of
  groups sealed by a timer, failures).

The worker of a sealed group's first member leads: it answers its own members itself and publishes the results
by response; the collector answers the others'. Results of finished groups stay in a bounded cache for late
copies, keyed by a digest of the response (long responses x thousands of groups would otherwise pin gigabytes in
this actor); a failed group is remembered too, so its late copies fail at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import ray

from writing_rl.reward_loop.actors import remote_class
from writing_rl.reward_loop.config import GroupConfig
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.placement import placement_options


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
    """What results are keyed by: 16 bytes, however long the response."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def shard_of(uid: str, shards: int) -> int:
    """The collector shard of a uid: the same in every process (unlike ``hash``, which is salted)."""
    return int.from_bytes(hashlib.blake2b(uid.encode("utf-8", "surrogatepass"), digest_size=8).digest()) % shards


# Under a finished uid, instead of results: (kind, message). INCOMPLETE is a counted failure of each
# member; ERROR (the leader failed, or published nothing in time) fails each member's sample.
FAILED = b"failed"  # response keys are 16 bytes
INCOMPLETE, ERROR = "incomplete", "error"


@dataclass(frozen=True)
class Lead:
    """Event: this worker scores group ``uid``. ``mine``: this worker's tickets in the group -> member
    index (the leading ticket among them); it answers those itself."""

    ticket: int
    uid: str
    members: list[Member]
    mine: dict[int, int]
    partial: bool = False
    late: bool = False


@dataclass(frozen=True)
class Result:
    """Event: the result of the member holding ``ticket``."""

    ticket: int
    result: dict


@dataclass(frozen=True)
class Failed:
    """Event: the member holding ``ticket`` failed; ``kind`` INCOMPLETE or ERROR."""

    ticket: int
    kind: str
    message: str


@dataclass(frozen=True)
class Arrival:
    worker: str
    ticket: int
    member: Member


@dataclass
class _Group:
    expected: int
    arrivals: list[Arrival] = field(default_factory=list)
    members: list[int] | None = None  # arrival numbers of the members, once sealed
    served: set[int] = field(default_factory=set)  # arrivals the leader's worker answers itself
    settling: bool = False
    claimed: bool = False  # a worker holds the whole group and scores it: arrivals here are copies
    timer: asyncio.TimerHandle | None = None

    @property
    def sealed(self) -> bool:  # (a claimed group is scored in a worker: nothing to seal here)
        return self.members is not None or self.claimed

    def texts(self) -> list[str]:
        return [a.member.text for a in self.arrivals]


@dataclass
class _Mailbox:
    events: list = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # set at the end of the batch window
    waking: bool = False
    seen: float = field(default_factory=time.monotonic)


# A mailbox nobody has called for this long belongs to a worker that is gone: dropped with its events.
MAILBOX_IDLE_S = 3600.0


class GroupCollector:
    """The rendezvous actor of one shard. One asyncio loop, so no locks: every method runs to its next await."""

    def __init__(self, finished_cache: int = 4096):
        self.finished_cache = finished_cache
        self.open: dict[str, _Group] = {}
        self.finished: OrderedDict[str, dict[bytes, Any]] = OrderedDict()  # uid -> response_key -> result
        self.mailboxes: dict[str, _Mailbox] = {}
        self.joined = 0  # members received: those whose group no single worker held
        self.settings = GroupConfig()

    # ------------------------------------------------------------------ the two calls
    def send(
        self,
        worker: str,
        settings: GroupConfig,
        joins: list[tuple[str, int, list[tuple[int, Member]]]] = (),
        claims: list[tuple[str, set[bytes]]] = (),
        published: list[tuple[str, dict[bytes, Any], bool]] = (),
    ) -> tuple[list[bool], list]:
        """A worker's batch: ``published`` (uid, results by response key or ``{FAILED: (kind, message)}``,
        final: from the group's leader), ``claims`` (uid, the response keys it holds), ``joins`` (uid,
        expected size, [(ticket, member)]). Returns (an answer per claim, this worker's events)."""
        self.settings = settings  # the caller's (one actor may outlive a config, e.g. across tests)
        box = self._mailbox(worker)
        for uid, results, final in published:
            self._publish(uid, results, final)
        won = [self._claim(uid, keys) for uid, keys in claims]
        for uid, expected, arrivals in joins:
            self._join(worker, uid, expected, arrivals)
        self._sweep_mailboxes()
        return won, self._drain(box)

    async def poll(self, worker: str, wait_s: float) -> list:
        """This worker's events, as soon as there are any (at most ``wait_s`` later: then maybe none)."""
        box = self._mailbox(worker)
        if not box.events:
            try:
                await asyncio.wait_for(box.ready.wait(), wait_s)
            except asyncio.TimeoutError:
                pass
        return self._drain(self._mailbox(worker))

    # ------------------------------------------------------------------ joins and sealing
    def _join(self, worker: str, uid: str, expected: int, arrivals: list[tuple[int, Member]]) -> None:
        self.joined += len(arrivals)
        group = self.open.get(uid)
        if group is None and uid in self.finished:  # scored already: copies, or late members
            for ticket, member in arrivals:
                self._answer_from(self.finished[uid], Arrival(worker, ticket, member), uid)
            return
        if group is None:
            group = self.open[uid] = _Group(expected=max(1, expected))
            group.timer = self._later(self.settings.timeout_s, self._expire, uid, group)
        for ticket, member in arrivals:
            arrival = Arrival(worker, ticket, member)
            group.arrivals.append(arrival)
            if group.members is not None:
                self._after_sealing(uid, group, len(group.arrivals) - 1)
        if group.sealed or len(group.arrivals) < group.expected:
            return
        # `expected` distinct responses: nobody can be missing. Fewer: a copy may hold a real member's place.
        if self.settings.settle_s > 0 and len(set(group.texts())) < group.expected:
            if not group.settling:
                group.settling = True
                self._later(self.settings.settle_s, self._seal_if_open, uid, group)
        else:
            self._seal(uid, group)

    def _seal_if_open(self, uid: str, group: _Group) -> None:
        if self.open.get(uid) is group and not group.sealed:
            self._seal(uid, group)

    def _seal(self, uid: str, group: _Group, partial: bool = False) -> None:
        texts = group.texts()
        group.members = choose_members(texts, group.expected)
        leader = group.arrivals[group.members[0]]
        mine = {}
        for number, arrival in enumerate(group.arrivals):
            if arrival.worker == leader.worker:
                mine[arrival.ticket] = member_index(texts, group.members, number)
                group.served.add(number)
        members = [group.arrivals[n].member for n in group.members]
        self._post(leader.worker, Lead(leader.ticket, uid, members, mine, partial=partial))
        self._restart_timer(uid, group, self.settings.result_timeout_s)

    def _after_sealing(self, uid: str, group: _Group, number: int) -> None:
        """An arrival at a sealed group: a copy waits for its member's result; a new response is late."""
        arrival = group.arrivals[number]
        texts = group.texts()
        if group.claimed or member_index(texts, group.members, number) is not None:
            return  # answered when the results come
        group.arrivals.pop()
        self._post(arrival.worker, Lead(arrival.ticket, uid, [arrival.member], {arrival.ticket: 0}, late=True))

    def _expire(self, uid: str, group: _Group) -> None:
        """``timeout_s`` after the first arrival, the group is still incomplete."""
        if self.open.get(uid) is not group or group.sealed:
            return
        if self.settings.on_incomplete == "score":
            self._seal(uid, group, partial=True)
            return
        distinct = len(set(group.texts()))
        message = (
            f"group {uid}: {distinct} of {group.expected} rollouts arrived within groups.timeout_s="
            f"{self.settings.timeout_s:g} (verl aborted a rollout, a worker died, or a filter dropped one)"
        )
        self._close(uid, group, {FAILED: (INCOMPLETE, message)})

    def _leader_silent(self, uid: str, group: _Group) -> None:
        if self.open.get(uid) is group:
            waited = f"groups.result_timeout_s={self.settings.result_timeout_s:g}"
            who = "the worker that held it whole" if group.claimed else "its leader"
            self._close(uid, group, {FAILED: (ERROR, f"{who} published no result within {waited}")})

    # ------------------------------------------------------------------ claims and results
    def _claim(self, uid: str, keys: set[bytes]) -> bool:
        """May a worker holding the whole group (these response keys) score it there? The first claim
        wins, unless what arrived here holds a response the claimant lacks (a member it does not have):
        so a padded copy of a whole group, in another worker, is not scored twice."""
        group = self.open.get(uid)
        if group is None:
            if uid in self.finished:
                return False
            group = self.open[uid] = _Group(expected=1, claimed=True)
            group.timer = self._later(self.settings.result_timeout_s, self._leader_silent, uid, group)
            return True
        if group.sealed or not all(response_key(t) in keys for t in group.texts()):
            return False
        group.claimed = True  # the copies waiting here get the claimant's results
        self._restart_timer(uid, group, self.settings.result_timeout_s)
        return True

    def _publish(self, uid: str, results: dict[bytes, Any], final: bool) -> None:
        """Results of a group (``final``: from its leader, or the worker that claimed it), answering the
        members waiting here; or of a late member, only kept for its late copies."""
        group = self.open.get(uid)
        if group is not None and final:
            self._close(uid, group, results)
        else:
            self._remember(uid, results)

    def _close(self, uid: str, group: _Group, results: dict[bytes, Any]) -> None:
        del self.open[uid]
        if group.timer is not None:
            group.timer.cancel()
        self._remember(uid, results)
        for number, arrival in enumerate(group.arrivals):
            if number not in group.served:
                self._answer_from(results, arrival, uid)

    def _answer_from(self, results: dict[bytes, Any], arrival: Arrival, uid: str) -> None:
        """An arrival answered from its group's results: its result, the group's failure, or (a response
        the group did not have) a late lead."""
        if FAILED in results:
            kind, message = results[FAILED]
            self._post(arrival.worker, Failed(arrival.ticket, kind, message))
            return
        result = results.get(response_key(arrival.member.text))
        if result is None:
            self._post(arrival.worker, Lead(arrival.ticket, uid, [arrival.member], {arrival.ticket: 0}, late=True))
        else:
            self._post(arrival.worker, Result(arrival.ticket, result))

    def _remember(self, uid: str, results: dict[bytes, Any]) -> None:
        self.finished.setdefault(uid, {}).update(results)
        self.finished.move_to_end(uid)
        while len(self.finished) > self.finished_cache:
            self.finished.popitem(last=False)

    # ------------------------------------------------------------------ mailboxes and timers
    def _mailbox(self, worker: str) -> _Mailbox:
        box = self.mailboxes.get(worker)
        if box is None:
            box = self.mailboxes[worker] = _Mailbox()
        box.seen = time.monotonic()
        return box

    def _post(self, worker: str, event) -> None:
        box = self.mailboxes.get(worker) or self._mailbox(worker)
        box.events.append(event)
        if not box.waking:  # the poll answers at the end of the batch window, with what came meanwhile
            box.waking = True
            self._later(self.settings.batch_window_s, box.ready.set)

    @staticmethod
    def _drain(box: _Mailbox) -> list:
        events, box.events = box.events, []
        box.ready.clear()
        box.waking = False
        return events

    def _sweep_mailboxes(self) -> None:
        cutoff = time.monotonic() - MAILBOX_IDLE_S
        self.mailboxes = {worker: box for worker, box in self.mailboxes.items() if box.seen >= cutoff}

    @staticmethod
    def _later(delay: float, callback, *args) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(delay, callback, *args)

    def _restart_timer(self, uid: str, group: _Group, delay: float) -> None:
        if group.timer is not None:
            group.timer.cancel()
        group.timer = self._later(delay, self._leader_silent, uid, group)

    def stats(self) -> dict[str, int]:
        events = sum(len(box.events) for box in self.mailboxes.values())
        return {"open": len(self.open), "finished": len(self.finished), "joined": self.joined, "events": events}


def collector_name(shard: int = 0) -> str:
    """One collector per Ray job and shard: verl's reward workers all run in the trainer's job, and two
    training runs on one cluster are two jobs, so they never share groups."""
    return f"writing_rl_group_collector_{ray.get_runtime_context().get_job_id()}_{shard}"


def get_or_create_collector(settings: GroupConfig, shard: int = 0):
    """The collector of ``shard``, created on a node offering ``groups.actor_resources``
    (reward_loop/placement.py)."""
    name = collector_name(shard)
    placement = placement_options(name, settings.actor_resources, "reward.reward_kwargs.groups.actor_resources")
    return (
        remote_class(GroupCollector)
        # A collector that crashes (kill -9, OOM, its node lost) comes back under the same handle: the calls
        # in flight fail (their step fails, see rendezvous.GroupCollectorLost) and the next step finds it again.
        .options(name=name, get_if_exists=True, num_cpus=0, max_concurrency=100_000, max_restarts=-1, **placement)
        .remote(settings.finished_cache)
    )
