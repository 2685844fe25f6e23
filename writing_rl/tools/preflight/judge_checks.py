"""Preflight checks of the judge: its endpoint (``GET /v1/models``), its model and key, and the judge
prompt at ``max_response_length`` against its context (``runner.py`` runs them)."""

from __future__ import annotations

import difflib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from writing_rl.tools.preflight.data_checks import Row
from writing_rl.tools.preflight.report import Report

MARKER = "\u2063RESPONSE\u2063"  # stands for a policy response in a rendered judge prompt


def judge_prompt_tokens(tokenizer, messages: list[dict], max_response_length: int) -> int:
    """Tokens of a judge prompt whose policy responses are each ``max_response_length`` long."""
    responses = sum(m["content"].count(MARKER) for m in messages)
    empty = [{**m, "content": m["content"].replace(MARKER, "")} for m in messages]
    text = tokenizer.apply_chat_template(empty, add_generation_prompt=True, tokenize=False)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"]) + responses * max_response_length


def longest_judge_prompt(tokenizer, rows: Sequence[Row], lengths: np.ndarray, build: Callable, config) -> int:
    """The longest judge prompt over the rows with the longest prompts and ground truths."""
    by_prompt = np.argsort(lengths)[::-1][:20]
    by_truth = sorted(range(len(rows)), key=lambda i: -len(json.dumps(rows[i].ground_truth, default=str)))[:20]
    group_size = int(config.actor_rollout_ref.rollout.n)
    kwargs = dict(config.reward.custom_reward_function.get("reward_kwargs") or {})
    longest = 0
    for index in {*map(int, by_prompt), *by_truth}:
        try:
            messages = build(rows[index], MARKER, group_size, kwargs)
        except ValueError:  # a bad row: reported by check_rows
            continue
        longest = max(longest, judge_prompt_tokens(tokenizer, messages, int(config.data.max_response_length)))
    return longest


def _model_context(model_path: str | None) -> int | None:
    config = Path(str(model_path or "")).expanduser() / "config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_position_embeddings")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, int) else None


def ping_judge(base_url: str, api_key: str | None, timeout_s: float = 10.0) -> list[dict]:
    """The model cards of ``GET {base_url}/models``; raises ``ValueError`` saying what to change."""
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = json.load(response)
    except urllib.error.HTTPError as err:
        hint = {
            401: "the key was refused: check the variable reward.reward_kwargs.judge.api_key_env names "
            "(JUDGE_API_KEY_ENV in the train scripts)",
            403: "the key was refused: check the variable reward.reward_kwargs.judge.api_key_env names "
            "(JUDGE_API_KEY_ENV in the train scripts)",
            404: "no /models there: base_url should end with the API root, e.g. http://host:8000/v1",
        }.get(err.code, "is it an OpenAI-compatible server?")
        raise ValueError(f"judge {url} answered HTTP {err.code}: {hint}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ValueError(
            f"judge {url} is unreachable ({reason}): start it, or fix reward.reward_kwargs.judge.base_url (JUDGE_BASE_URL)"
        ) from None
    except ValueError:
        raise ValueError(f"judge {url} did not answer JSON: is it an OpenAI-compatible server?") from None
    cards = body.get("data") if isinstance(body, dict) else None
    if not isinstance(cards, list):
        raise ValueError(f"judge {url} answered without a 'data' list of models: is it an OpenAI-compatible server?")
    return [c for c in cards if isinstance(c, dict)]


def check_judge(config, settings, report: Report, ping: bool) -> int | None:
    """The judge's context length when known (it bounds the judge prompt check)."""
    hosted = config.reward.reward_model
    if hosted.get("enable"):
        # verl's vLLM server: rollout.max_model_len, else the GenRM's max_position_embeddings
        context = (hosted.get("rollout") or {}).get("max_model_len") or _model_context(hosted.model_path)
        known = f", context {context} tokens" if context else ""
        report.ok(f"judge: the GenRM verl hosts ({hosted.model_path}){known}; not pinged")
        return context
    judge = settings.judge
    key = None
    if judge.api_key_env:
        key = os.environ.get(judge.api_key_env)
        if not key:
            report.problem(
                f"judge API key: ${judge.api_key_env} is not set in this shell (reward.reward_kwargs.judge.api_key_env); "
                "set it here and on every node"
            )
    if not judge.base_url:
        report.problem("reward.reward_kwargs.judge.base_url (JUDGE_BASE_URL) is not set")
        return None
    contexts = [_check_endpoint(url, judge.model, key, report, ping) for url in judge.endpoints]
    known = [c for c in contexts if c is not None]
    return min(known) if known else None  # every endpoint must hold the judge prompt


def _check_endpoint(base_url: str, model: str | None, key: str | None, report: Report, ping: bool) -> int | None:
    """One judge endpoint serves the model: its context length when it reports one."""
    if not ping:
        report.note(f"judge {base_url}: not pinged (--no-ping)")
        return None
    try:
        cards = ping_judge(base_url, key)
    except ValueError as err:
        report.problem(str(err))
        return None
    served = {str(card.get("id")): card for card in cards}
    if model not in served:
        near = difflib.get_close_matches(str(model), list(served), n=1)
        report.problem(
            f"judge {base_url} serves {', '.join(served) or 'no model'}, not '{model}': set "
            f"reward.reward_kwargs.judge.model (JUDGE_MODEL)" + (f" to '{near[0]}'" if near else "")
        )
        return None
    context = served[model].get("max_model_len")  # vLLM and serve-judge report it
    context = context if isinstance(context, int) else None
    report.ok(f"judge {base_url} serves '{model}'" + (f", context {context} tokens" if context else ""))
    return context


def check_judge_prompt(longest: int, max_tokens: int, context: int | None, approximate: bool, report: Report) -> None:
    need = longest + max_tokens
    how = " (counted with the policy tokenizer)" if approximate else ""
    text = f"judge prompt at max_response_length: up to {longest} tokens{how} + judge.max_tokens {max_tokens} = {need}"
    if context is None:
        report.note(f"{text}; the judge's context is not known here: make sure it holds {need} tokens")
    elif need > context:
        report.problem(
            f"{text} > the judge's context {context}: long samples would fail or be cut; lower "
            "data.max_response_length or reward.reward_kwargs.judge.max_tokens, or serve the judge with a longer context"
        )
    else:
        report.ok(f"{text} <= the judge's context {context}")
