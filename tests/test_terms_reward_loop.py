"""Reward terms on every shipped method, through verl's real RewardLoopManager: Writing-RL with its
curriculum, BRPO and GRRM group ranking; a term that fails; the overlong term on verl's token count with
its default length; and a failed judge call that a positive term cannot pay for."""

import pytest

from writing_rl.offline.compose import compose
from writing_rl.reward_loop.batch import build_reward_batch

from conftest import compose_writing_rl, reward_loop, writing_row
from judge_server import Reply, default_script, quality

BONUS = """
def bonus(data_source, solution_str, ground_truth, extra_info, per_char=0.0):
    return {"score": per_char * len(solution_str)}

def broken(data_source, solution_str, ground_truth, extra_info):
    if "poison" in solution_str:
        raise ValueError("cannot score this one")
    return 0.0
"""


@pytest.fixture
def terms(tmp_path):
    path = tmp_path / "my_terms.py"
    path.write_text(BONUS)
    return [
        "reward.reward_kwargs.terms.repetition.weight=0.5",
        "reward.reward_kwargs.terms.repetition.n=1",
        f"+reward.reward_kwargs.terms.bonus={{weight: 2.0, fn: {{path: '{path}', name: bonus}}, per_char: 0.01}}",
    ]


def score_writing_rows(tokenizer, config, texts: list[str]):
    """verl's reward loop's output for ``texts``, each the answer to its own Writing-RL row."""
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(len(texts))], texts)
    with reward_loop(config) as manager:
        return manager.compute_rm_score(batch)


def repetition(text: str) -> float:
    words = text.split()
    return -(1 - len(set(words)) / len(words))


def check_shaped(output, texts):
    extra = output.non_tensor_batch
    rewards = output.batch["rm_scores"].sum(dim=-1).tolist()
    method = extra["reward/method"].tolist()
    assert extra["term/repetition"].tolist() == pytest.approx([repetition(t) for t in texts])
    assert extra["term/bonus"].tolist() == pytest.approx([0.01 * len(t) for t in texts])
    expected = [m + 0.5 * repetition(t) + 2.0 * 0.01 * len(t) for m, t in zip(method, texts)]
    assert rewards == pytest.approx(expected, abs=1e-5)
    assert extra["term_error"].tolist() == [0] * len(texts)
    return method


def test_terms_on_writing_rl_with_its_curriculum(ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path, terms):
    server = judge_server()
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=2",
        "actor_rollout_ref.rollout.n=2",
        f"reward.reward_kwargs.curriculum.state_dir={tmp_path / 'curriculum'}",
        f"trainer.default_local_dir={tmp_path / 'ckpt'}",
        *terms,
        per_sample=False,
    )
    texts = ["good good story", "a bad story", "plain story", "good story good"]
    rows = [writing_row(i // 2) for i in range(4)]
    batch = build_reward_batch(tokenizer, rows, texts, ["a", "a", "b", "b"])
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    # the method's reward is the judge's verdict against the reference, untouched by the terms
    assert check_shaped(output, texts) == [1.0, 0.0, 0.5, 1.0]


def test_terms_on_brpo_and_grrm_groups_come_after_the_group_reward(
    ray_cluster, judge_server, tokenizer_dir, tokenizer, terms
):
    server = judge_server()
    common = [
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        f"reward.reward_kwargs.judge.base_url={server.base_url}",
        "reward.reward_kwargs.judge.model=scripted-judge",
        "reward.num_workers=2",
        "actor_rollout_ref.rollout.n=3",
        "reward.reward_kwargs.groups.timeout_s=30",
        *terms,
    ]
    texts = ["good good toast", "a bad toast", "plain toast"]
    brpo_rows = [
        {
            "data_source": "writing",
            "prompt": [{"role": "user", "content": "Write a toast."}],
            "reward_model": {"ground_truth": {"prompt": "Write a toast."}, "style": "model"},
            "extra_info": {"index": 0},
        }
    ] * 3
    with reward_loop(compose("brpo", common)) as manager:
        brpo = manager.compute_rm_score(build_reward_batch(tokenizer, brpo_rows, texts, ["g"] * 3))
    method = check_shaped(brpo, texts)
    # BRPO: the bootstrapped reference gets 0, every other rollout +1 or -1 by the judge's verdict against it
    (reference,) = [i for i, m in enumerate(method) if m == 0.0]
    sign = [(quality(t) > quality(texts[reference])) - (quality(t) < quality(texts[reference])) for t in texts]
    assert method == [float(s) for s in sign]

    mt_rows = [
        {
            "data_source": "wmt",
            "prompt": [{"role": "user", "content": "Translate into English: Satz"}],
            "reward_model": {"ground_truth": "", "style": "model"},
            "extra_info": {"index": 0, "src_text": "Satz", "lang_pair": "de-en", "split": "train"},
        }
    ] * 3
    with reward_loop(compose("grrm_mt_grpo", common)) as manager:
        grrm = manager.compute_rm_score(build_reward_batch(tokenizer, mt_rows, texts, ["t"] * 3))
    method = check_shaped(grrm, texts)
    assert method[0] > method[2] > method[1]  # the ranking's order, before the terms


def test_a_failing_term_is_counted_and_pays_no_more_than_a_loss(
    ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path
):
    path = tmp_path / "my_terms.py"
    path.write_text(BONUS)
    config = compose_writing_rl(
        tokenizer_dir,
        judge_server().base_url,
        "reward.num_workers=1",
        "reward.reward_kwargs.terms.format.weight=1.0",
        f"+reward.reward_kwargs.terms.check={{weight: 1.0, fn: {{path: '{path}', name: broken}}}}",
    )
    texts = ["good good story", "good poison story", "<|eot_id|> good story"]  # (a tag as text, not a token)
    output = score_writing_rows(tokenizer, config, texts)
    extra = output.non_tensor_batch
    assert extra["term_error"].tolist() == [0, 1, 0]
    assert extra["reward/method"].tolist() == [1.0, 1.0, 1.0]  # every one beat the reference
    assert extra["term/format"].tolist() == [0.0, 0.0, -1.0]
    # the failed sample is paid the loss (0.0), not its win; template tags cost the third its point
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == pytest.approx([1.0, 0.0, 0.0])


def test_the_overlong_term_counts_verls_response_tokens_up_to_rollout_response_length(
    ray_cluster, judge_server, tokenizer_dir, tokenizer
):
    """``max_length`` left at its default (null) is ``actor_rollout_ref.rollout.response_length`` (16 here),
    and n is verl's count of valid response tokens (the EOS of a finished rollout included)."""
    config = compose_writing_rl(
        tokenizer_dir,
        judge_server().base_url,
        "reward.num_workers=1",
        "actor_rollout_ref.rollout.response_length=16",
        "reward.reward_kwargs.terms.overlong.weight=1.0",
        "reward.reward_kwargs.terms.overlong.buffer=4",
    )
    texts = ["a" + " good" * k + " story" for k in (7, 10, 11, 13)]  # each beats the reference
    lengths = [len(tokenizer.encode(t, add_special_tokens=False)) + 1 for t in texts]
    assert lengths == [10, 13, 14, 16]  # (" good" is one token of the tiny tokenizer; + the EOS)
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(4)], texts)
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    extra = output.non_tensor_batch
    # free up to 16 - 4 = 12 tokens, then down to -1 at 16
    assert extra["term/overlong"].tolist() == pytest.approx([0.0, -0.25, -0.5, -1.0])
    assert extra["reward/method"].tolist() == [1.0] * 4
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == pytest.approx([1.0, 0.75, 0.5, 0.0])


def test_a_failed_judge_call_gains_nothing_from_a_positive_term(
    ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path
):
    """on_judge_error=loss: a sample whose judge call failed is paid the failure score (a loss, 0) plus only
    the terms' penalties; the bonus term (positive, weight 2) is recorded for it but never paid."""
    path = tmp_path / "my_terms.py"
    path.write_text(BONUS)

    def script(request: dict, index: int) -> Reply:
        if "poison" in request["messages"][-1]["content"]:
            return Reply(status=500, body=b'{"error": {"message": "engine crashed"}}')
        return default_script(request, index)

    config = compose_writing_rl(
        tokenizer_dir,
        judge_server(script=script).base_url,
        "reward.num_workers=1",
        "reward.reward_kwargs.judge.max_retries=0",
        "reward.reward_kwargs.on_judge_error=loss",
        "reward.reward_kwargs.terms.repetition.weight=1.0",
        "reward.reward_kwargs.terms.repetition.n=1",
        f"+reward.reward_kwargs.terms.bonus={{weight: 2.0, fn: {{path: '{path}', name: bonus}}, per_char: 0.01}}",
    )
    texts = ["good good story", "good poison story", "good poison poison story"]
    output = score_writing_rows(tokenizer, config, texts)
    extra = output.non_tensor_batch
    rewards = output.batch["rm_scores"].sum(dim=-1).tolist()
    assert extra["judge_error"].tolist() == [0, 1, 1]
    assert extra["term/bonus"].tolist() == pytest.approx([0.01 * len(t) for t in texts])  # positive for all
    assert rewards[0] == pytest.approx(1.0 + repetition(texts[0]) + 2.0 * 0.01 * len(texts[0]))  # judged: all paid
    assert rewards[1] == pytest.approx(0.0)  # the loss; no repetition, and the bonus not paid
    assert rewards[2] == pytest.approx(repetition(texts[2]))  # the loss plus the repetition penalty only


def test_a_watch_is_logged_and_never_paid_even_when_it_fails(
    ray_cluster, judge_server, tokenizer_dir, tokenizer, tmp_path
):
    """reward.reward_kwargs.watch: a measure of each response (here its length, and one that fails on some),
    in the extra info and the step's judge/ metrics; the reward is the method's, whatever the watch says."""
    from writing_rl.reward_loop.health.metrics import judge_health

    path = tmp_path / "my_terms.py"
    path.write_text(BONUS)
    config = compose_writing_rl(
        tokenizer_dir,
        judge_server().base_url,
        "reward.num_workers=1",
        f"+reward.reward_kwargs.watch.chars={{fn: {{path: '{path}', name: bonus}}, per_char: 1.0}}",
        f"+reward.reward_kwargs.watch.check={{fn: {{path: '{path}', name: broken}}}}",
    )
    texts = ["good good story", "good poison story", "a bad story"]
    output = score_writing_rows(tokenizer, config, texts)
    extra = output.non_tensor_batch
    assert extra["watch/chars"].tolist() == pytest.approx([float(len(t)) for t in texts])
    check = extra["watch/check"].tolist()
    assert check[0] == 0.0 and check[1] != check[1] and check[2] == 0.0  # NaN where it failed
    assert extra["watch_error"].tolist() == [0, 1, 0]
    assert "term_error" not in extra  # a watch is not a term
    # the judge's verdicts against the reference, untouched: the poison sample keeps its win
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == pytest.approx([1.0, 1.0, 0.0])
    rows = [{key: extra[key][i] for key in ("watch/chars", "watch/check", "watch_error")} for i in range(3)]
    health = judge_health(rows)
    assert health["watch/chars_mean"] == pytest.approx(sum(map(len, texts)) / 3)
    assert health["watch/check_mean"] == 0.0 and health["watch/error_rate"] == pytest.approx(1 / 3)


def test_a_watch_that_cannot_be_loaded_is_refused_at_start():
    from writing_rl.settings import ConfigError
    from writing_rl.terms import Watches

    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.watch\.size"):
        Watches.from_config({"size": {"fn": {"path": "/nonexistent/measures.py", "name": "size"}}})
    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.watch\.size must be \{fn"):
        Watches.from_config({"size": {"weight": 1.0}})
