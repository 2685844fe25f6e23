"""What a scored sample returns to verl: its reward and its ``reward_extra_info`` (the keys:
docs/reference/extra-info.md).

verl turns ``reward_extra_info`` into one array per key, built from the first sample's keys, so every sample of a
run must carry the same keys, all numbers. The reward fn fills its own keys and those of ``FN_DEFAULTS`` (these
defaults when it does not); the manager measures ``SampleJudge.METRIC_KEYS`` per sample and ``GROUP_KEYS`` on the
group path, which override the fn's, while a group fn's per-member judge keys override the group's totals.
"""

from __future__ import annotations

import numbers
from typing import Any

from writing_rl.protocols import UNREADABLE_KINDS

# 0/1 per sample, one per kind of unreadable reply (reward_loop/failures.py fills them).
UNREADABLE_KEYS = UNREADABLE_KINDS
FN_DEFAULTS = {**dict.fromkeys(UNREADABLE_KEYS, 0), "format_error": 0}
GROUP_KEYS = ("group_size", "partial_group", "late_member", "group_incomplete")
# Keys counting a failure (0/1): the batch summary and `writing-rl score` report their rates.
FAILURE_KEYS = ("judge_error", *UNREADABLE_KEYS, "format_error", "group_incomplete")


def merge_info(result: Any, defaults: dict | None = None, measured: dict | None = None) -> tuple[float, dict]:
    """A reward fn's result (a score, or ``{"score": ..., <keys>}``) as (score, extra info): fn-key
    defaults < ``defaults`` < the fn's values < ``measured``; values as plain ints and floats."""
    if isinstance(result, dict):
        info = dict(result)
        score = info.pop("score")
    else:
        score, info = result, {}
    info = {**FN_DEFAULTS, **(defaults or {}), **info, **(measured or {})}
    for key, value in info.items():
        if not isinstance(value, numbers.Real):
            raise TypeError(
                f"reward fn returned {key}={value!r}: reward_extra_info values must be numbers "
                "(verl turns them into arrays and logs their means)"
            )
        info[key] = int(value) if isinstance(value, numbers.Integral) else float(value)
    return float(score), info


class SameKeys:
    """Checks that every sample of a worker returns the keys its first sample returned."""

    def __init__(self):
        self.expected: set[str] | None = None

    def check(self, info: dict) -> None:
        keys = set(info)
        if self.expected is None:
            self.expected = keys
        elif keys != self.expected:
            raise ValueError(
                f"reward fn returned extra-info keys {sorted(keys)} but earlier samples returned "
                f"{sorted(self.expected)}; verl needs the same keys for every sample"
            )


def verl_output(score: float, info: dict, transcripts: list[dict] | None = None) -> dict:
    """The dict verl's reward loop expects from ``run_single`` (transcripts: for `writing-rl score`)."""
    output = {"reward_score": score, "reward_extra_info": info}
    if transcripts is not None:
        output["judge_transcripts"] = transcripts
    return output
