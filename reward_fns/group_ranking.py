"""GRRM as a policy reward: one GenRM call ranks and scores all distinct rollouts of a prompt.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.group_ranking`` under
``writing_rl.group_manager.GroupRewardManager`` (hydra_configs/grrm_mt_grpo.yaml). Options under
``reward.custom_reward_function.reward_kwargs``.

Per group: each rollout's answer is extracted (``extraction``); identical answers are one candidate
with one score. The distinct candidates are shown to the GenRM as A, B, C... in fenced blocks, in an
order shuffled with a seed derived from ``seed`` and the uid, under the GQM prompt (writing_rl/gqm.py):
machine translation when the row's ``extra_info`` has ``src_text`` (languages from ``src_lang`` /
``trg_lang`` or ``lang_pair``), general writing otherwise. The GenRM analyses, then ends with a ranking
line (``B > A = D > C``) and a scores line (``B: 9, A: 7, D: 7, C: 2``) that must agree and name every
candidate once. Reward = score * ``score_scale`` - overlong penalty (DAPO-style: linear over the last
``buffer_len`` tokens before ``max_resp_len``, up to ``penalty_factor``).

``default_reward`` (counted) when the reply breaks the protocol (``parse_error``), the call fails
(``judge_error``), the request is longer than ``max_prompt_tokens`` (``prompt_too_long``) or there are
more than 26 distinct candidates (``too_many_candidates``); a group whose rollouts are all the same has
nothing to rank and gets it too. A rollout whose answer cannot be extracted gets
``format_error_reward`` (``format_error``).
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Any, Mapping

from writing_rl import gqm
from writing_rl.groups import Member
from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.parsing import strip_think

EXTRACTIONS = ("full", "codeblock", "last_line")
_FENCED = re.compile(r"(`{3,})[^\n]*\n(.*?)\n\1", re.S)


def extract_answer(response: str, extraction: str = "full") -> str | None:
    """The part of a rollout the GenRM judges; None when there is none (a format error)."""
    answer = strip_think(response)
    if answer is None or extraction == "full":
        return answer
    if extraction == "codeblock":
        blocks = _FENCED.findall(answer)
        return (blocks[-1][1].strip() or None) if blocks else None
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    return lines[-1] if lines else None


def overlong_penalty(length: int, max_resp_len: int | None, buffer_len: int, penalty_factor: float) -> float:
    """0 up to ``max_resp_len - buffer_len`` tokens, then rising linearly to ``penalty_factor`` at the max."""
    if not max_resp_len or buffer_len <= 0:
        return 0.0
    excess = length - (max_resp_len - buffer_len)
    return 0.0 if excess <= 0 else penalty_factor * min(1.0, excess / buffer_len)


def shuffled_order(candidates: list[str], seed: int, uid: str) -> list[int]:
    """Indices into ``candidates`` in the order the GenRM sees them; the same for a group in any
    arrival order (the permutation is drawn over the sorted candidates)."""
    canonical = sorted(range(len(candidates)), key=lambda i: candidates[i])
    random.Random(f"{seed}:{uid}").shuffle(canonical)
    return canonical


@lru_cache(maxsize=4)
def _load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def prompt_tokens(messages: list[dict], tokenizer) -> int:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return len(tokenizer.encode(text, add_special_tokens=False))


async def compute_score(
    members: list[Member],
    *,
    judge: SampleJudge,
    judge_tokenizer=None,
    extraction: str = "full",
    score_scale: float = 0.1,
    default_reward: float = 0.0,
    format_error_reward: float = 0.0,
    max_resp_len: int | None = None,
    buffer_len: int = 0,
    penalty_factor: float = 1.0,
    max_prompt_tokens: int | None = None,
    judge_tokenizer_path: str | None = None,
    seed: int = 0,
    system_prompt: str | None = None,
    template: str | None = None,
) -> list[dict]:
    if extraction not in EXTRACTIONS:
        raise ValueError(f"reward_kwargs.extraction must be one of {EXTRACTIONS}, got {extraction!r}")
    answers = [extract_answer(m.text, extraction) for m in members]
    candidates = list(dict.fromkeys(a for a in answers if a is not None))
    outcome = {"num_candidates": len(candidates)}
    scores: dict[str, int] = {}

    if len(candidates) > gqm.MAX_CANDIDATES:
        outcome["too_many_candidates"] = 1
    elif len(candidates) >= 2:
        order = shuffled_order(candidates, seed, members[0].uid)
        messages = gqm.build_messages(
            [candidates[i] for i in order], system=system_prompt, template=template, **_task(members[0])
        )
        tokenizer = judge_tokenizer or (_load_tokenizer(judge_tokenizer_path) if judge_tokenizer_path else None)
        if max_prompt_tokens and tokenizer is None:
            raise ValueError(
                "reward_kwargs.max_prompt_tokens needs the GenRM's tokenizer: set judge_tokenizer_path "
                "(verl passes it automatically when it hosts the GenRM)"
            )
        if max_prompt_tokens and prompt_tokens(messages, tokenizer) > max_prompt_tokens:
            outcome["prompt_too_long"] = 1
        else:
            try:
                reply = await judge.complete(messages)
            except JudgeError:
                outcome["judge_error"] = 1
            else:
                read = (
                    "the judge ran out of max_tokens"
                    if reply.truncated
                    else gqm.read_gqm_output(
                        reply.text, len(order), prompt_type="ranking_score", headers="optional", strict=False
                    )
                )
                if isinstance(read, str):
                    outcome["parse_error"] = 1
                else:
                    scores = {candidates[i]: read.scores[gqm.LABELS[p]] for p, i in enumerate(order)}

    results = []
    for member, answer in zip(members, answers):
        penalty = overlong_penalty(member.response_length, max_resp_len, buffer_len, penalty_factor)
        if answer is None:
            results.append(_result(format_error_reward - penalty, penalty, outcome, format_error=1))
        elif answer in scores:
            results.append(_result(scores[answer] * score_scale - penalty, penalty, outcome, rank_score=scores[answer]))
        else:
            results.append(_result(default_reward - penalty, penalty, outcome))
    return results


def _task(member: Member) -> dict:
    """GQM task arguments: translation when the row carries a source text, writing otherwise."""
    info = member.extra_info or {}
    if info.get("src_text"):
        return {
            "source_text": str(info["src_text"]),
            "src_lang": info.get("src_lang"),
            "trg_lang": info.get("trg_lang"),
            "lang_pair": info.get("lang_pair"),
        }
    if not member.prompt.strip():
        raise ValueError(
            f"group {member.uid}: no src_text in extra_info and no prompt text: the GenRM has nothing to judge against"
        )
    return {"writing_prompt": member.prompt}


def _result(score: float, penalty: float, outcome: dict, rank_score: int = -1, format_error: int = 0) -> dict:
    return {
        "score": float(score),
        "rank_score": rank_score,
        "overlong_penalty": float(penalty),
        "num_candidates": outcome["num_candidates"],
        "parse_error": outcome.get("parse_error", 0),
        "judge_error": outcome.get("judge_error", 0),
        "format_error": format_error,
        "prompt_too_long": outcome.get("prompt_too_long", 0),
        "too_many_candidates": outcome.get("too_many_candidates", 0),
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/preflight.py)


def preflight_row(ground_truth: Any, extra_info: Mapping | None = None) -> None:
    """A row the GenRM can rank against: a source text (translation) or a prompt (writing)."""
    info = extra_info or {}
    if "src_text" in info and not str(info.get("src_text") or "").strip():
        raise ValueError("extra_info.src_text is empty: the GenRM needs the source text to rank translations")


def preflight_judge_messages(row, response: str, group_size: int, reward_kwargs: Mapping) -> list:
    """The one ranking call of this row's group: ``group_size`` candidates (at most the GQM labels)."""
    member = Member(uid="preflight", text=response, response_length=0, prompt=row.prompt, data_source="",
                    ground_truth=row.ground_truth, extra_info=row.extra_info)  # fmt: skip
    candidates = [response] * min(group_size, gqm.MAX_CANDIDATES)
    return gqm.build_messages(
        candidates, system=reward_kwargs.get("system_prompt"), template=reward_kwargs.get("template"), **_task(member)
    )
