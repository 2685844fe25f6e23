"""A reward worker's side of the group rendezvous (the collector's side: ``group/collector.py``).

Members of one uid that reach this worker together (a colocated chunk; streamed rollouts that finish together)
form one ``LocalBatch``. After the burst (the next turn of the event loop), a batch holding a whole group is
scored here after a claim; any other member gets a ticket and goes to the uid's collector shard, through the
one ``send`` and one long ``poll`` per shard of docs/methods/group-rewards.md. Under load the batches grow by
themselves, so the calls per second stay bounded while samples per second grow.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from dataclasses import dataclass, field
from typing import Callable, Protocol

import ray

from writing_rl.reward_loop.actors import SharedActor
from writing_rl.reward_loop.config import GroupConfig
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.group.collector import (
    ERROR,
    FAILED,
    INCOMPLETE,
    Failed,
    GroupError,
    Lead,
    Result,
    choose_members,
    get_or_create_collector,
    member_index,
    response_key,
    shard_of,
)

logger = logging.getLogger("writing_rl")

POLL_WAIT_S = 30.0  # a poll with nothing to report returns after this long, and polls again


class GroupCollectorLost(RuntimeError):
    """The collector actor died while this sample waited: the step fails instead of hanging."""


@dataclass(frozen=True)
class Seat:
    """What one member learns from the rendezvous: to lead its group (score ``members``, then
    ``publish``), its result, or that its group never completed (``failure``: a counted failure)."""

    uid: str
    index: int = 0  # this member's position in the group's members
    members: list[Member] | None = None  # set: lead
    result: dict | None = None
    failure: str | None = None
    partial: bool = False
    late: bool = False
    # The leader's: futures of this worker's other members of the group, with their member index.
    mates: list[tuple[asyncio.Future, int]] = field(default_factory=list)
    shard: int = 0

    @property
    def lead(self) -> bool:
        return self.members is not None


class Collectors(Protocol):
    """The run's collectors as a worker calls them (``RayCollectors``; tests call ``GroupCollector``s directly)."""

    shards: int
    batch_window_s: float

    async def send(self, shard: int, worker: str, joins: list, claims: list, published: list) -> tuple: ...
    async def poll(self, shard: int, worker: str) -> list: ...


class RayCollectors:
    """The collector actors of a run (``groups.collector_shards``), looked up again at each new batch."""

    def __init__(self, settings: GroupConfig, batch: Callable[[], int]):
        self.settings = settings
        self.batch = batch
        self.shards = settings.collector_shards
        self.batch_window_s = settings.batch_window_s
        self._actors = [SharedActor(lambda s=s: get_or_create_collector(settings, s)) for s in range(self.shards)]

    async def send(self, shard: int, worker: str, joins: list, claims: list, published: list) -> tuple:
        return await self._call(shard, "send", worker, self.settings, joins, claims, published)

    async def poll(self, shard: int, worker: str) -> list:
        return await self._call(shard, "poll", worker, POLL_WAIT_S)

    async def _call(self, shard: int, method: str, *args):
        actor = self._actors[shard]
        try:
            return await getattr(actor.get(self.batch()), method).remote(*args)
        except ray.exceptions.RayActorError as err:
            actor.forget()
            raise GroupCollectorLost(
                "the group collector died while groups were gathering; this step fails and the next one finds "
                "it restarted"
            ) from err


class LocalBatch:
    """The members of one uid that reached this worker together, each waiting for its seat."""

    def __init__(self, uid: str, expected: int):
        self.uid = uid
        self.expected = expected
        self.members: list[Member] = []
        self.seats: list[asyncio.Future] = []


@dataclass
class _Outbox:
    """What goes to one collector shard in the next ``send``, and the calls in flight there."""

    joins: dict[str, tuple[int, list]] = field(default_factory=dict)  # uid -> (expected, [(ticket, member)])
    claims: list[LocalBatch] = field(default_factory=list)
    published: list[tuple[str, dict, bool]] = field(default_factory=list)
    sending: bool = False  # a send in flight, or one due at the end of the batch window
    polling: bool = False

    def __bool__(self) -> bool:
        return bool(self.joins or self.claims or self.published)


class GroupRendezvous:
    """This worker's side. ``join`` returns a member's ``Seat``; a leader then ``publish``es or ``fail``s."""

    def __init__(self, collectors: Collectors):
        self.collectors = collectors
        self.worker = uuid.uuid4().hex  # this worker's mailbox at the collectors
        self.pending: dict[str, LocalBatch] = {}  # this burst's arrivals, by uid
        self.waiting: dict[int, tuple[int, asyncio.Future]] = {}  # ticket -> (shard, seat) at a collector
        self.outboxes = [_Outbox() for _ in range(collectors.shards)]
        self._tickets = itertools.count()
        self._calls: set[asyncio.Task] = set()  # held: the loop keeps only weak references to tasks

    async def join(self, member: Member, expected: int) -> Seat:
        batch = self.pending.get(member.uid)
        if batch is None:
            batch = self.pending[member.uid] = LocalBatch(member.uid, max(1, expected))
            asyncio.get_running_loop().call_soon(self._route, member.uid)  # after this burst of arrivals
        seat = asyncio.get_running_loop().create_future()
        batch.members.append(member)
        batch.seats.append(seat)
        try:
            return await seat
        except asyncio.CancelledError:
            # A seat to lead given just as this sample was cancelled: its group must not wait for it.
            if seat.done() and not seat.cancelled() and seat.result().lead:
                self.fail(seat.result(), asyncio.CancelledError("the leading sample was cancelled"))
            raise

    def _route(self, uid: str) -> None:
        batch = self.pending.pop(uid)
        shard = shard_of(uid, self.collectors.shards)
        if len({m.text for m in batch.members}) >= batch.expected:
            # The whole group is here. A claim asks the collector whether it is this worker's to score:
            # a padded copy of a whole group in another worker must not be scored twice.
            self.outboxes[shard].claims.append(batch)
        else:
            self._queue_joins(shard, batch)
        self._flush(shard)

    def _queue_joins(self, shard: int, batch: LocalBatch) -> None:
        joins = self.outboxes[shard].joins.setdefault(batch.uid, (batch.expected, []))[1]
        for member, seat in zip(batch.members, batch.seats):
            ticket = next(self._tickets)
            self.waiting[ticket] = (shard, seat)
            joins.append((ticket, member))

    # ------------------------------------------------------------------ leaders
    def publish(self, seat: Seat, results: list[dict]) -> None:
        """The leader's results: to this worker's members directly, to the others' through the collector."""
        for mate, index in seat.mates:
            if not mate.done():
                mate.set_result(Seat(seat.uid, index, result=results[index], partial=seat.partial))
        by_response = {response_key(m.text): r for m, r in zip(seat.members, results)}
        self._publish(seat.shard, (seat.uid, by_response, not seat.late))

    def fail(self, seat: Seat, error: BaseException) -> None:
        """The leader failed: its group fails everywhere (a late member fails alone)."""
        if seat.late:
            return
        message = f"group {seat.uid} failed in its leader: {type(error).__name__}: {error}"
        for mate, _ in seat.mates:
            if not mate.done():
                mate.set_exception(GroupError(message))
        self._publish(seat.shard, (seat.uid, {FAILED: (ERROR, message)}, True))

    def _publish(self, shard: int, entry: tuple) -> None:
        self.outboxes[shard].published.append(entry)
        self._flush(shard)

    # ------------------------------------------------------------------ the calls
    def _flush(self, shard: int) -> None:
        """Send what is queued for ``shard`` at the end of the batch window, unless a send is in flight
        or due (its reply sends the rest)."""
        box = self.outboxes[shard]
        if box.sending or not box:
            return
        box.sending = True
        asyncio.get_running_loop().call_later(self.collectors.batch_window_s, self._send, shard)

    def _send(self, shard: int) -> None:
        box = self.outboxes[shard]
        joins = [(uid, expected, members) for uid, (expected, members) in box.joins.items()]
        claims, published = box.claims, box.published
        box.joins, box.claims, box.published = {}, [], []
        keys = [(b.uid, {response_key(m.text) for m in b.members}) for b in claims]
        call = self.collectors.send(shard, self.worker, joins, keys, published)
        self._spawn(call, lambda done: self._sent(shard, done, claims, published))

    def _sent(self, shard: int, done: asyncio.Future, claims: list[LocalBatch], published: list) -> None:
        self.outboxes[shard].sending = False
        error = _error_of(done)
        if error is not None:
            if published:
                logger.error("results of %d groups could not reach the collector: %s", len(published), error)
            for batch in claims:
                _fail_all(batch.seats, error)
            self._lost(shard, error)
        else:
            won, events = done.result()
            for batch, mine in zip(claims, won):
                if mine:
                    self._lead_here(batch)
                else:  # claimed elsewhere first: these are copies, and wait for that worker's results
                    self._queue_joins(shard, batch)
            self._deliver(events)
        self._flush(shard)
        self._poll(shard)

    def _poll(self, shard: int) -> None:
        box = self.outboxes[shard]
        if box.polling or not any(s == shard for s, _ in self.waiting.values()):
            return
        box.polling = True
        self._spawn(self.collectors.poll(shard, self.worker), lambda done: self._polled(shard, done))

    def _polled(self, shard: int, done: asyncio.Future) -> None:
        self.outboxes[shard].polling = False
        error = _error_of(done)
        if error is not None:
            self._lost(shard, error)
            return
        self._deliver(done.result())
        self._poll(shard)

    def _spawn(self, call, then: Callable[[asyncio.Future], None]) -> None:
        task = asyncio.ensure_future(call)
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        task.add_done_callback(then)

    def _lost(self, shard: int, error: BaseException) -> None:
        """A call to ``shard`` failed: every member waiting there fails with it."""
        for ticket in [t for t, (s, _) in self.waiting.items() if s == shard]:
            _, seat = self.waiting.pop(ticket)
            _fail_all([seat], error)

    # ------------------------------------------------------------------ events
    def _deliver(self, events: list) -> None:
        for event in events:
            entry = self.waiting.pop(event.ticket, None)
            if entry is None:
                continue  # its sample failed already (the collector was lost meanwhile)
            shard, seat = entry
            if isinstance(event, Result):
                _settle(seat, Seat("", result=event.result))
            elif isinstance(event, Failed):
                if event.kind == INCOMPLETE:
                    _settle(seat, Seat("", failure=event.message))
                else:
                    _fail_all([seat], GroupError(event.message))
            elif isinstance(event, Lead):
                self._lead_from(shard, seat, event)

    def _lead_from(self, shard: int, seat: asyncio.Future, lead: Lead) -> None:
        mates = [(self.waiting.pop(t)[1], i) for t, i in lead.mine.items() if t != lead.ticket and t in self.waiting]
        given = Seat(
            lead.uid, lead.mine[lead.ticket], lead.members, partial=lead.partial, late=lead.late, mates=mates,
            shard=shard,
        )  # fmt: skip
        if not _settle(seat, given):  # the leading sample is gone (cancelled)
            self.fail(given, asyncio.CancelledError("the leading sample was cancelled"))

    def _lead_here(self, batch: LocalBatch) -> None:
        """A whole group in this worker, claimed: its first distinct response leads, the rest wait for it."""
        texts = [m.text for m in batch.members]
        chosen = choose_members(texts, batch.expected)
        group = [batch.members[n] for n in chosen]
        mates = [(batch.seats[n], member_index(texts, chosen, n)) for n in range(len(texts)) if n != chosen[0]]
        lead = Seat(batch.uid, 0, group, mates=mates, shard=shard_of(batch.uid, self.collectors.shards))
        if not _settle(batch.seats[chosen[0]], lead):
            self.fail(lead, asyncio.CancelledError("the leading sample was cancelled"))


def _settle(seat: asyncio.Future, value: Seat) -> bool:
    if seat.done():
        return False
    seat.set_result(value)
    return True


def _fail_all(seats: list[asyncio.Future], error: BaseException) -> None:
    for seat in seats:
        if not seat.done():
            seat.set_exception(error)


def _error_of(done: asyncio.Future) -> BaseException | None:
    return asyncio.CancelledError() if done.cancelled() else done.exception()


__all__ = ["GroupCollectorLost", "GroupRendezvous", "RayCollectors", "Seat"]
