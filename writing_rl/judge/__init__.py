"""The judge layer: one async interface (``Judge.complete``), an OpenAI-compatible HTTP client and
ensembles of them (``judge_client`` opens either), typed failures and the per-sample recorder used by the
reward manager."""

from writing_rl.judge.base import Judge, JudgeReply, Messages, NoJudge
from writing_rl.judge.client import judge_client
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.errors import (
    JudgeBudgetExceeded,
    JudgeConnectionError,
    JudgeContextLengthError,
    JudgeError,
    JudgeHTTPError,
    JudgeRateLimited,
    JudgeResponseError,
    JudgeTimeout,
    JudgeUnavailable,
)
from writing_rl.judge.http import OpenAIJudge
from writing_rl.judge.sample import NO_CALLS, SampleJudge

__all__ = [
    "Judge",
    "JudgeBudgetExceeded",
    "JudgeConfig",
    "JudgeConnectionError",
    "JudgeContextLengthError",
    "JudgeError",
    "JudgeHTTPError",
    "JudgeRateLimited",
    "JudgeReply",
    "JudgeResponseError",
    "JudgeTimeout",
    "JudgeUnavailable",
    "Messages",
    "NO_CALLS",
    "NoJudge",
    "OpenAIJudge",
    "SampleJudge",
    "judge_client",
]
