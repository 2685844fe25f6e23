"""Preflight checks of the judge: its endpoint (``GET /v1/models``), its model and key, and the judge
prompt at ``max_response_length`` against its context (``runner.py`` runs them).

The judge prompt is counted, best first, with the GenRM's own tokenizer (verl hosts it), the judge server's
``POST /tokenize`` (vLLM serves it), the policy's tokenizer (local or in the Hugging Face cache), else
bounded from above by its UTF-8 bytes (a byte-level BPE token is at least one byte): the line says which.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from writing_rl.offline.endpoints import ping_judge, served_model
from writing_rl.tools.preflight.data_checks import Row
from writing_rl.tools.preflight.report import Report

MARKER = "\u2063RESPONSE\u2063"  # stands for a policy response in a rendered judge prompt


# A chat template's tokens around each message (role markers, separators) when only bytes are counted.
TEMPLATE_BYTES_PER_MESSAGE = 32


@dataclass(frozen=True)
class TokenCounter:
    """Tokens of a chat prompt (with the generation prompt), and how they were counted."""

    count: Callable[[list[dict]], int]
    how: str  # shown after the count: "", " (counted with the policy tokenizer)", ...
    upper_bound: bool = False  # counted as bytes: the true count is at most this


def tokenizer_counter(tokenizer, how: str = "") -> TokenCounter:
    def count(messages: list[dict]) -> int:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return TokenCounter(count, how)


def server_counter(base_url: str, model: str, api_key: str | None, timeout_s: float = 10.0) -> TokenCounter | None:
    """The judge server's own count (vLLM: ``POST /tokenize`` at the server root); None where it has none."""
    url = re.sub(r"/v1/?$", "", base_url.rstrip("/")) + "/tokenize"
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}

    def count(messages: list[dict]) -> int:
        body = json.dumps({"model": model, "messages": messages, "add_generation_prompt": True}).encode()
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return int(json.load(response)["count"])

    try:
        count([{"role": "user", "content": "hello"}])
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
        return None
    return TokenCounter(count, f" (counted by the judge server, {url})")


def byte_counter() -> TokenCounter:
    def count(messages: list[dict]) -> int:
        return sum(len(m["content"].encode("utf-8")) + TEMPLATE_BYTES_PER_MESSAGE for m in messages)

    return TokenCounter(count, " (no tokenizer here: an upper bound, one token per UTF-8 byte)", upper_bound=True)


def response_tokens(messages: list[dict], max_response_length: int) -> int:
    """The tokens of a judge prompt's policy responses, each ``max_response_length`` long."""
    return sum(m["content"].count(MARKER) for m in messages) * max_response_length


def judge_prompt_tokens(counter: TokenCounter, messages: list[dict], max_response_length: int) -> int:
    """Tokens of a judge prompt whose policy responses are each ``max_response_length`` long."""
    empty = [{**m, "content": m["content"].replace(MARKER, "")} for m in messages]
    return counter.count(empty) + response_tokens(messages, max_response_length)


def judge_prompts(rows: Sequence[Row], lengths: np.ndarray | None, build: Callable, config) -> list[list[dict]]:
    """The judge prompts of the rows with the longest prompts (in tokens, else characters) and ground truths,
    each policy response a ``MARKER``."""
    if lengths is None:
        lengths = np.array([sum(len(str(m.get("content", ""))) for m in r.messages) for r in rows])
    by_prompt = np.argsort(lengths)[::-1][:20]
    by_truth = sorted(range(len(rows)), key=lambda i: -len(json.dumps(rows[i].ground_truth, default=str)))[:20]
    group_size = int(config.actor_rollout_ref.rollout.n)
    kwargs = dict(config.reward.custom_reward_function.get("reward_kwargs") or {})
    prompts = []
    for index in sorted({*map(int, by_prompt), *by_truth}):
        try:
            prompts.append(build(rows[index], MARKER, group_size, kwargs))
        except ValueError:  # a bad row: reported by check_rows
            continue
    return prompts


def _model_context(model_path: str | None) -> int | None:
    config = Path(str(model_path or "")).expanduser() / "config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_position_embeddings")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, int) else None


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
    if not judge.base_url:
        report.problem("reward.reward_kwargs.judge.base_url (JUDGE_BASE_URL) is not set")
        return None
    # An ensemble's every judge: each must hold the judge prompt (one refusing it stops the step).
    judges = judge.ensemble.judges(judge, "reward.reward_kwargs.judge") or [("", judge)]
    contexts = []
    for name, one in judges:
        label = f"judge {name}" if name else "judge"
        key = _api_key(one.api_key_env, label, "reward.reward_kwargs.judge", report)
        contexts += [_check_endpoint(url, one.model, key, report, ping, label=label) for url in one.endpoints]
    known = [c for c in contexts if c is not None]
    return min(known) if known else None  # every endpoint must hold the judge prompt


def _api_key(env: str | None, label: str, section: str, report: Report) -> str | None:
    if not env:
        return None
    key = os.environ.get(env)
    if not key:
        report.problem(
            f"{label} API key: ${env} is not set in this shell ({section}.api_key_env); set it here and on every node"
        )
    return key


def check_shadow(settings, report: Report, ping: bool) -> None:
    """The shadow judge (reward.reward_kwargs.shadow), when on: its key is set and its endpoints serve its model.
    A shadow that cannot be reached never stops training, which is why it is checked here: it would only
    leave warnings and no shadow/ metrics."""
    shadow = settings.shadow
    if not shadow.on:
        return
    key = _api_key(shadow.judge.api_key_env, "shadow judge", "reward.reward_kwargs.shadow.judge", report)
    for url in shadow.judge.endpoints:
        _check_endpoint(url, shadow.judge.model, key, report, ping, label="shadow judge")
    report.ok(
        f"shadow judge: {shadow.fraction:.0%} of training rollouts scored again by '{shadow.judge.model}', "
        f"on drift: {shadow.on_drift}"
    )


def _check_endpoint(
    base_url: str, model: str | None, key: str | None, report: Report, ping: bool, label: str = "judge"
) -> int | None:
    """One judge endpoint serves the model: its context length when it reports one."""
    if not ping:
        report.note(f"{label} {base_url}: not pinged (--no-ping)")
        return None
    try:
        card = served_model(base_url, model, ping_judge(base_url, key))
    except ValueError as err:
        report.problem(str(err))
        return None
    context = card.get("max_model_len")  # vLLM and serve-judge report it
    context = context if isinstance(context, int) else None
    report.ok(f"{label} {base_url} serves '{model}'" + (f", context {context} tokens" if context else ""))
    return context


def check_judge_prompt(
    longest: int, responses: int, max_tokens: int, context: int | None, counter: TokenCounter, report: Report
) -> None:
    """``longest``: the longest judge prompt's tokens; ``responses``: the most its policy responses alone take
    (max_response_length each), a floor that holds however the rest was counted."""
    need = longest + max_tokens
    how = counter.how
    text = f"judge prompt at max_response_length: up to {longest} tokens{how} + judge.max_tokens {max_tokens} = {need}"
    if context is None:
        report.note(f"{text}; the judge's context is not known here: make sure it holds {need} tokens")
    elif need > context and counter.upper_bound and responses + max_tokens <= context:
        report.note(
            f"{text} > the judge's context {context}, counted as bytes: it may still fit. To count tokens, make the "
            "policy tokenizer local (a path, or huggingface-cli download MODEL --include 'tokenizer*') or serve the "
            "judge with vLLM (POST /tokenize)"
        )
    elif need > context:
        report.problem(
            f"{text} > the judge's context {context}: long samples would fail or be cut; lower "
            "data.max_response_length or reward.reward_kwargs.judge.max_tokens, or serve the judge with a longer context"
        )
    else:
        report.ok(f"{text} <= the judge's context {context}")
