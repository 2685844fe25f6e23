"""Is the judge there? ``GET {base_url}/models`` on each endpoint, and is the model among those it serves.

The preflight reports the answer for a training run; the offline tools (``score``, ``select``,
``order-references``, ``eval``) ask it before their first judge call that the cache does not answer, so an
unreachable judge stops them at once with the URL and the cause, instead of after every call has failed
its retries (a model the endpoint does not serve already stops them at the first call: HTTP 404).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import urllib.error
import urllib.request
from typing import Any

from writing_rl.judge import Messages
from writing_rl.judge.base import JudgeReply
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.errors import JudgeFailures

# Where a training run sets the endpoint, the key and the model; an offline tool passes its flags.
TRAINING_KEYS = {
    "url": "reward.reward_kwargs.judge.base_url (JUDGE_BASE_URL)",
    "key": "the variable reward.reward_kwargs.judge.api_key_env names (JUDGE_API_KEY_ENV in the train scripts)",
    "model": "reward.reward_kwargs.judge.model (JUDGE_MODEL)",
}
TOOL_FLAGS = {"url": "--judge-url (or reward.reward_kwargs.judge.base_url)", "key": "the variable --api-key-env names"}


def ping_judge(base_url: str, api_key: str | None, timeout_s: float = 10.0, keys: dict = TRAINING_KEYS) -> list[dict]:
    """The model cards of ``GET {base_url}/models``; raises ``ValueError`` saying what to change."""
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = json.load(response)
    except urllib.error.HTTPError as err:
        hint = {
            401: f"the key was refused: check {keys['key']}",
            403: f"the key was refused: check {keys['key']}",
            404: "no /models there: the URL should end with the API root, e.g. http://host:8000/v1",
        }.get(err.code, "is it an OpenAI-compatible server?")
        raise ValueError(f"judge {url} answered HTTP {err.code}: {hint}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ValueError(f"judge {url} is unreachable ({reason}): start it, or fix {keys['url']}") from None
    except ValueError:
        raise ValueError(f"judge {url} did not answer JSON: is it an OpenAI-compatible server?") from None
    cards = body.get("data") if isinstance(body, dict) else None
    if not isinstance(cards, list):
        raise ValueError(f"judge {url} answered without a 'data' list of models: is it an OpenAI-compatible server?")
    return [c for c in cards if isinstance(c, dict)]


def served_model(base_url: str, model: str | None, cards: list[dict], keys: dict = TRAINING_KEYS) -> dict:
    """The card of ``model`` among ``cards``; raises ``ValueError`` naming what the endpoint serves."""
    served = {str(card.get("id")): card for card in cards}
    if model not in served:
        near = difflib.get_close_matches(str(model), list(served), n=1)
        raise ValueError(
            f"judge {base_url} serves {', '.join(served) or 'no model'}, not '{model}': set {keys['model']}"
            + (f" to '{near[0]}'" if near else "")
        )
    return served[model]


class CheckedJudge:
    """A judge whose endpoints are checked (each answers ``GET /models``) before its first call."""

    def __init__(self, judge: Any, config: JudgeConfig):
        self.judge, self.config = judge, config
        self._checked: asyncio.Task | None = None

    def __getattr__(self, name: str) -> Any:  # close(), concurrency_limit, ...: the wrapped judge's
        return getattr(self.judge, name)

    async def complete(self, messages: Messages) -> JudgeReply:
        if self._checked is None:
            self._checked = asyncio.ensure_future(asyncio.to_thread(self._check))
        await self._checked
        return await self.judge.complete(messages)

    def _check(self) -> None:
        key = self.config.api_key()
        for base_url in self.config.endpoints:
            try:
                ping_judge(base_url, key, keys=TOOL_FLAGS)
            except ValueError as err:
                raise JudgeFailures(f"{err}; no judge call was made") from None
