"""What our per-sample manager hands a reward fn besides the sample (reward_loop/fn_extras.py), through verl's own
RewardLoopWorker (in this process, no Ray): a fn of your own that reports each argument it was given."""

from __future__ import annotations

import pytest

from writing_rl.offline.compose import compose
from writing_rl.reward_loop.failures import ON_PARSE_ERROR

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


# ---------------------------------------------------------------- FnExtras itself, on stand-ins


class Service:
    """An extra's worker side that says what it was asked."""

    def __init__(self, name):
        self.name, self.calls = name, []

    def for_call(self, late):
        self.calls.append(late)
        return (self.name, "call", late)

    def for_shadow(self, trained):
        return (self.name, "shadow", trained)


class Extra:
    def __init__(self, name, on=True):
        self.name, self.on, self.started = name, on, []

    def start(self, config, scoring):
        self.started.append((config, scoring))
        return Service(self.name) if self.on else None


def stand_in(parameters, extras=None, on_parse_error="zero", n=3, val_n=2):
    from types import SimpleNamespace

    from writing_rl.reward_loop.fn_extras import FnExtras

    method = None if extras is None else SimpleNamespace(extras=tuple(extras))
    scoring = SimpleNamespace(
        reward_fn=SimpleNamespace(parameters=set(parameters), method=method),
        failure=SimpleNamespace(on_parse_error=on_parse_error),
    )
    rollout = SimpleNamespace(n=n, val_kwargs=SimpleNamespace(n=val_n))
    config = SimpleNamespace(actor_rollout_ref=SimpleNamespace(rollout=rollout))
    return FnExtras(config, scoring, reward_model_tokenizer="the-tokenizer"), config, scoring


def test_a_fn_gets_only_the_arguments_it_declares_and_always_the_judge():
    bare, _, _ = stand_in(["data_source"])
    assert bare.for_call("J", {"uid": "u-1", "extra_info": {}}) == {"judge": "J"}
    full, _, _ = stand_in(["judge_tokenizer", "on_parse_error", "uid", "group_size"], on_parse_error="loss")
    fields = {"uid": 7, "extra_info": {"group_size": "5"}}
    assert full.for_call("J", fields) == {
        "judge": "J",
        "on_parse_error": "loss",
        "judge_tokenizer": "the-tokenizer",
        "uid": "7",  # (as text)
        "group_size": 5,
    }
    assert full.for_call("J") == {"judge": "J", "on_parse_error": "loss", "judge_tokenizer": "the-tokenizer"}


@pytest.mark.parametrize(
    "extra_info, size",
    [
        ({}, 3),  # rollout.n
        (None, 3),
        ({"split": "train"}, 3),
        ({"split": "test"}, 2),  # rollout.val_kwargs.n for a validation row
        ({"split": "VAL", "group_size": None}, 2),
        ({"split": "test", "group_size": 7}, 7),  # extra_info.group_size first
        ({"group_size": 0}, 0),
    ],
)
def test_the_group_size_is_the_rows_then_validations_then_trainings(extra_info, size):
    extras, _, _ = stand_in(["group_size", "uid"])
    assert extras.expected_size(dict(extra_info or {})) == size
    given = extras.for_call("J", {"extra_info": extra_info})
    assert given == {"judge": "J", "group_size": size, "uid": None}  # no uid in the fields: None


def test_an_extra_is_started_only_for_a_fn_that_takes_it_and_gives_none_when_off():
    wanted, off, unwanted = Extra("curriculum"), Extra("notes", on=False), Extra("other")
    extras, config, scoring = stand_in(["curriculum", "notes"], extras=[wanted, off, unwanted])
    assert wanted.started == [(config, scoring)] and off.started == [(config, scoring)] and unwanted.started == []
    assert isinstance(extras.service("curriculum"), Service)
    assert extras.service("notes") is None and extras.service("other") is None
    assert extras.for_call("J", late=True) == {"judge": "J", "curriculum": ("curriculum", "call", True), "notes": None}
    assert extras.for_call("J")["curriculum"] == ("curriculum", "call", False)
    assert extras.for_call("J", with_extras=False) == {"judge": "J", "curriculum": None, "notes": None}


def test_a_fn_of_a_method_without_extras_gets_none_of_them():
    extras, _, _ = stand_in(["curriculum"], extras=None)
    assert extras.services == {} and extras.for_call("J") == {"judge": "J"}


def test_the_shadow_call_gets_the_shadow_judge_each_extras_shadow_side_and_counts_unreadable_as_a_loss():
    extras, _, _ = stand_in(
        ["curriculum", "notes", "on_parse_error", "uid", "group_size"],
        extras=[Extra("curriculum"), Extra("notes", on=False)],
        on_parse_error="raise",
    )
    trained = {"level": 2}
    fields = {"uid": "u-3", "extra_info": {"split": "test"}}
    assert extras.for_shadow("S", trained, fields) == {
        "judge": "S",
        "on_parse_error": "loss",
        "curriculum": ("curriculum", "shadow", trained),
        "notes": None,
        "uid": "u-3",
        "group_size": 2,
    }
    assert extras.service("curriculum").calls == []  # the training side is never asked: it may hold state
    plain, _, _ = stand_in(["judge"])
    assert plain.for_shadow("S", trained) == {"judge": "S"}  # no on_parse_error for a fn that does not take it
