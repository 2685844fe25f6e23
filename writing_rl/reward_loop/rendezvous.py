"""A reward worker's side of the group rendezvous (the collector's side: ``reward_loop/collector.py``).

Members of one uid that reach this worker together (verl's colocated mode sends a worker its whole
chunk at once; in streaming mode rollouts that finish together arrive together) form one ``LocalBatch``.
After the burst (the next turn of the event loop), the batch is either a whole group, scored here with
no round trip, or goes to the uid's collector shard in one call. Results of groups scored here go to
the collector afterwards, batched, for copies of them that other workers hold (verl's padding).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any, Callable, Protocol

import ray

from writing_rl.reward_loop.actors import SharedActor
from writing_rl.reward_loop.collector import (
    FAILED,
    GroupError,
    Member,
    Ticket,
    choose_members,
    get_or_create_collector,
    member_index,
    response_key,
    shard_of,
)
from writing_rl.reward_loop.config import GroupConfig

logger = logging.getLogger("writing_rl")


class GroupCollectorLost(RuntimeError):
    """The collector actor died while this sample waited: the step fails instead of hanging."""


class Collectors(Protocol):
    """The run's collectors as a worker calls them (``RayCollectors``; tests call a ``GroupCollector`` directly)."""

    async def claim(self, groups: list[tuple[str, set[bytes]]]) -> list[bool]: ...
    async def join(self, uid: str, members: list[Member], expected: int) -> list[Ticket]: ...
    async def publish(self, uid: str, results: list[dict]) -> None: ...
    def fail(self, uid: str, message: str) -> None: ...
    def remember(self, entries: list[tuple[str, dict[bytes, Any]]]) -> None: ...


class RayCollectors:
    """The collector actors of a run (``groups.collector_shards``), looked up again at each new batch."""

    def __init__(self, settings: GroupConfig, batch: Callable[[], int]):
        self.settings = settings
        self.batch = batch
        self.shards = [
            SharedActor(lambda s=s: get_or_create_collector(settings, s)) for s in range(settings.collector_shards)
        ]

    def _shard(self, uid: str) -> SharedActor:
        return self.shards[shard_of(uid, len(self.shards))]

    async def claim(self, groups: list[tuple[str, set[bytes]]]) -> list[bool]:
        by_shard = defaultdict(list)
        for position, (uid, _) in enumerate(groups):
            by_shard[shard_of(uid, len(self.shards))].append(position)
        won = [False] * len(groups)
        calls = {
            shard: self._call(self.shards[shard], "claim", [groups[p] for p in positions], self.settings)
            for shard, positions in by_shard.items()
        }
        for shard, answer in zip(calls, await asyncio.gather(*calls.values())):
            for position, mine in zip(by_shard[shard], answer):
                won[position] = mine
        return won

    async def join(self, uid: str, members: list[Member], expected: int) -> list[Ticket]:
        return await self._call(self._shard(uid), "join", uid, members, expected, self.settings)

    async def _call(self, shard: SharedActor, method: str, *args):
        try:
            return await getattr(shard.get(self.batch()), method).remote(*args)
        except ray.exceptions.RayActorError as err:
            shard.forget()
            raise GroupCollectorLost(
                "the group collector died while groups were gathering; this step fails and the next one finds "
                "it restarted"
            ) from err

    async def publish(self, uid: str, results: list[dict]) -> None:
        await self._shard(uid).get(self.batch()).publish.remote(uid, results)

    def fail(self, uid: str, message: str) -> None:
        self._shard(uid).get(self.batch()).fail.remote(uid, message)

    def remember(self, entries: list[tuple[str, dict[bytes, Any]]]) -> None:
        by_shard = defaultdict(list)
        for uid, results in entries:
            by_shard[shard_of(uid, len(self.shards))].append((uid, results))
        for shard, shard_entries in by_shard.items():
            self.shards[shard].get(self.batch()).remember.remote(shard_entries)


class LocalBatch:
    """The members of one uid that reached this worker together, and the results its leader shares."""

    def __init__(self, uid: str, expected: int, result_timeout_s: float | None):
        self.uid = uid
        self.expected = expected
        self.result_timeout_s = result_timeout_s
        self.members: list[Member] = []
        loop = asyncio.get_running_loop()
        self.tickets: asyncio.Future[list[Ticket]] = loop.create_future()
        self._results: asyncio.Future[list[dict]] = loop.create_future()

    async def results(self) -> list[dict]:
        """The group's results, from the leader of this batch (in this worker)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._results), self.result_timeout_s)
        except asyncio.TimeoutError:
            raise GroupError(
                f"group {self.uid}: its leader in this worker published no result within "
                f"groups.result_timeout_s={self.result_timeout_s}"
            ) from None

    def share(self, results: list[dict]) -> None:
        if not self._results.done():
            self._results.set_result(results)

    def fail(self, error: BaseException) -> None:
        if not self._results.done():
            self._results.set_exception(error)
            self._results.exception()  # retrieved: a batch with nobody waiting logs nothing


def whole_group_tickets(members: list[Member], expected: int) -> list[Ticket]:
    """Tickets for a batch holding ``expected`` distinct responses: the group is sealed in this worker."""
    texts = [m.text for m in members]
    chosen = choose_members(texts, expected)
    group = [members[n] for n in chosen]
    return [
        Ticket(lead=True, index=0, members=group, sealed_here=True)
        if arrival == chosen[0]
        else Ticket(lead=False, index=member_index(texts, chosen, arrival), sealed_here=True)
        for arrival in range(len(members))
    ]


class GroupRendezvous:
    """This worker's side. ``result_timeout_s``: how long a member waits for a leader in this worker."""

    def __init__(self, collectors: Collectors, result_timeout_s: float | None = None):
        self.collectors = collectors
        self.result_timeout_s = result_timeout_s
        self.pending: dict[str, LocalBatch] = {}  # this burst's batches, by uid
        self.claims: list[LocalBatch] = []  # this burst's whole groups, to claim at the collector
        self.outbox: list[tuple[str, dict[bytes, Any]]] = []  # results for the collector
        self._calls: set[asyncio.Task] = set()  # collector calls in flight (held: the loop keeps weak refs)

    async def join(self, member: Member, expected: int) -> tuple[Ticket, LocalBatch]:
        batch = self.pending.get(member.uid)
        if batch is None:
            batch = self.pending[member.uid] = LocalBatch(member.uid, max(1, expected), self.result_timeout_s)
            asyncio.get_running_loop().call_soon(self._send, member.uid)  # after this burst of arrivals
        position = len(batch.members)
        batch.members.append(member)
        try:
            tickets = await asyncio.shield(batch.tickets)
        except asyncio.CancelledError:
            # This sample was cancelled: if it was to lead, its batch-mates must not wait for it.
            batch.tickets.add_done_callback(lambda done: self._abandon(done, position, batch))
            raise
        return tickets[position], batch

    def _abandon(self, tickets: asyncio.Future, position: int, batch: LocalBatch) -> None:
        if tickets.cancelled() or tickets.exception() is not None:
            return
        ticket = tickets.result()[position]
        if ticket.lead and not ticket.late:
            self.fail(ticket, batch, batch.uid, asyncio.CancelledError("the leading sample was cancelled"))

    def _send(self, uid: str) -> None:
        batch = self.pending.pop(uid)
        if len({m.text for m in batch.members}) >= batch.expected:
            # The whole group is here. One claim per burst asks the collector whether it is this worker's
            # to score: a padded copy of a whole group in another worker must not be scored twice.
            self.claims.append(batch)
            if len(self.claims) == 1:
                asyncio.get_running_loop().call_soon(self._send_claims)
        else:
            self._call(self.collectors.join(uid, batch.members, batch.expected), [batch])

    def _send_claims(self) -> None:
        batches, self.claims = self.claims, []
        self._call(self._claim(batches), batches)

    async def _claim(self, batches: list[LocalBatch]) -> None:
        won = await self.collectors.claim([(b.uid, {response_key(m.text) for m in b.members}) for b in batches])
        for batch, mine in zip(batches, won):
            if mine:
                batch.tickets.set_result(whole_group_tickets(batch.members, batch.expected))
            else:  # claimed elsewhere first: these are copies, and wait for that worker's results
                self._call(self.collectors.join(batch.uid, batch.members, batch.expected), [batch])

    def _call(self, call, batches: list[LocalBatch]) -> None:
        """A collector call in the background; its failure fails the batches still waiting for tickets."""
        task = asyncio.ensure_future(call)
        self._calls.add(task)

        def settle(done: asyncio.Future) -> None:
            self._calls.discard(done)
            error = done.exception() if not done.cancelled() else asyncio.CancelledError()
            for batch in batches:
                if batch.tickets.done():
                    continue
                if error is not None:
                    batch.tickets.set_exception(error)
                elif done.result() is not None:
                    batch.tickets.set_result(done.result())

        task.add_done_callback(settle)

    async def publish(self, ticket: Ticket, batch: LocalBatch, uid: str, results: list[dict]) -> None:
        """The leader's results: to its own batch, and to the collector for the members or copies that
        other workers hold (sent in a batch with other groups' unless the collector sealed the group)."""
        if ticket.late:
            self._remember(uid, {response_key(ticket.members[0].text): results[0]})
            return
        batch.share(results)
        if ticket.sealed_here:
            self._remember(uid, {response_key(m.text): r for m, r in zip(ticket.members, results)})
        else:
            await self.collectors.publish(uid, results)

    def fail(self, ticket: Ticket, batch: LocalBatch, uid: str, error: BaseException) -> None:
        """The leader failed: its group fails everywhere (a late member fails alone)."""
        if ticket.late:
            return
        message = f"{type(error).__name__}: {error}"
        batch.fail(GroupError(f"group {uid} failed in its leader: {message}"))
        if ticket.sealed_here:
            self._remember(uid, {FAILED: message})
        else:
            self.collectors.fail(uid, message)

    def _remember(self, uid: str, results: dict[bytes, Any]) -> None:
        self.outbox.append((uid, results))
        if len(self.outbox) == 1:
            asyncio.get_running_loop().call_soon(self._flush_outbox)

    def _flush_outbox(self) -> None:
        entries, self.outbox = self.outbox, []
        try:
            self.collectors.remember(entries)
        except Exception as err:  # copies elsewhere then fail after groups.result_timeout_s, not silently
            logger.error("group results for %d groups could not reach the collector: %s", len(entries), err)
