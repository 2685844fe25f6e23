"""Baseline reward fns for bench/judge_throughput.py, run by verl's built-in `naive` reward manager.

All three send (or pretend to send) the same judge request our pairwise reward sends, so the only
difference from ours is the client and the bookkeeping around it.
"""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

import aiohttp

from writing_rl.protocols import verdict_or_none
from writing_rl.protocols.prompts import pairwise_messages


def _request(solution_str: str, ground_truth: dict, model: str) -> dict:
    reference = ground_truth["target"][0]
    messages = pairwise_messages(ground_truth["prompt"], reference, solution_str, criteria=ground_truth.get("criteria"))
    return {"model": model, "messages": messages, "temperature": 0.0, "max_tokens": 4096}


def _reward(verdict: str | None) -> float:
    return {"B": 1.0, "C": 0.5, "A": 0.0}.get(verdict, 0.5)


async def sleep_only(data_source, solution_str, ground_truth, extra_info=None, *, latency_s: float, **_):
    """verl's floor: the judge's latency with no client at all."""
    _request(solution_str, ground_truth, "m")
    await asyncio.sleep(latency_s)
    return 1.0


_SLOTS: WeakKeyDictionary = WeakKeyDictionary()  # event loop -> the judge's slots this worker may use


async def sleep_capped(data_source, solution_str, ground_truth, extra_info=None, *, latency_s: float, slots: int, **_):
    """verl's floor against a judge of limited capacity: the latency, at most ``slots`` at a time in this
    worker (its share of the judge), still no client."""
    _request(solution_str, ground_truth, "m")
    loop = asyncio.get_running_loop()
    gate = _SLOTS.get(loop) or _SLOTS.setdefault(loop, asyncio.Semaphore(slots))
    async with gate:
        await asyncio.sleep(latency_s)
    return 1.0


async def docs_style(data_source, solution_str, ground_truth, extra_info=None, *, url: str, model: str, **_):
    """As verl's GenRM examples do it: a new HTTP session per call, no limits, no retries."""
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=_request(solution_str, ground_truth, model)) as resp:
            data = await resp.json()
    return _reward(verdict_or_none(data["choices"][0]["message"]["content"]))


_SESSIONS: dict = {}


async def lean(data_source, solution_str, ground_truth, extra_info=None, *, url: str, model: str, **_):
    """The least a correct client can do: one shared session per event loop, one POST, minimal parsing."""
    loop = asyncio.get_running_loop()
    session = _SESSIONS.get(loop)
    if session is None:
        session = _SESSIONS[loop] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    async with session.post(url, json=_request(solution_str, ground_truth, model)) as resp:
        data = await resp.json()
    return _reward(verdict_or_none(data["choices"][0]["message"]["content"]))
