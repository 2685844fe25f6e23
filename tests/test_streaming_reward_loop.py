"""verl's streaming reward mode, on verl's own RewardLoopWorkers: each rollout alone, to a random worker,
in any order (as verl's agent loop sends them whenever it does not host the judge). Groups stay exact,
and a judge failure is a counted loss while the run goes on (too many: tests/test_streaming_failures.py)."""

import uuid

import pytest
from verl_streaming import stream

from writing_rl.reward_loop.batch import streaming_samples

from conftest import compose_writing_rl, reward_loop, writing_row
from judge_server import Reply, default_script, quality

GROUP = 4
REFERENCES = ["a plain story", "a good plain story"]  # easiest first


def poisoned(request, index):
    """The default judge, but any request showing the word 'poison' gets an HTTP 500, every time."""
    if "poison" in request["messages"][-1]["content"]:
        return Reply(status=500, body=b'{"error": {"message": "engine crashed"}}')
    return default_script(request, index)


def step(tokenizer, groups: dict[int, list[str]]):
    """One training step's samples: every group (Writing-RL id -> its rollouts) under a new uid."""
    rows, texts, uids = [], [], []
    for prompt_id, rollouts in groups.items():
        uid = uuid.uuid4().hex
        for text in rollouts:
            rows.append(writing_row(prompt_id, target=REFERENCES))
            texts.append(text)
            uids.append(uid)
    return streaming_samples(tokenizer, rows, texts, uids), texts


def expected(text: str, reference: str) -> float:
    """The scripted judge's verdict paid by Writing-RL: win 1, tie 0.5, loss 0."""
    a, b = quality(text), quality(reference)
    return 1.0 if a > b else 0.5 if a == b else 0.0


@pytest.fixture(scope="module")
def writing_rl(ray_cluster, tokenizer_dir, tmp_path_factory):
    """hydra_configs/writing_rl.yaml as shipped (the curriculum, on_judge_error default),
    groups of 4, two reward workers, a judge that fails every call showing 'poison'."""
    from judge_server import ScriptedJudgeServer

    with ScriptedJudgeServer(script=poisoned) as server:
        config = compose_writing_rl(
            tokenizer_dir,
            server.base_url,
            "reward.num_workers=2",
            f"actor_rollout_ref.rollout.n={GROUP}",
            "reward.reward_kwargs.judge.max_retries=1",
            f"reward.reward_kwargs.curriculum.state_dir={tmp_path_factory.mktemp('curriculum')}",
            "reward.reward_kwargs.groups.timeout_s=5",
            per_sample=False,
        )
        with reward_loop(config) as manager:
            yield manager, server


def test_rollouts_scattered_over_workers_share_their_groups_level_and_move_it_once(writing_rl, tokenizer):
    manager, server = writing_rl
    groups = {i: [f"take {r}: " + "good " * ((i + r) % 3) + "bad " * (r % 2) for r in range(GROUP)] for i in range(12)}
    samples, texts = step(tokenizer, groups)
    calls_before = len(server.requests)
    results = stream(manager.reward_loop_workers, samples, seed=1)
    assert len(server.requests) - calls_before == len(samples)  # one judge call per rollout, none twice
    assert [r["reward_score"] for r in results] == [expected(t, REFERENCES[0]) for t in texts]
    assert {r["reward_extra_info"]["curriculum/level"] for r in results} == {0}  # every group pinned level 0
    # Each group that won moved up one level: the next step judges it against the harder reference.
    won = {i for i, rollouts in groups.items() if any(expected(t, REFERENCES[0]) == 1.0 for t in rollouts)}
    samples, texts = step(tokenizer, groups)
    levels = [r["reward_extra_info"]["curriculum/level"] for r in stream(manager.reward_loop_workers, samples, 2)]
    assert levels == [int(i in won) for i in groups for _ in range(GROUP)]


def test_a_judge_call_that_always_fails_pays_a_counted_loss_and_the_step_goes_on(writing_rl, tokenizer):
    manager, _ = writing_rl
    groups = {100: ["good good poison", "good story", "bad story", "plain story"], 101: ["good", "bad", "x", "y"]}
    samples, texts = step(tokenizer, groups)
    results = stream(manager.reward_loop_workers, samples, seed=3)
    by_text = {t: r for t, r in zip(texts, results)}
    poison = by_text["good good poison"]
    assert poison["reward_score"] == 0.0  # the loss: never the tie a neutral reward would pay
    assert poison["reward_extra_info"]["judge_error"] == 1 and poison["reward_extra_info"]["judge_calls"] == 1
    others = [r for t, r in by_text.items() if t != "good good poison"]
    assert [r["reward_extra_info"]["judge_error"] for r in others] == [0] * 7
    assert by_text["good story"]["reward_score"] == 1.0 and by_text["bad story"]["reward_score"] == 0.0
