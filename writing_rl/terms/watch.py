"""Watches: measures of the policy's text logged beside the reward and never paid
(``reward.reward_kwargs.watch``; the settings, the keys logged and an example: docs/reward-terms.md).

A watch's ``fn: {path, name}`` is loaded and called as a term of your own is (``shaping.py``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from writing_rl.settings import check_keywords, plain, require
from writing_rl.terms.sample import TermInput
from writing_rl.terms.shaping import TERM_ARGUMENTS, FnTerm, load_fn, value_each

PREFIX = "reward.reward_kwargs.watch"


class Watches:
    """The configured watches, in the order they were listed."""

    def __init__(self, watches: Mapping[str, FnTerm] | None = None):
        self.watches = dict(watches or {})

    @classmethod
    def from_config(cls, raw: Any) -> Watches:
        require(raw is None or hasattr(raw, "items"), f"{PREFIX} must be a mapping of names to {{fn: {{path, name}}}}")
        watches = {}
        for name, settings in plain(raw or {}).items():
            key = f"{PREFIX}.{name}"
            require(
                isinstance(settings, dict) and "fn" in settings,
                f"{key} must be {{fn: {{path, name}}, <its keyword arguments>}}, got {settings!r}",
            )
            kwargs = {k: v for k, v in settings.items() if k != "fn"}
            fn = load_fn(key, settings["fn"])
            check_keywords(fn, kwargs, key, f"{settings['fn']['path']}:{settings['fn']['name']}", TERM_ARGUMENTS)
            watches[str(name)] = FnTerm(0.0, fn, kwargs)
        return cls(watches)

    def __bool__(self) -> bool:
        return bool(self.watches)

    async def measure(self, sample: TermInput) -> tuple[dict[str, float], str | None]:
        """``watch/<name>`` of each watch and ``watch_error``, and the first failure's message."""
        values, error = await value_each(self.watches, sample, failed=math.nan, what="watch")
        info = {f"watch/{name}": value for name, value in values.items()}
        info["watch_error"] = int(error is not None)
        return info, error
