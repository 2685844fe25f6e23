"""Reward terms on every shipped method, through verl's real RewardLoopManager: Writing-RL with its
curriculum, BRPO and GRRM group ranking; and a term that fails."""

import pytest

from writing_rl.reward_loop.batch import build_reward_batch
from writing_rl.tools.shared.verl_config import compose

from conftest import compose_writing_rl, reward_loop, writing_row

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
    check_shaped(brpo, texts)

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
    batch = build_reward_batch(tokenizer, [writing_row(i) for i in range(3)], texts)
    with reward_loop(config) as manager:
        output = manager.compute_rm_score(batch)
    extra = output.non_tensor_batch
    assert extra["term_error"].tolist() == [0, 1, 0]
    assert extra["reward/method"].tolist() == [1.0, 1.0, 1.0]  # every one beat the reference
    assert extra["term/format"].tolist() == [0.0, 0.0, -1.0]
    # the failed sample is paid the loss (0.0), not its win; template tags cost the third its point
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == pytest.approx([1.0, 0.0, 0.0])
