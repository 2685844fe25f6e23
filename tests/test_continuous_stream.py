"""Rewards under verl's asynchronous trainers: a stream that never pauses, on verl's own RewardLoopWorkers.

v1 colocate/separate async and fully-async send each finished rollout alone to a random reward worker
while steps train, so the workers never go idle and groups of consecutive steps are judged at once.
Here a driver keeps a fixed number of calls in flight (a new one as each returns), steps overlap, 2% of
the groups miss a rollout (a failed session leaves them short), some judge calls fail in every way a
judge fails (an HTTP 500 after its retry, a reply with no verdict, one cut at max_tokens, a refusal),
reward terms are on, and the curriculum's scheduler is killed mid-stream (Ray restarts it from the disk).

Checked: every complete group is judged once per rollout and paid what batch mode pays; every failure
is a named, counted one paid no more than a loss; every incomplete group is a named failure (group
methods) or never moves the curriculum (Writing-RL); every sample carries the same extra-info keys with
the same types (verl builds its columns from the first sample); nothing is left open at the scheduler
or the collector once the stream has drained. 500 rollouts per method in CI, 4,000 in the release suite."""

import collections
import os
import random
import re
import uuid

import pytest
import ray
from verl_streaming import Continuous, overlapping

from reward_fns.brpo import choose_references
from writing_rl.curriculum.scheduler import scheduler_name
from writing_rl.offline.compose import compose
from writing_rl.reward_loop.batch import build_reward_batch, streaming_samples
from writing_rl.reward_loop.group.collector import collector_name

from conftest import RELEASE_SUITE, compose_writing_rl, reward_loop, writing_row
from judge_server import Reply, ScriptedJudgeServer, default_script, quality
from waiting import wait_until

GROUP = 4
# Easiest first, each one "good" better than the last: levels keep moving all through the stream.
REFERENCES = [f"a {'good ' * k}plain story" for k in range(24)]
TERMS_ON = [f"reward.reward_kwargs.terms.{t}.weight=0.1" for t in ("overlong", "length", "repetition", "format")]
# A rollout showing one of these words gets that failure from the judge, every time it is shown.
FAULTS = {"poison": "judge_error", "garble": "parse_error", "cutoff": "judge_truncated", "refuse": "judge_refusal"}
FAILURE_KEYS = set(FAULTS.values()) | {"group_incomplete"}
# 4,000 rollouts per method in the release suite, 500 in CI (WRITING_RL_RELEASE: tests/conftest.py)
STEPS, GROUPS_PER_STEP = (40 if os.environ.get(RELEASE_SUITE) == "1" else 5), 25


def faulty(request, index):
    shown = request["messages"][-1]["content"]
    if "poison" in shown:
        return Reply(status=500, body=b'{"error": {"message": "engine crashed"}}')
    if "garble" in shown:
        return Reply(content="Both responses have merit.")
    if "cutoff" in shown:
        return Reply(content="Response A opens well, but", finish_reason="length")
    if "refuse" in shown:
        return Reply(content="I cannot help with that.", finish_reason="content_filter")
    return default_script(request, index)


def rollout_texts(rng: random.Random, tag: str, fault: str | None) -> list[str]:
    """A group's rollouts, each unique (``tag``), of mixed quality; ``fault`` goes into one of them."""
    texts = [f"{tag}-{r} story " + "good " * rng.randrange(26) + "bad " * rng.randrange(2) for r in range(GROUP)]
    if fault:
        texts[rng.randrange(GROUP)] += fault
    return texts


def plan(seed: int):
    """(steps of group indices, groups): each group a (uid, id, texts, complete) tuple; 1 in 50 groups is
    missing its last rollout, 1 in 8 has a rollout the judge fails on. Every step asks the same prompts
    (ids), so groups of one id from two steps are judged at once, and a group's level may have been moved
    by another while it is judged."""
    rng = random.Random(seed)
    groups, order = [], []
    for _ in range(STEPS):
        order.append([])
        for g in range(GROUPS_PER_STEP):
            index = len(groups)
            fault = list(FAULTS)[index % len(FAULTS)] if index % 8 == 3 else None
            texts = rollout_texts(rng, uuid.uuid4().hex[:8], fault)
            groups.append((uuid.uuid4().hex, g, texts, index % 50 != 7))
            order[-1] += [(index, r) for r in range(GROUP if groups[-1][3] else GROUP - 1)]
    return order, groups


# Two steps' rollouts: verl generates a step's rollouts together and scores each as it finishes, so a
# group's rollouts (at most two steps' worth of samples apart here: ``overlapping``) are in flight at once;
# a cap below that would make a group wait for a sibling that cannot be sent.
IN_FLIGHT = 2 * GROUPS_PER_STEP * GROUP


def check_same_keys(results: list[dict]) -> None:
    infos = [r["reward_extra_info"] for r in results]
    assert len({frozenset(info) for info in infos}) == 1, "every sample must carry the same extra-info keys"
    for key in infos[0]:
        assert len({type(info[key]) for info in infos}) == 1, f"{key} has more than one type"


TAG = re.compile(r"\b([0-9a-f]{8}-\d) story")


def tag_of(text: str) -> str:
    return TAG.search(text).group(1)


def assert_judged(requests: int, calls: int, info: dict) -> None:
    """The judge saw a rollout's ``calls`` requests, and at most the copies hedging sent beside them (counted
    on the sample: ``judge_hedges``; a copy cancelled before it reached the judge is not seen)."""
    assert calls <= requests <= calls + info["judge_hedges"], (requests, calls, info)


def judged_counts(server) -> collections.Counter:
    """How many judge requests showed each rollout (by its tag)."""
    return collections.Counter(tag for r in server.requests for tag in TAG.findall(r["messages"][-1]["content"]))


def beats(text: str, reference: str) -> float:
    a, b = quality(text), quality(reference)
    return 1.0 if a > b else 0.5 if a == b else 0.0


@pytest.fixture(scope="module")
def server():
    with ScriptedJudgeServer(script=faulty) as s:
        yield s


LENIENT = [  # the failures here are planned: the guard must not stop the stream
    "reward.reward_kwargs.max_judge_error_rate=1.0",
    "reward.reward_kwargs.max_parse_error_rate=1.0",
    "reward.reward_kwargs.max_group_incomplete_rate=1.0",
    "reward.reward_kwargs.judge.max_retries=1",
    # A group's rollouts go out within IN_FLIGHT (200) sends of each other, about a second of the stream
    # here: far inside this bound on how long a group may take to gather.
    "reward.reward_kwargs.groups.timeout_s=30",
    "reward.num_workers=2",
    f"actor_rollout_ref.rollout.n={GROUP}",
]


def test_writing_rl_under_a_stream_that_never_pauses(ray_cluster, server, tokenizer_dir, tokenizer, tmp_path):
    """hydra_configs/writing_rl.yaml as shipped (per-rollout judging, the curriculum), terms on."""
    order, groups = plan(seed=1)
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        *LENIENT,
        *TERMS_ON,
        f"reward.reward_kwargs.curriculum.state_dir={tmp_path / 'curriculum'}",
        per_sample=False,
    )
    flat = overlapping(order, seed=2)
    rows = [writing_row(groups[g][1], target=REFERENCES) for g, _ in flat]
    texts = [groups[g][2][r] for g, r in flat]
    samples = streaming_samples(tokenizer, rows, texts, [groups[g][0] for g, _ in flat])
    before = len(server.requests)
    with reward_loop(config) as manager:
        stream = Continuous(manager.reward_loop_workers, samples, IN_FLIGHT, seed=3)
        killed = {}

        def kill_the_scheduler():  # Ray restarts it (max_restarts=-1) from its snapshot and WAL
            killed.update(sent=stream.sent, returned=set(stream.returned))
            ray.kill(ray.get_actor(scheduler_name()), no_restart=False)

        stream.actions = {len(samples) // 2: kill_the_scheduler}
        results = stream.run()
        scheduler = ray.get_actor(scheduler_name())
        levels = ray.get(scheduler.snapshot.remote())["levels"]

        # The stream has drained: once a group's timeout has passed, the next group to start closes every
        # group left open (the short ones), and nothing stays behind.
        def nothing_open() -> bool:
            row = writing_row(10**6, target=REFERENCES)
            row["extra_info"]["group_size"] = 1  # a group of one: closed as soon as it is judged
            (tail,) = streaming_samples(tokenizer, [row], ["good tail"], [uuid.uuid4().hex])
            ray.get(manager.reward_loop_workers[0].compute_score.remote(tail))
            return ray.get(scheduler.stats.remote())["open_groups"] == 0

        assert wait_until(nothing_open)

    check_same_keys(results)
    by_group: dict[int, list[tuple[str, dict]]] = {}
    for (g, _), text, result in zip(flat, texts, results, strict=True):
        by_group.setdefault(g, []).append((text, result))
    positions: dict[int, list[int]] = {}
    for position, (g, _) in enumerate(flat):
        positions.setdefault(g, []).append(position)
    # Groups open when the scheduler died (a rollout sent before, one back after): the restarted scheduler
    # keeps every acknowledged level and each open group's pinned level, not the reports it had received,
    # so their move may be lost.
    straddled = {
        g for g, at in positions.items() if min(at) < killed["sent"] and any(p not in killed["returned"] for p in at)
    }
    assert len(straddled) <= IN_FLIGHT
    judged = judged_counts(server)
    moved_to: dict[str, int] = {}
    for g, members in by_group.items():
        uid, prompt_id, _, complete = groups[g]
        group_levels = {result["reward_extra_info"]["curriculum/level"] for _, result in members}
        assert len(group_levels) == 1, f"group {g} judged at levels {group_levels}"
        level = group_levels.pop()
        wins = 0
        for text, result in members:
            info = result["reward_extra_info"]
            fault = next((FAULTS[word] for word in FAULTS if word in text), None)
            if fault:  # a named failure, paid a loss
                assert info[fault] == 1 and result["reward_score"] <= 0.0, (text, info)
                assert info["reward/method"] == 0.0
                continue
            assert {key: info[key] for key in FAILURE_KEYS & set(info)} == dict.fromkeys(FAILURE_KEYS & set(info), 0)
            assert info["reward/method"] == beats(text, REFERENCES[level]), (text, level)
            assert_judged(judged[tag_of(text)], 1, info)  # once: never judged twice, never dropped
            wins += info["reward/method"] == 1.0
        if complete and wins and g not in straddled:
            moved_to[str(prompt_id)] = max(moved_to.get(str(prompt_id), 0), min(level + 1, len(REFERENCES) - 1))
    assert len(server.requests) - before >= len(samples)
    for prompt_id, level in moved_to.items():  # every qualifying complete group's move was kept
        assert levels[prompt_id] >= level
    short = {str(groups[g][1]) for g in by_group if not groups[g][3]}
    for prompt_id in short - set(moved_to):  # a group missing a rollout never moves its level
        assert levels.get(prompt_id, 0) == 0 or prompt_id in {str(groups[g][1]) for g in straddled}


def test_brpo_groups_under_a_stream_that_never_pauses(ray_cluster, server, tokenizer_dir, tokenizer):
    """hydra_configs/brpo.yaml: each group gathers at the collector from both workers while the next
    step's groups arrive; a short group fails each member that arrived, by name."""
    order, groups = plan(seed=4)
    config = compose(
        "brpo",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"reward.reward_kwargs.judge.base_url={server.base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            "reward.reward_kwargs.judge.backoff_base_s=0.01",
            *LENIENT,
        ],
    )
    flat = overlapping(order, seed=5)
    prompt = "Write a toast for a wedding."
    row = {
        "data_source": "writing",
        "prompt": [{"role": "user", "content": prompt}],
        "reward_model": {"ground_truth": {"prompt": prompt}},
        "extra_info": {"index": 0},
    }
    texts = [groups[g][2][r] for g, r in flat]
    samples = streaming_samples(tokenizer, [row] * len(flat), texts, [groups[g][0] for g, _ in flat])
    with reward_loop(config) as manager:
        results = Continuous(manager.reward_loop_workers, samples, IN_FLIGHT, seed=6).run()
        collector = ray.get_actor(collector_name())
        assert wait_until(lambda: ray.get(collector.stats.remote())["open"] == 0)
        # The batch path (a GenRM verl hosts: verl's manager splits one batch over the workers) reports the
        # same keys, failures included: the first groups of the plan again (retold: not counted above), a
        # faulty one among them.
        batch_groups = [
            (uuid.uuid4().hex, [t.replace(" story", " tale") for t in texts]) for *_, texts, _ in groups[:4]
        ]
        batch = build_reward_batch(
            tokenizer,
            [row] * GROUP * len(batch_groups),
            [t for _, texts in batch_groups for t in texts],
            [uid for uid, texts in batch_groups for _ in texts],
        )
        batch_keys = manager.compute_rm_score(batch).meta_info["reward_extra_keys"]

    check_same_keys(results)
    assert set(batch_keys) == set(results[0]["reward_extra_info"])
    judged = judged_counts(server)
    for (g, _), text, result in zip(flat, texts, results, strict=True):
        uid, _, group_texts, complete = groups[g]
        info = result["reward_extra_info"]
        if not complete:  # a named failure of each member that arrived, paid BRPO's loss, no judge call
            assert info["group_incomplete"] == 1 and info["judge_calls"] == 0 and result["reward_score"] == -1.0
            assert judged[tag_of(text)] == 0
            continue
        assert info["group_incomplete"] == 0
        (reference,) = choose_references(list(dict.fromkeys(group_texts)), 1, seed=0, uid=uid)
        if text == reference:  # paid 0; or, when no comparison with it could be read, a named failure
            assert info["is_reference"] == 1, (text, info)
            failed = any(word in text for word in FAULTS)
            assert result["reward_score"] == (-1.0 if failed else 0.0), (text, info)
            assert failed == any(info[key] for key in FAILURE_KEYS - {"group_incomplete"}), (text, info)
            continue
        # Judged against the reference in both orders, once each.
        assert_judged(judged[tag_of(text)], 2 if "poison" not in text + reference else 4, info)  # a 500 retried
        fault = next((FAULTS[word] for word in FAULTS if word in text + reference), None)
        if fault:
            assert info[fault] == 1 and result["reward_score"] <= 0.0, (text, info)
            continue
        diff = quality(text) - quality(reference)
        assert result["reward_score"] == float((diff > 0) - (diff < 0)), (text, reference, info)
