"""verl's streaming reward mode: too many failures among a reward worker's recent samples stop the run,
with an error that names the rate, the window and an example."""

import pytest
import ray
from test_streaming_reward_loop import poisoned

from writing_rl.reward_loop.batch import streaming_samples

from conftest import compose_writing_rl, reward_loop, writing_row


def test_too_many_failures_in_a_workers_window_stop_the_run_naming_rate_window_and_example(
    ray_cluster, tokenizer_dir, tokenizer, judge_server
):
    server = judge_server(script=poisoned)
    config = compose_writing_rl(
        tokenizer_dir,
        server.base_url,
        "reward.num_workers=1",
        "reward.reward_kwargs.judge.max_retries=0",
        "reward.reward_kwargs.failure_window=20",
        "reward.reward_kwargs.failure_min_samples=10",
        "reward.reward_kwargs.max_judge_error_rate=0.25",
    )
    texts = ["good story", "poison", "plain story", "bad story"] * 3  # the 10th sample: 3 of 10 failed > 0.25
    samples = streaming_samples(
        tokenizer, [writing_row(i) for i in range(len(texts))], texts, [str(i) for i in range(len(texts))]
    )
    with reward_loop(config) as manager:
        (worker,) = manager.reward_loop_workers
        results = [ray.get(worker.compute_score.remote(s)) for s in samples[:9]]  # under min_samples: paid
        assert [r["reward_extra_info"]["judge_error"] for r in results] == [0, 1, 0, 0] * 2 + [0]
        with pytest.raises(ray.exceptions.RayTaskError) as info:
            for sample in samples[9:]:
                ray.get(worker.compute_score.remote(sample))
    message = str(info.value)
    assert "FailureRateExceeded" in message
    assert (
        "3 of the last 10 samples" in message
        and "max_judge_error_rate=0.25" in message
        and "failure_window=20" in message
    )
    assert "HTTP 500" in message and "engine crashed" in message
