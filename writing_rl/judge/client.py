"""The judge client a ``judge`` section describes: one ``OpenAIJudge``, or an ``EnsembleJudge`` of several
(``judge.ensemble``). Every caller that opens a judge from settings opens it here."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.ensemble import EnsembleJudge
from writing_rl.judge.http import OpenAIJudge


def judge_client(
    config: JudgeConfig,
    concurrency: int | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    workers: int | None = None,
    upstream_group: str = "",
) -> OpenAIJudge | EnsembleJudge:
    """The client of ``config``, with ``OpenAIJudge``'s arguments (an ensemble passes them to each judge)."""
    client = EnsembleJudge if config.ensemble.on else OpenAIJudge
    return client(config, concurrency, sleep, workers, upstream_group)
