"""GroupCollector called directly, one call at a time, without Ray or the workers' side: what each event says,
to whom, and when (tests/test_groups.py drives it through the workers' GroupRendezvous)."""

import asyncio
import types

import pytest
from ray_standin import recording_actor_factory

from writing_rl.reward_loop.config import GroupConfig
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.group import collector as collector_module
from writing_rl.reward_loop.group.collector import (
    ERROR,
    FAILED,
    INCOMPLETE,
    Failed,
    GroupCollector,
    Lead,
    Result,
    response_key,
)

from waiting import until

SETTINGS = GroupConfig(timeout_s=30.0, settle_s=0.0, result_timeout_s=30.0, batch_window_s=0.0)


def member(text: str, uid: str = "u") -> Member:
    return Member(
        uid=uid, text=text, response_length=len(text), prompt="p", data_source="d", ground_truth={}, extra_info={}
    )


def run(body):
    """``body(collector)`` in a fresh event loop (the collector's timers need one)."""

    async def main():
        return await body(GroupCollector(finished_cache=8))

    return asyncio.run(main())


async def events_of(collector: GroupCollector, worker: str, wait_s: float = 5.0) -> list:
    return await collector.poll(worker, wait_s)


def join(collector, worker, uid, expected, *tickets_texts, settings=SETTINGS):
    """``worker`` sends members (ticket, text) of ``uid``; returns the events in the reply."""
    arrivals = [(ticket, member(text, uid)) for ticket, text in tickets_texts]
    won, events = collector.send(worker, settings, joins=[(uid, expected, arrivals)])
    assert won == []
    return events


async def a_sealed_pair(c) -> None:
    """Group "u" of 2: "a" from w1 (ticket 1, so w1 leads, its lead taken) and "b" from w2 (ticket 2)."""
    join(c, "w1", "u", 2, (1, "a"))
    join(c, "w2", "u", 2, (2, "b"))
    await events_of(c, "w1")


def test_the_leaders_worker_answers_its_own_members_copies_included_and_the_others_wait():
    async def body(c):
        assert join(c, "w2", "u", 3, (20, "b")) == []
        # w1's second arrival is a copy of its first: sealing waits for nothing (settle_s 0) once 3 arrived.
        events = join(c, "w1", "u", 3, (10, "a"), (11, "c"))
        assert events == []  # the lead comes in the next poll (the batch window)
        (lead,) = await events_of(c, "w2")
        assert lead == Lead(20, "u", [member("b"), member("a"), member("c")], {20: 0}, partial=False, late=False)
        results = {response_key(t): {"score": s} for t, s in (("a", 1.0), ("b", 2.0), ("c", 3.0))}
        c.send("w2", SETTINGS, published=[("u", results, True)])
        assert sorted(await events_of(c, "w1"), key=lambda e: e.ticket) == [
            Result(10, {"score": 1.0}),
            Result(11, {"score": 3.0}),
        ]
        assert c.stats() == {"open": 0, "finished": 1, "joined": 3, "events": 0}

    run(body)


def test_a_lead_maps_each_ticket_of_the_leaders_worker_to_its_member_a_surplus_copy_to_its_original():
    async def body(c):
        settings = GroupConfig(timeout_s=30.0, settle_s=0.01, result_timeout_s=30.0, batch_window_s=0.0)
        # Two distinct of 2 expected, plus a copy of "a": all from w1, in one send, the lead in its reply.
        (lead,) = join(c, "w1", "u", 2, (1, "a"), (2, "a"), (3, "b"), settings=settings)
        assert [m.text for m in lead.members] == ["a", "b"]
        assert lead.ticket == 1 and lead.mine == {1: 0, 2: 0, 3: 1}

    run(body)


def test_a_copy_arriving_at_a_sealed_group_waits_for_its_members_result():
    async def body(c):
        join(c, "w1", "u", 2, (1, "a"))
        join(c, "w2", "u", 2, (2, "b"))
        (lead,) = await events_of(c, "w1")
        assert lead.ticket == 1
        assert join(c, "w3", "u", 2, (3, "b")) == []  # sealed, not finished: the copy waits
        assert await events_of(c, "w3", wait_s=0.05) == []
        c.send("w1", SETTINGS, published=[("u", {response_key("a"): {"s": 1}, response_key("b"): {"s": 2}}, True)])
        assert await events_of(c, "w3") == [Result(3, {"s": 2})]
        assert await events_of(c, "w2") == [Result(2, {"s": 2})]

    run(body)


def test_a_new_response_at_a_sealed_group_is_led_alone_as_late_and_left_out_of_the_group():
    async def body(c):
        await a_sealed_pair(c)
        assert join(c, "w3", "u", 2, (3, "z")) == [Lead(3, "u", [member("z")], {3: 0}, late=True)]
        c.send("w1", SETTINGS, published=[("u", {response_key("a"): {"s": 1}, response_key("b"): {"s": 2}}, True)])
        assert await events_of(c, "w2") == [Result(2, {"s": 2})]
        assert await events_of(c, "w3", wait_s=0.05) == []  # nothing more for the late member here

    run(body)


def test_a_group_short_of_members_fails_each_arrival_naming_the_count_and_the_setting():
    async def body(c):
        settings = GroupConfig(timeout_s=0.05, settle_s=0.0, result_timeout_s=30.0, batch_window_s=0.0)
        join(c, "w1", "u", 3, (1, "a"), settings=settings)
        join(c, "w2", "u", 3, (2, "a"), settings=settings)
        message = (
            "group u: 1 of 3 rollouts arrived within groups.timeout_s=0.05 (verl aborted a rollout, a worker "
            "died, or a filter dropped one)"
        )
        assert await events_of(c, "w1") == [Failed(1, INCOMPLETE, message)]
        assert await events_of(c, "w2") == [Failed(2, INCOMPLETE, message)]
        assert c.stats()["open"] == 0
        # A late copy of a failed group fails at once, in the reply.
        assert join(c, "w3", "u", 3, (3, "b"), settings=settings) == [Failed(3, INCOMPLETE, message)]

    run(body)


def test_on_incomplete_score_leads_the_partial_group_instead():
    async def body(c):
        settings = GroupConfig(
            timeout_s=0.05, settle_s=0.0, result_timeout_s=30.0, batch_window_s=0.0, on_incomplete="score"
        )
        join(c, "w1", "u", 3, (1, "a"), settings=settings)
        join(c, "w2", "u", 3, (2, "b"), settings=settings)
        assert await events_of(c, "w1") == [Lead(1, "u", [member("a"), member("b")], {1: 0}, partial=True)]
        assert c.stats()["open"] == 1  # sealed: waiting for its leader's results

    run(body)


def test_a_silent_leader_fails_the_members_it_does_not_answer_naming_the_setting():
    async def body(c):
        settings = GroupConfig(timeout_s=30.0, settle_s=0.0, result_timeout_s=0.05, batch_window_s=0.0)
        join(c, "w1", "u", 2, (1, "a"), settings=settings)
        join(c, "w2", "u", 2, (2, "b"), settings=settings)
        assert [type(e) for e in await events_of(c, "w1")] == [Lead]
        message = "its leader published no result within groups.result_timeout_s=0.05"
        assert await events_of(c, "w2") == [Failed(2, ERROR, message)]
        assert await events_of(c, "w1", wait_s=0.1) == []  # the leader's own members are its own to answer
        assert c.finished["u"] == {FAILED: (ERROR, message)}

    run(body)


def test_copies_of_a_claimed_group_fail_when_the_worker_holding_it_publishes_nothing():
    async def body(c):
        settings = GroupConfig(timeout_s=30.0, settle_s=0.0, result_timeout_s=0.05, batch_window_s=0.0)
        won, _ = c.send("w1", settings, claims=[("u", {response_key("a"), response_key("b")})])
        assert won == [True]
        join(c, "w2", "u", 2, (2, "a"), settings=settings)
        message = "the worker that held it whole published no result within groups.result_timeout_s=0.05"
        assert await events_of(c, "w2") == [Failed(2, ERROR, message)]

    run(body)


def test_the_first_claim_wins_and_a_finished_group_cannot_be_claimed():
    async def body(c):
        keys = {response_key("a"), response_key("b")}
        assert c.send("w1", SETTINGS, claims=[("u", keys)])[0] == [True]
        assert c.send("w2", SETTINGS, claims=[("u", keys)])[0] == [False]
        c.send("w1", SETTINGS, published=[("u", {response_key("a"): {"s": 1}, response_key("b"): {"s": 2}}, True)])
        assert c.send("w3", SETTINGS, claims=[("u", keys)])[0] == [False]
        # A copy arriving afterwards gets the claimant's result, in the reply.
        assert join(c, "w3", "u", 2, (9, "b")) == [Result(9, {"s": 2})]

    run(body)


def test_a_claim_covering_what_arrived_takes_over_the_group_and_its_copies_get_the_claimants_results():
    async def body(c):
        join(c, "w2", "u", 3, (2, "a"))  # a padded copy of w1's whole group arrived here first
        keys = {response_key(t) for t in ("a", "b", "c")}
        assert c.send("w1", SETTINGS, claims=[("u", keys)])[0] == [True]
        assert c.send("w1", SETTINGS, claims=[("v", {response_key("x")})])[0] == [True]  # a new uid: claimed
        # A claim lacking what arrived loses.
        join(c, "w2", "w", 3, (5, "q"))
        assert c.send("w1", SETTINGS, claims=[("w", {response_key("a")})])[0] == [False]
        c.send("w1", SETTINGS, published=[("u", {k: {"s": 7} for k in keys}, True)])
        assert await events_of(c, "w2") == [Result(2, {"s": 7})]

    run(body)


def test_a_claimed_group_fails_its_copies_after_result_timeout_not_timeout():
    async def body(c):
        settings = GroupConfig(timeout_s=30.0, settle_s=0.0, result_timeout_s=0.05, batch_window_s=0.0)
        join(c, "w2", "u", 3, (2, "a"), settings=settings)
        assert c.send("w1", settings, claims=[("u", {response_key("a")})])[0] == [True]
        (failed,) = await events_of(c, "w2")
        assert failed.kind == ERROR and "the worker that held it whole" in failed.message

    run(body)


def test_results_published_without_final_are_kept_for_late_copies_only():
    async def body(c):
        await a_sealed_pair(c)
        c.send("w3", SETTINGS, published=[("u", {response_key("z"): {"s": 9}}, False)])  # a late member's
        assert c.stats()["open"] == 1  # the group still waits for its leader
        assert c.finished["u"] == {response_key("z"): {"s": 9}}

    run(body)


def test_poll_answers_at_once_when_events_wait_and_after_wait_s_with_none():
    async def body(c):
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await c.poll("w1", 0.05) == []
        assert loop.time() - started >= 0.04
        c._post("w1", Result(1, {}))
        await until(lambda: c.mailboxes["w1"].ready.is_set())
        started = loop.time()
        assert await c.poll("w1", 30.0) == [Result(1, {})]
        assert loop.time() - started < 10.0

    run(body)


def test_a_worker_silent_for_an_hour_loses_its_mailbox():
    async def body(c):
        c._post("gone", Result(1, {}))
        c.mailboxes["gone"].seen -= collector_module.MAILBOX_IDLE_S + 1
        c.send("w1", SETTINGS)
        assert set(c.mailboxes) == {"w1"}

    run(body)


def test_the_collector_is_one_named_restartable_actor_per_job_and_shard(monkeypatch):
    made, Remote, placement_options = recording_actor_factory()
    context = types.SimpleNamespace(get_job_id=lambda: "07000000")
    monkeypatch.setattr(collector_module, "ray", types.SimpleNamespace(get_runtime_context=lambda: context))
    monkeypatch.setattr(collector_module, "remote_class", Remote)

    monkeypatch.setattr(collector_module, "placement_options", placement_options)
    settings = GroupConfig(finished_cache=77, actor_resources={"node:__internal_head__": 0.01})
    assert collector_module.collector_name(3) == "writing_rl_group_collector_07000000_3"
    assert collector_module.collector_name() == "writing_rl_group_collector_07000000_0"
    assert collector_module.get_or_create_collector(settings, shard=2) == "handle"
    assert made == {
        "cls": GroupCollector,
        "options": {
            "name": "writing_rl_group_collector_07000000_2",
            "get_if_exists": True,
            "num_cpus": 0,
            "max_concurrency": 100_000,
            "max_restarts": -1,
            "resources": {"node:__internal_head__": 0.01},
        },
        "args": (77,),
        "placement": (
            "writing_rl_group_collector_07000000_2",
            {"node:__internal_head__": 0.01},
            "reward.reward_kwargs.groups.actor_resources",
        ),
    }
    collector_module.get_or_create_collector(GroupConfig())
    assert made["options"]["name"].endswith("_0")


@pytest.mark.parametrize("expected", [0, -1])
def test_an_expected_size_below_one_is_a_group_of_one(expected):
    async def body(c):
        assert join(c, "w1", "u", expected, (1, "a")) == [Lead(1, "u", [member("a")], {1: 0})]

    run(body)


SETTLING = GroupConfig(timeout_s=30.0, settle_s=0.05, result_timeout_s=30.0, batch_window_s=0.0)


def test_identical_arrivals_are_sealed_as_the_group_once_settle_s_passes():
    async def body(c):
        assert join(c, "w1", "u", 2, (1, "a"), (2, "a"), settings=SETTLING) == []  # settling
        assert c.stats()["open"] == 1
        assert await events_of(c, "w1") == [Lead(1, "u", [member("a"), member("a")], {1: 0, 2: 1})]

    run(body)


def test_a_real_member_arriving_while_copies_settle_takes_its_place_and_the_group_is_led_once():
    async def body(c):
        assert join(c, "w1", "u", 2, (1, "a"), (2, "a"), settings=SETTLING) == []
        assert join(c, "w2", "u", 2, (3, "b"), settings=SETTLING) == []
        assert await events_of(c, "w1") == [Lead(1, "u", [member("a"), member("b")], {1: 0, 2: 0})]
        assert await events_of(c, "w1", wait_s=0.2) == []  # the settle timer, past, seals nothing again

    run(body)


def test_a_group_that_expired_while_its_copies_settled_is_not_led_afterwards():
    async def body(c):
        settings = GroupConfig(timeout_s=0.05, settle_s=0.3, result_timeout_s=30.0, batch_window_s=0.0)
        assert join(c, "w1", "u", 2, (1, "a"), (2, "a"), settings=settings) == []
        assert [e.kind for e in await events_of(c, "w1")] == [INCOMPLETE, INCOMPLETE]
        assert await events_of(c, "w1", wait_s=0.6) == []  # past settle_s: no lead for the failed group

    run(body)


def test_sealing_a_group_cancels_its_timeout_and_only_the_result_timeout_remains():
    async def body(c):
        join(c, "w1", "u", 2, (1, "a"))
        timeout = c.open["u"].timer
        join(c, "w2", "u", 2, (2, "b"))
        assert timeout.cancelled() and not c.open["u"].timer.cancelled()
        c.send("w1", SETTINGS, published=[("u", {response_key("a"): {}, response_key("b"): {}}, True)])
        assert c.open == {}

    run(body)


def test_a_response_key_is_16_bytes_for_any_text_lone_surrogates_included():
    assert len(response_key("x")) == len(response_key("x" * 100_000)) == 16
    assert response_key("\ud800") != response_key("\ud801")  # text verl decoded with errors kept


def test_with_settle_s_0_identical_arrivals_are_sealed_in_the_call_that_completes_them():
    async def body(c):
        join(c, "w2", "u", 2, (2, "a"))
        join(c, "w1", "u", 2, (1, "a"))  # 2 arrivals, 1 distinct response: nothing to wait for
        assert [type(e) for e in c.mailboxes["w2"].events] == [Lead]

    run(body)


def test_a_member_whose_response_the_leader_did_not_score_is_led_alone_as_late():
    async def body(c):
        await a_sealed_pair(c)
        c.send("w1", SETTINGS, published=[("u", {response_key("a"): {"s": 1}}, True)])  # nothing for "b"
        assert await events_of(c, "w2") == [Lead(2, "u", [member("b")], {2: 0}, late=True)]

    run(body)


def test_an_event_for_a_worker_gone_for_an_hour_does_not_keep_its_mailbox():
    async def body(c):
        c.send("gone", SETTINGS)
        c.mailboxes["gone"].seen -= collector_module.MAILBOX_IDLE_S + 1
        c._post("gone", Result(1, {}))  # what the collector sends does not say the worker is there
        c.send("w1", SETTINGS)
        assert "gone" not in c.mailboxes

    run(body)


def test_a_shard_is_in_range_for_any_uid_lone_surrogates_included():
    uids = ["u", "\ud800", "x" * 10_000]
    assert all(0 <= collector_module.shard_of(uid, 3) < 3 for uid in uids)
    assert collector_module.shard_of("\ud800", 1) == 0
