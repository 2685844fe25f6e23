"""What our per-sample manager hands a reward fn besides the sample (reward_loop/fn_extras.py), through verl's own
RewardLoopWorker (in this process, no Ray): a fn of your own that reports each argument it was given."""

from __future__ import annotations

import pytest

from writing_rl.reward_loop.failures import ON_PARSE_ERROR
from writing_rl.tools.shared.verl_config import compose

from conftest import score_in_reward_worker, writing_row
from judge_server import Reply

REPORTER = """
ON_PARSE_ERROR = {on_parse_error!r}

async def reporter(data_source, solution_str, ground_truth, extra_info=None, *, judge, uid=None, group_size=None,
                   judge_tokenizer="unset", on_parse_error=None):
    return {{
        "score": 0.0,
        "uid_number": int(uid.split("-")[1]) if isinstance(uid, str) else -1,
        "group_size_given": -1 if group_size is None else group_size,
        "judge_tokenizer_none": int(judge_tokenizer is None),
        "on_parse_error_index": ON_PARSE_ERROR.index(on_parse_error) if on_parse_error in ON_PARSE_ERROR else -1,
        "judge_given": int(hasattr(judge, "complete")),
    }}
"""


def reporter_config(tmp_path, tokenizer_dir, base_url: str, *overrides: str):
    path = tmp_path / "reporter.py"
    path.write_text(REPORTER.format(on_parse_error=ON_PARSE_ERROR))
    return compose(
        "writing_rl",
        [
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            "actor_rollout_ref.rollout.n=3",
            "actor_rollout_ref.rollout.val_kwargs.n=2",
            "reward.num_workers=1",
            "reward.reward_manager.name=ParallelRewardManager",
            "reward.reward_manager.module.path=pkg://writing_rl.reward_loop.manager",
            f"reward.custom_reward_function.path={path}",
            "reward.custom_reward_function.name=reporter",
            "~reward.custom_reward_function.reward_kwargs",
            "reward.reward_kwargs.curriculum.enable=false",
            "reward.reward_kwargs.failure_score=0.0",
            f"reward.reward_kwargs.judge.base_url={base_url}",
            "reward.reward_kwargs.judge.model=scripted-judge",
            *overrides,
        ],
    )


def run_worker(tokenizer, config, rows: list[dict], uids: list[str]) -> list[dict]:
    return score_in_reward_worker(tokenizer, config, rows, ["a story"] * len(rows), uids=uids)


def row(index: int, **extra_info) -> dict:
    out = writing_row(index)
    out["extra_info"] = {"index": index, **extra_info}
    return out


@pytest.mark.parametrize("on_parse_error", ON_PARSE_ERROR)
def test_a_fn_gets_its_group_its_group_size_the_judge_and_on_parse_error(
    on_parse_error, tmp_path, judge_server, tokenizer_dir, tokenizer
):
    server = judge_server(script=lambda request, index: Reply(status=500))
    config = reporter_config(
        tmp_path, tokenizer_dir, server.base_url, f"reward.reward_kwargs.on_parse_error={on_parse_error}"
    )
    rows = [row(0), row(1, split="test"), row(2, group_size=5), row(3, split="test", group_size=7)]
    outputs = run_worker(tokenizer, config, rows, uids=["u-10", "u-11", "u-12", "u-13"])
    info = [o["reward_extra_info"] for o in outputs]
    assert [i["uid_number"] for i in info] == [10, 11, 12, 13]
    # extra_info.group_size, else rollout.val_kwargs.n for a validation row, else rollout.n
    assert [i["group_size_given"] for i in info] == [3, 2, 5, 7]
    assert all(i["judge_given"] == 1 and i["judge_tokenizer_none"] == 1 for i in info)
    assert {i["on_parse_error_index"] for i in info} == {ON_PARSE_ERROR.index(on_parse_error)}
    assert not server.requests
