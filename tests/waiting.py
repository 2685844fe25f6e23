"""Waiting on conditions, never on the clock: poll until true, with a deadline generous enough for a
loaded 2-core machine (the deadline only bounds a test that is failing anyway)."""

from __future__ import annotations

import asyncio
import time
from typing import Callable

DEADLINE_S = 120.0


def wait_until(condition: Callable[[], bool], timeout_s: float = DEADLINE_S, step_s: float = 0.02) -> bool:
    """True as soon as ``condition()`` holds; False if it still does not after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step_s)
    return True


async def until(condition: Callable[[], bool], timeout_s: float = DEADLINE_S, step_s: float = 0.01) -> None:
    """In a running event loop: return once ``condition()`` holds; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"condition not met within {timeout_s:g}s"
        await asyncio.sleep(step_s)
