"""GRRM as a policy reward: one GenRM call ranks and scores all distinct rollouts of a prompt.

verl entry point: ``reward.custom_reward_function.path=pkg://reward_fns.group_ranking`` under
``writing_rl.reward_loop.group_manager.GroupRewardManager`` (hydra_configs/grrm_mt_grpo.yaml). Options under
``reward.custom_reward_function.reward_kwargs``.

Per group: each rollout's answer is extracted (``extraction``); identical answers are one candidate
with one score. The distinct candidates are shown to the GenRM as A, B, C... in fenced blocks, in an
order shuffled with a seed derived from ``seed`` and the uid, under the GQM prompt (writing_rl/protocols/gqm_prompt.py):
machine translation when the row's ``extra_info`` has ``src_text`` (languages from ``src_lang`` /
``trg_lang`` or ``lang_pair``), general writing otherwise. The GenRM analyses, then ends with a ranking
line (``B > A = D > C``) and a scores line (``B: 9, A: 7, D: 7, C: 2``) that must agree and name every
candidate once. Reward = score * ``score_scale`` - overlong penalty (DAPO-style: linear over the last
``buffer_len`` tokens before ``max_resp_len``, up to ``penalty_factor``).

A reply that breaks the protocol (or is truncated, or refused) is retried ``parse_retries`` times with
a new shuffle. When it still fails and the group has 3 or more candidates, each candidate is left out
once (one call each): when exactly one left-out group reads, the candidate left out is the culprit
(one answer made every ranking fail). It gets the lowest score (0, ``parse_error=1``,
``culprit=1``) and the others the scores of that ranking. Without a single culprit every member gets
``unreadable_reward`` by ``on_parse_error``: ``loss`` (the lowest score, 0), ``tie``
(``default_reward``) or ``raise``.

``default_reward`` (counted) when the call fails (``judge_error``), the request is longer than
``max_prompt_tokens`` (``prompt_too_long``) or there are more than 26 distinct candidates
(``too_many_candidates``); a group with fewer than two distinct answers has nothing to rank
(``nothing_to_rank``, as in GRRM) and gets it too. A rollout whose answer cannot be extracted gets
``format_error_reward`` (``format_error``).
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

from writing_rl import protocols
from writing_rl.judge import JudgeError, SampleJudge
from writing_rl.protocols import Unreadable, gqm, gqm_prompt, strip_think
from writing_rl.reward_loop.contract import (
    Member,
    ProbePlacement,
    RewardMethod,
    by_sign,
    option,
    probe_failure,
    probe_group,
    raise_if_asked,
    read_options,
    register,
    uid_where,
    unreadable_flags,
)

EXTRACTIONS = ("full", "codeblock", "last_line")


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.group_ranking``."""

    # The part of each rollout the GenRM judges: full (after the reasoning block), codeblock (the last
    # fenced block) or last_line.
    extraction: str = option("full", choices=EXTRACTIONS)
    # reward = the GenRM's score (0-10) x score_scale - the overlong penalty.
    score_scale: float = 0.1
    # The reward when the group cannot be ranked for a reason other than the rollouts (a failed call, a
    # prompt over max_prompt_tokens, over 26 or under 2 distinct answers), and under on_parse_error=tie.
    default_reward: float = 0.0
    # The reward of a rollout with no answer to extract.
    format_error_reward: float = 0.0
    # DAPO-style overlong penalty: linear over the last buffer_len tokens before max_resp_len, up to
    # penalty_factor (null max_resp_len or buffer_len 0: off).
    max_resp_len: int | None = option(None, minimum=1)
    buffer_len: int = option(0, minimum=0)
    penalty_factor: float = option(1.0, minimum=0)
    # Skip (default_reward, prompt_too_long=1) a group whose GenRM request is longer than this many tokens;
    # null: no limit. Needs the GenRM's tokenizer (judge_tokenizer_path, or the one verl hosts).
    max_prompt_tokens: int | None = option(None, minimum=1)
    judge_tokenizer_path: str | None = None
    # With the group's uid, shuffles the order the candidates are shown in, reproducibly.
    seed: int = 0
    # The GenRM's system message and prompt template: the text itself, with {placeholders} among
    # gqm_prompt.TEMPLATE_FIELDS ({candidates} required); null: the GQM prompt (writing_rl/protocols/gqm_prompt.py).
    system_prompt: str | None = None
    template: str | None = None
    # Between the fenced candidates in the prompt.
    candidate_separator: str = "\n\n"
    # Calls again, in a new order, when a ranking cannot be read.
    parse_retries: int = option(1, minimum=0)
    # With 3+ candidates and a ranking still unreadable: leave each out once to find the one that breaks it.
    find_culprit: bool = True


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


def failure_score(**_) -> float:
    """What a failed sample is paid (a judge call that failed, a group that never completed): the
    lowest score, as an unreadable ranking pays."""
    return 0.0


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


def markup_tokens(tokenizer) -> tuple[str, ...]:
    """The GenRM tokenizer's special and added tokens that look like markup (``<...>``, ``[...]``): a
    candidate must not be able to write them into the GenRM's prompt."""
    if tokenizer is None:
        return ()
    tokens = set(getattr(tokenizer, "all_special_tokens", []) or [])
    tokens |= set((tokenizer.get_added_vocab() if hasattr(tokenizer, "get_added_vocab") else {}) or {})
    return tuple(sorted(t for t in tokens if len(t) > 2 and t[0] + t[-1] in ("<>", "[]")))


def prompt_tokens(messages: list[dict], tokenizer) -> int:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return len(tokenizer.encode(text, add_special_tokens=False))


async def compute_score(
    members: list[Member], *, judge: SampleJudge, judge_tokenizer=None, on_parse_error: str = "loss", **given: Any
) -> list[dict]:
    """``judge_tokenizer``: the GenRM's, passed when verl hosts it; ``on_parse_error``:
    reward.reward_kwargs.on_parse_error, passed by the manager."""
    options = read_options(RewardOptions, given)
    answers = [extract_answer(m.text, options.extraction) for m in members]
    candidates = list(dict.fromkeys(a for a in answers if a is not None))
    ranked = _Ranked({"num_candidates": len(candidates)})
    if len(candidates) > gqm.MAX_CANDIDATES:
        ranked.flags["too_many_candidates"] = 1
    elif len(candidates) < 2:
        ranked.flags["nothing_to_rank"] = 1
    else:
        ranker = _Ranker.for_options(judge, members[0], options, judge_tokenizer)
        await ranked.rank(ranker, candidates, options, on_parse_error)
    return [_reward(m, answer, ranked, options, on_parse_error) for m, answer in zip(members, answers)]


@dataclass
class _Ranked:
    """What the GenRM made of one group: a score per candidate, the culprit that made the group unreadable
    (if one was found), the unreadable replies, and the group's flags."""

    flags: dict
    scores: dict[str, int] = field(default_factory=dict)
    culprit: str | None = None
    failures: list[Unreadable] = field(default_factory=list)

    async def rank(self, ranker: _Ranker, candidates: list[str], options: RewardOptions, on_parse_error: str):
        result = await ranker.rank(candidates, attempt=0)
        for attempt in range(1, options.parse_retries + 1):
            if not isinstance(result, Unreadable):
                break
            self.failures.append(result)
            result = await ranker.rank(candidates, attempt)
        if isinstance(result, Unreadable):
            self.failures.append(result)
            raise_if_asked(result, on_parse_error)
            if options.find_culprit and len(candidates) >= 3:
                self.culprit, self.scores = await ranker.find_culprit(candidates)
            if self.culprit is None:
                self.flags["parse_error"] = 1
        elif isinstance(result, str):
            self.flags[result] = 1  # judge_error or prompt_too_long
        else:
            self.scores = result


def _reward(member: Member, answer: str | None, ranked: _Ranked, options: RewardOptions, on_parse_error: str) -> dict:
    penalty = overlong_penalty(member.response_length, options.max_resp_len, options.buffer_len, options.penalty_factor)
    flags, scale = ranked.flags, options.score_scale
    if answer is None:
        return _result(options.format_error_reward - penalty, penalty, flags, format_error=1)
    if answer == ranked.culprit:
        result = _result(gqm.MIN_SCORE * scale - penalty, penalty, flags, rank_score=gqm.MIN_SCORE)
        return {**result, **unreadable_flags(ranked.failures), "culprit": 1}
    if answer in ranked.scores:
        return _result(ranked.scores[answer] * scale - penalty, penalty, flags, rank_score=ranked.scores[answer])
    if flags.get("parse_error"):
        # A group that could not be ranked: the lowest score (a loss) or, under on_parse_error=tie, the default.
        unreadable = gqm.MIN_SCORE * scale if on_parse_error == "loss" else options.default_reward
        return {**_result(unreadable - penalty, penalty, flags), **unreadable_flags(ranked.failures)}
    return _result(options.default_reward - penalty, penalty, flags)


class _Ranker:
    """One group's GenRM calls: a ranking of some candidates in a shuffled order, read by the GQM reader."""

    def __init__(self, judge, member, seed, layout, tokenizer, max_prompt_tokens):
        self.judge, self.uid, self.seed = judge, member.uid, seed
        self.prompt_args = {**layout, **_task(member)}
        self.tokenizer, self.max_prompt_tokens = tokenizer, max_prompt_tokens

    @classmethod
    def for_options(cls, judge, member: Member, options: RewardOptions, judge_tokenizer) -> _Ranker:
        path = options.judge_tokenizer_path
        tokenizer = judge_tokenizer or (_load_tokenizer(path) if path else None)
        if options.max_prompt_tokens and tokenizer is None:
            raise ValueError(
                "reward.custom_reward_function.reward_kwargs.max_prompt_tokens needs the GenRM's tokenizer: set "
                "judge_tokenizer_path (verl passes it automatically when it hosts the GenRM)"
            )
        layout = {"system": options.system_prompt, "template": options.template,
                  "separator": options.candidate_separator, "special_tokens": markup_tokens(tokenizer)}  # fmt: skip
        return cls(judge, member, options.seed, layout, tokenizer, options.max_prompt_tokens)

    async def rank(self, candidates: list[str], attempt: int) -> dict[str, int] | str:
        """{candidate: score}, an ``Unreadable``, or the flag ``judge_error`` / ``prompt_too_long``."""
        # A retry rotates the shuffled order: every candidate moves to another label.
        order = shuffled_order(candidates, self.seed, self.uid)
        shift = attempt % len(order)
        order = order[shift:] + order[:shift]
        messages = gqm_prompt.build_messages([candidates[i] for i in order], **self.prompt_args)
        if self.max_prompt_tokens and prompt_tokens(messages, self.tokenizer) > self.max_prompt_tokens:
            return "prompt_too_long"
        try:
            reply = await self.judge.complete(messages)
        except JudgeError:
            return "judge_error"
        read = self.judge.read(reply, _read_ranking, len(order))
        if isinstance(read, Unreadable):
            return read
        return {candidates[i]: read.scores[gqm.LABELS[p]] for p, i in enumerate(order)}

    async def find_culprit(self, candidates: list[str]) -> tuple[str | None, dict[str, int]]:
        """The one candidate whose absence makes the group readable, and that ranking; else (None, {})."""
        without = [[c for c in candidates if c != left_out] for left_out in candidates]
        results = await asyncio.gather(*(self.rank(group, attempt=0) for group in without))
        readable = [(left_out, r) for left_out, r in zip(candidates, results) if isinstance(r, dict)]
        if len(readable) != 1:
            return None, {}
        return readable[0]


def _read_ranking(text: str, n: int):
    return protocols.read_gqm_output(text, n, prompt_type="ranking_score", headers="optional", strict=False)


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


def _result(score: float, penalty: float, flags: dict, rank_score: int = -1, format_error: int = 0) -> dict:
    return {
        "score": float(score),
        "rank_score": rank_score,
        "overlong_penalty": float(penalty),
        "num_candidates": flags["num_candidates"],
        "parse_error": flags.get("parse_error", 0),
        "judge_truncated": 0,
        "judge_refusal": 0,
        "culprit": 0,
        "judge_error": flags.get("judge_error", 0),
        "format_error": format_error,
        "prompt_too_long": flags.get("prompt_too_long", 0),
        "too_many_candidates": flags.get("too_many_candidates", 0),
        "nothing_to_rank": flags.get("nothing_to_rank", 0),
    }


# ---------------------------------------------------------------- writing-rl preflight (writing_rl/tools/preflight/)


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
    return gqm_prompt.build_messages(
        candidates,
        system=reward_kwargs.get("system_prompt"),
        template=reward_kwargs.get("template"),
        separator=reward_kwargs.get("candidate_separator", "\n\n"),
        **_task(member),
    )


def calls_per_rollout(row, group_size: int, reward_kwargs: Mapping) -> float:
    """One ranking call per group (an unreadable ranking asks again: not counted)."""
    return 1.0 / max(1, group_size)


async def probe_outcome(c, judge: SampleJudge, options: dict, on_parse_error: str) -> str:
    """probe-judge: a group of two under a uid for which ``shuffled_order`` shows the probe as candidate A (or
    B); the judge's scores (``rank_score``) decide."""
    extraction, seed = options.get("extraction", "full"), int(options.get("seed", 0))
    answers = [extract_answer(c.row.honest, extraction), extract_answer(c.reply, extraction)]
    shown_first = 1 if c.slot == "A" else 0  # the candidate at label A
    uid = "probe-unplaced"
    if None not in answers and answers[0] != answers[1]:
        uid = uid_where(lambda u: shuffled_order(answers, seed, u)[0] == shown_first, f"{c.probe}-{c.slot}")
    group = probe_group(c.row, uid, [c.row.honest, c.reply])
    honest, probe = await compute_score(group, judge=judge, on_parse_error=on_parse_error, **options)
    found = probe_failure(probe, judge) or probe_failure(honest, judge)
    if found:
        return found
    if probe.get("nothing_to_rank"):
        return "unjudged"
    return by_sign(probe["rank_score"] - honest["rank_score"])


METHOD = register(
    compute_score,
    RewardMethod(
        name="grrm",
        options=RewardOptions,
        failure_score=failure_score,
        check_row=preflight_row,
        judge_messages=preflight_judge_messages,
        calls_per_rollout=calls_per_rollout,
        probe=ProbePlacement(probe_outcome, overlay="grrm_mt_grpo"),
    ),
)
