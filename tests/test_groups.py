"""The group rendezvous: reward workers' side (GroupRendezvous) and the collector's (GroupCollector),
driven in one event loop without Ray; each "worker" is its own GroupRendezvous."""

import asyncio
import os
import pickle
import subprocess
import sys
from collections import Counter

import pytest

from writing_rl.reward_loop.config import GroupConfig
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.group.collector import GroupCollector, GroupError, shard_of
from writing_rl.reward_loop.group.rendezvous import GroupRendezvous

from waiting import until

FAST = GroupConfig(timeout_s=5.0, settle_s=0.05, result_timeout_s=5.0, finished_cache=3)


def member(text: str, uid: str = "u1") -> Member:
    return Member(
        uid=uid, text=text, response_length=len(text), prompt="p", data_source="d", ground_truth={}, extra_info={}
    )


class Direct:
    """A GroupCollector called in this loop the way RayCollectors calls the actor; counts the calls and
    the members they carried."""

    shards = 1

    def __init__(self, collector: GroupCollector, settings: GroupConfig):
        self.collector = collector
        self.settings = settings
        self.batch_window_s = settings.batch_window_s
        self.calls = Counter()

    async def send(self, shard, worker, joins, claims, published):
        self.calls["send"] += 1
        self.calls["joined"] += sum(len(members) for _, _, members in joins)
        self.calls["claims"] += len(claims)
        self.calls["published"] += len(published)
        await asyncio.sleep(0)  # a call takes at least a turn of the loop, as over Ray
        return self.collector.send(worker, self.settings, joins, claims, published)

    async def poll(self, shard, worker):
        self.calls["poll"] += 1
        return await self.collector.poll(worker, 1.0)


def score_by_length(members):
    return [{"score": len(m.text), "text": m.text} for m in members]


async def run_group(workers, uid, texts, expected, placement=None, delays=None, lead=score_by_length):
    """Every text joins through its worker (``placement``: one worker index per text; default: a worker
    each, as in streaming mode), after its delay; a leader scores each member with ``lead``.
    Returns ([(seat, result)], the member texts of each lead)."""
    leads = []
    placement = placement if placement is not None else list(range(len(texts)))

    async def one(text, worker, delay):
        await asyncio.sleep(delay)
        rendezvous = workers[worker]
        seat = await rendezvous.join(member(text, uid), expected)
        if seat.lead:
            leads.append([m.text for m in seat.members])
            try:
                results = lead(seat.members)
            except Exception as err:
                rendezvous.fail(seat, err)
                raise
            rendezvous.publish(seat, results)
            return seat, results[seat.index]
        return seat, seat.result

    delays = delays or [0.0] * len(texts)
    outcomes = await asyncio.gather(*(one(t, w, d) for t, w, d in zip(texts, placement, delays)))
    return outcomes, leads


def cluster(workers: int, settings=FAST, finished_cache=None):
    collector = GroupCollector(finished_cache or settings.finished_cache)
    direct = Direct(collector, settings)
    return collector, direct, [GroupRendezvous(direct) for _ in range(workers)]


async def until_remembered(collector, uid):
    await until(lambda: uid in collector.finished, step_s=0)


def test_a_group_complete_in_one_worker_is_scored_there_after_one_claim():
    collector, direct, workers = cluster(1)

    async def scenario():
        outcomes = await run_group(workers, "u1", ["a", "bb", "ccc", "dddd"], expected=4, placement=[0] * 4)
        await until_remembered(collector, "u1")  # sent afterwards, for copies other workers may hold
        return outcomes

    outcomes, leads = asyncio.run(scenario())
    assert leads == [["a", "bb", "ccc", "dddd"]]
    assert [r["text"] for _, r in outcomes] == ["a", "bb", "ccc", "dddd"]
    # One send with the claim, one with the results (for copies other workers may hold); no member travelled.
    assert direct.calls == {"send": 2, "claims": 1, "published": 1, "joined": 0}
    assert collector.stats() == {"open": 0, "finished": 1, "joined": 0, "events": 0}


def test_a_group_split_over_two_workers_costs_one_send_per_worker():
    collector, direct, workers = cluster(2)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    outcomes, leads = asyncio.run(run_group(workers, "u1", texts, expected=5, placement=[0, 1, 0, 1, 1]))
    assert leads == [["a", "ccc", "bb", "dddd", "eeeee"]]  # one leader; members in the order their batches came
    assert [r["text"] for _, r in outcomes] == texts
    # Each worker's members in one send; the leader's results in one more.
    assert direct.calls["send"] == 3 and direct.calls["joined"] == 5 and direct.calls["published"] == 1
    assert collector.stats() == {"open": 0, "finished": 1, "joined": 5, "events": 0}


def test_groups_do_not_mix():
    _, _, workers = cluster(2)

    async def both():
        return await asyncio.gather(
            run_group(workers, "g1", ["x1", "x2"], expected=2, placement=[0, 1]),
            run_group(workers, "g2", ["y1", "y2", "y3"], expected=3, placement=[1, 0, 0]),
        )

    (out1, leads1), (out2, leads2) = asyncio.run(both())
    assert leads1 == [["x1", "x2"]] and sorted(leads2[0]) == ["y1", "y2", "y3"]
    assert [r["text"] for _, r in out1 + out2] == ["x1", "x2", "y1", "y2", "y3"]


def test_padded_copy_arriving_early_does_not_take_a_real_members_place():
    # verl pads by repeating the first samples: "a" arrives twice before "c" does.
    texts = ["a", "b", "a", "c"]  # expected 3 real members a, b, c plus one copy of a
    # "c" seals the group as soon as it arrives (3 distinct responses), long before settle_s.
    patient = GroupConfig(timeout_s=120.0, settle_s=60.0, result_timeout_s=5.0)
    _, _, workers = cluster(4, settings=patient)
    grouped = run_group(workers, "u1", texts, expected=3, delays=[0, 0, 0, 0.02])
    outcomes, leads = asyncio.run(asyncio.wait_for(grouped, timeout=30))  # not settle_s
    assert leads == [["a", "b", "c"]]
    assert [r["text"] for _, r in outcomes] == ["a", "b", "a", "c"]  # the copy gets its original's result


def test_a_copy_waiting_at_the_collector_gets_the_result_of_a_group_scored_in_a_worker():
    collector, direct, workers = cluster(2)

    async def scenario():
        copy = asyncio.ensure_future(run_group(workers, "u1", ["b"], expected=3, placement=[1]))
        await until(lambda: "u1" in collector.open, step_s=0)  # the copy waits at the collector
        group = await run_group(workers, "u1", ["a", "b", "c"], expected=3, placement=[0, 0, 0])
        return group, await asyncio.wait_for(copy, timeout=30)  # not timeout_s

    (group, leads), (copy, copy_leads) = asyncio.run(scenario())
    assert leads == [["a", "b", "c"]] and copy_leads == []  # claimed and scored in worker 0
    ((seat, result),) = copy
    assert result == group[1][1] and not seat.lead
    assert direct.calls["claims"] == 1 and direct.calls["joined"] == 1  # only the copy travelled
    assert collector.stats()["open"] == 0


def test_a_claim_loses_when_the_collector_holds_a_response_the_claimant_lacks():
    # More rollouts than expected: "z" waits at the collector; a worker holding a, b (expected 2) may not
    # score the group alone: it joins, and the collector seals the group with every distinct response.
    collector, direct, workers = cluster(2)

    async def scenario():
        extra = asyncio.ensure_future(run_group(workers, "u1", ["z"], expected=2, placement=[1]))
        await until(lambda: "u1" in collector.open, step_s=0)
        group = await run_group(workers, "u1", ["a", "b"], expected=2, placement=[0, 0])
        return group, await asyncio.wait_for(extra, timeout=30)

    (group, leads), (extra, extra_leads) = asyncio.run(scenario())
    assert direct.calls["claims"] == 1 and direct.calls["joined"] == 3
    assert leads + extra_leads == [["z", "a", "b"]]
    assert [r["text"] for _, r in group + extra] == ["a", "b", "z"] and not any(t.late for t, _ in group + extra)


def test_identical_real_rollouts_are_all_members():
    _, _, workers = cluster(3)
    outcomes, leads = asyncio.run(run_group(workers, "u1", ["same", "same", "other"], expected=3))
    assert sorted(leads[0]) == ["other", "same", "same"]
    assert [r["text"] for _, r in outcomes] == ["same", "same", "other"]


def test_identical_rollouts_in_one_worker_go_through_the_collector_settle():
    collector, direct, workers = cluster(1)
    outcomes, leads = asyncio.run(run_group(workers, "u1", ["same", "same", "other"], expected=3, placement=[0] * 3))
    assert sorted(leads[0]) == ["other", "same", "same"] and direct.calls["joined"] == 3
    assert [r["text"] for _, r in outcomes] == ["same", "same", "other"]


def test_copy_arriving_after_the_group_finished_gets_the_same_result():
    collector, _, workers = cluster(2)

    async def scenario():
        first, _ = await run_group(workers, "u1", ["a", "b"], expected=2)
        late, leads = await run_group(workers, "u1", ["a"], expected=2)
        return first, late, leads

    first, late, leads = asyncio.run(scenario())
    assert leads == []  # nobody recomputes the group
    ((seat, result),) = late
    assert result == first[0][1] and not seat.lead


def test_a_group_that_never_completes_is_a_named_failure_of_each_member():
    settings = GroupConfig(timeout_s=0.1, settle_s=0.0, result_timeout_s=5.0)
    collector, _, workers = cluster(2, settings=settings)

    async def scenario():
        first = await run_group(workers, "u1", ["a", "b"], expected=4)
        late = await run_group(workers, "u1", ["c"], expected=4, placement=[1])  # after the timeout
        return first, late

    (outcomes, leads), (late, late_leads) = asyncio.run(scenario())
    assert leads == [] and late_leads == []  # nothing scored
    for seat, result in outcomes + late:
        assert result is None and "2 of 4 rollouts arrived within groups.timeout_s=0.1" in seat.failure
    assert collector.stats()["open"] == 0


def test_timeout_scores_a_partial_group_when_asked():
    settings = GroupConfig(timeout_s=0.1, settle_s=0.0, result_timeout_s=5.0, on_incomplete="score")
    _, _, workers = cluster(2, settings=settings)
    outcomes, leads = asyncio.run(run_group(workers, "u1", ["a", "b"], expected=4))
    assert leads == [["a", "b"]]
    assert [seat.partial for seat, _ in outcomes if seat.lead] == [True]
    assert [r["text"] for _, r in outcomes] == ["a", "b"]


def test_new_response_after_sealing_is_scored_alone_as_late():
    settings = GroupConfig(timeout_s=0.1, settle_s=0.0, result_timeout_s=5.0, on_incomplete="score")
    collector, _, workers = cluster(1, settings=settings)

    async def scenario():
        first = await run_group(workers, "u1", ["a"], expected=2)
        second = await run_group(workers, "u1", ["z"], expected=2)
        await until_remembered(collector, "u1")
        await until(lambda: len(collector.finished["u1"]) == 2, step_s=0)  # the late member's result too
        again = await run_group(workers, "u1", ["z"], expected=2)
        return first, second, again

    (first, lead1), (second, lead2), (again, lead3) = asyncio.run(scenario())
    assert lead1 == [["a"]] and first[0][0].partial
    assert lead2 == [["z"]] and second[0][0].late
    assert lead3 == [] and again[0][1]["text"] == "z"


def explode(members):
    raise ValueError("judge exploded")


@pytest.mark.parametrize("placement", [[0, 1, 2], [0, 0, 0]], ids=["over workers", "in one worker"])
def test_a_failing_leader_fails_its_members_instead_of_hanging(placement):
    collector, _, workers = cluster(3)

    async def scenario():
        async def one(text, worker):
            seat = await workers[worker].join(member(text), 3)
            if seat.lead:
                workers[worker].fail(seat, ValueError("judge exploded"))
                raise ValueError("judge exploded")
            return seat.result

        results = await asyncio.gather(*(one(t, w) for t, w in zip("abc", placement)), return_exceptions=True)
        await until(lambda: not collector.open)  # the failure reaches the collector with the next send
        return results

    results = asyncio.run(scenario())
    assert sum(type(r) is ValueError for r in results) == 1
    followers = [r for r in results if isinstance(r, GroupError)]
    assert len(followers) == 2 and "judge exploded" in str(followers[0])
    assert collector.stats()["open"] == 0


@pytest.mark.parametrize("placement", [[0, 1], [0, 0]], ids=["over workers", "in one worker"])
def test_a_copy_arriving_after_its_group_failed_fails_at_once(placement):
    # Before: the copy opened a fresh group, waited groups.timeout_s, then re-scored the group alone.
    collector, _, workers = cluster(2)

    async def scenario():
        await asyncio.gather(
            run_group(workers, "u1", ["a", "b"], expected=2, placement=placement, lead=explode),
            return_exceptions=True,
        )
        await until_remembered(collector, "u1")
        with pytest.raises(GroupError, match="judge exploded"):
            await asyncio.wait_for(run_group(workers, "u1", ["a"], expected=2, placement=[1]), timeout=10)

    asyncio.run(scenario())
    assert collector.stats()["open"] == 0


def test_finished_results_do_not_pin_the_responses():
    # Thousands of cached groups x long rollouts: the cache must not grow with the response length.
    collector, _, workers = cluster(2)
    long_texts = ["good " * 200_000, "bad " * 200_000]  # 1 MB and 0.8 MB
    lead = lambda members: [{"score": float(i)} for i, _ in enumerate(members)]  # noqa: E731

    async def scenario():
        await run_group(workers, "u1", long_texts, expected=2, lead=lead)
        return await run_group(workers, "u1", [long_texts[1]], expected=2, lead=lead)  # a late padded copy

    (late,), leads = asyncio.run(scenario())
    assert len(pickle.dumps(collector.finished)) < 2_000
    assert leads == [] and late[1] == {"score": 1.0}


def test_silent_leader_times_out_its_members():
    settings = GroupConfig(timeout_s=5.0, settle_s=0.0, result_timeout_s=0.1)
    collector, _, workers = cluster(2, settings=settings)

    async def scenario():
        async def one(text, worker):
            seat = await workers[worker].join(member(text), 2)
            return seat if seat.lead else seat.result

        return await asyncio.gather(one("a", 0), one("b", 1), return_exceptions=True)

    lead, follower = asyncio.run(scenario())
    assert lead.lead and isinstance(follower, GroupError) and "result_timeout_s" in str(follower)
    assert collector.stats()["open"] == 0  # the abandoned group does not stay in the collector

    async def late_copy():
        return await workers[1].join(member("b"), 2)

    with pytest.raises(GroupError, match="result_timeout_s"):
        asyncio.run(late_copy())  # fails at once, no second wait


def test_finished_groups_are_evicted_beyond_the_cache():
    collector, _, workers = cluster(2, finished_cache=3)

    async def many():
        for g in range(10):
            await run_group(workers, f"g{g}", ["a", "b"], expected=2)

    asyncio.run(many())
    assert collector.stats() == {"open": 0, "finished": 3, "joined": 20, "events": 0}
    assert list(collector.finished) == ["g7", "g8", "g9"]


@pytest.mark.parametrize("expected", [1, 2])
def test_small_groups(expected):
    _, _, workers = cluster(2)
    outcomes, leads = asyncio.run(run_group(workers, "u1", ["a", "b"][:expected], expected=expected))
    assert len(leads) == 1 and len(outcomes) == expected


def test_thousands_of_groups_in_one_worker_leave_nothing_behind():
    collector, direct, workers = cluster(1, finished_cache=100)

    async def scenario():
        await asyncio.gather(
            *(run_group(workers, f"g{g}", [f"{g}a", f"{g}b"], expected=2, placement=[0, 0]) for g in range(2000))
        )
        await until_remembered(collector, "g1999")

    asyncio.run(scenario())
    assert workers[0].pending == {} and workers[0].waiting == {} and not any(workers[0].outboxes)
    assert direct.calls["joined"] == 0 and direct.calls["claims"] == 2000  # every group whole in the worker
    assert direct.calls["send"] < 20  # claims and results travel in batches
    assert collector.stats() == {"open": 0, "finished": 100, "joined": 0, "events": 0}


def test_a_uid_has_the_same_shard_in_every_process():
    uids = ["0", "prompt-17", "b2f9e0c1-uid", "日本語"]
    here = [shard_of(uid, 7) for uid in uids]
    code = f"from writing_rl.reward_loop.group.collector import shard_of; print([shard_of(u, 7) for u in {uids!r}])"
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == str(here)
    assert len(set(shard_of(f"uid-{i}", 4) for i in range(100))) == 4


def test_a_padded_copy_of_a_whole_group_in_another_worker_is_not_scored_twice():
    # verl pads the last worker's chunk with copies of the first samples: with pad >= n it holds a whole
    # copy of group 0. One worker claims the group; the other's copies get its results.
    collector, direct, workers = cluster(2)

    async def scenario():
        return await asyncio.gather(
            run_group(workers, "u1", ["a", "bb"], expected=2, placement=[0, 0]),
            run_group(workers, "u1", ["a", "bb"], expected=2, placement=[1, 1]),
        )

    (real, real_leads), (copies, copy_leads) = asyncio.run(scenario())
    assert len(real_leads + copy_leads) == 1  # scored once
    assert [r for _, r in real] == [r for _, r in copies] == [{"score": 1, "text": "a"}, {"score": 2, "text": "bb"}]
    assert collector.stats()["open"] == 0


def test_copies_of_a_claimed_group_fail_when_its_worker_sends_nothing():
    settings = GroupConfig(timeout_s=5.0, settle_s=0.0, result_timeout_s=0.2)
    collector, _, workers = cluster(2, settings=settings)

    async def scenario():
        silent = None

        async def hold(text):  # worker 0 holds the whole group and its leader never publishes
            nonlocal silent
            seat = await workers[0].join(member(text), 2)
            silent = seat

        held = [asyncio.ensure_future(hold("a")), asyncio.ensure_future(hold("b"))]  # noqa: F841 (kept alive)
        await until(lambda: silent is not None, step_s=0)
        assert silent.lead and [m.text for m in silent.members] == ["a", "b"]
        with pytest.raises(GroupError, match="result_timeout_s"):
            await asyncio.wait_for(run_group(workers, "u1", ["a"], expected=2, placement=[1]), timeout=30)

    asyncio.run(scenario())
    assert collector.stats()["open"] == 0


@pytest.mark.parametrize("cancel_at", ["before its batch is sent", "as its seat arrives"])
def test_a_cancelled_leader_fails_its_batch_mates_instead_of_leaving_them_waiting(cancel_at):
    _, _, workers = cluster(1)

    async def scenario():
        lead = asyncio.ensure_future(workers[0].join(member("a"), 2))  # first arrival: the leader-to-be
        other = asyncio.ensure_future(workers[0].join(member("b"), 2))
        # Both have joined (one turn of the loop); their batch goes out on the next turn.
        await until(lambda: [len(b.members) for b in workers[0].pending.values()] == [2], step_s=0)
        (batch,) = workers[0].pending.values()
        if cancel_at == "as its seat arrives":
            await until(batch.seats[0].done, step_s=0)
            assert not lead.done()  # the seat is there, the leader has not resumed yet
        lead.cancel()
        with pytest.raises(GroupError, match="cancelled"):
            await asyncio.wait_for(other, timeout=30)

    asyncio.run(scenario())


def test_lone_members_of_many_groups_travel_together():
    # Streaming mode: every rollout alone, at a random worker, groups interleaved. Members and results go
    # out in a few batched sends, not a call each.
    import random

    collector, direct, workers = cluster(2, finished_cache=100)
    rng = random.Random(0)
    texts = {f"g{g}": [f"g{g}-{r}" for r in range(4)] for g in range(50)}

    async def scenario():
        return await asyncio.gather(
            *(
                run_group(workers, uid, ts, expected=4, placement=[rng.randrange(2) for _ in ts])
                for uid, ts in texts.items()
            )
        )

    outcomes = asyncio.run(scenario())
    for (pairs, leads), ts in zip(outcomes, texts.values()):
        assert len(leads) == 1 and sorted(leads[0]) == ts
        assert [r["text"] for _, r in pairs] == ts
    calls = direct.calls["send"] + direct.calls["poll"]
    assert calls < 40, direct.calls  # 200 members: a call each would be 200 joins + 50 publishes
    whole = direct.calls["claims"]  # groups that happened to land whole in one worker: claimed, not joined
    assert collector.stats() == {"open": 0, "finished": 50, "joined": 200 - 4 * whole, "events": 0}
