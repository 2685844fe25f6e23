"""reward_fns.group_ranking, pinned where tests/test_group_ranking.py is silent: every key of a result, the
overlong penalty on every kind of reward, the GenRM tokenizer's part (markup tokens, the prompt's length,
judge_tokenizer_path), the shuffled order of each call, the lenient reading of a ranking, and the preflight's
view of a row, of its ranking call and of its calls per rollout. Tokenizer doubles, no tokenizer files."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from reward_fns import group_ranking
from reward_fns.group_ranking import (
    calls_per_rollout,
    compute_score,
    extract_answer,
    markup_tokens,
    overlong_penalty,
    preflight_judge_messages,
    preflight_row,
    prompt_tokens,
    shuffled_order,
)
from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.protocols import gqm_prompt
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.failures import UnreadableJudgeReply

from judge_server import gqm_candidates, gqm_reply


class GenRM:
    """Scores each candidate 5 + its 'good' minus 'bad' count (judge_server.gqm_reply), or ``reply(user message)``;
    keeps every call's messages."""

    def __init__(self, reply=gqm_reply, finish_reason="stop"):
        self.reply, self.finish_reason, self.asked = reply, finish_reason, []

    async def complete(self, messages):
        self.asked.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return JudgeReply(self.reply(messages[-1]["content"]), self.finish_reason, 0.01)

    def shown(self) -> list[list[str]]:
        """The candidates of each call, in the order shown (A, B, ...)."""
        return [[text for _, text in sorted(gqm_candidates(m[-1]["content"]).items())] for m in self.asked]


def garbled(user_message: str) -> str:
    return "Both are fine, I will not rank them."


class Tokenizer:
    """A GenRM tokenizer double, with Hugging Face's defaults: a token per whitespace-separated word; the chat
    template ends with the assistant's header only when asked for the generation prompt."""

    def __init__(self, special=(), added=()):
        self.all_special_tokens = list(special)
        self.added = {token: i for i, token in enumerate(added)}

    def get_added_vocab(self):
        return dict(self.added)

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True):
        text = " ".join(f"<|{m['role']}|> {m['content']}" for m in messages)
        text += " <|assistant|>" if add_generation_prompt else ""
        return self.encode(text) if tokenize else text

    def encode(self, text, add_special_tokens=True):
        return (["<s>"] if add_special_tokens else []) + text.split()


def members(*texts, uid="g1", prompt="Write a haiku.", extra_info=None, lengths=None):
    lengths = lengths or [len(t) for t in texts]
    return [Member(uid, t, n, prompt, "d", {}, dict(extra_info or {})) for t, n in zip(texts, lengths)]


def run(group, genrm=None, **options):
    genrm = genrm or GenRM()
    results = asyncio.run(compute_score(group, judge=SampleJudge(genrm), **options))
    return results, genrm


NO_FLAGS = {
    "parse_error": 0,
    "judge_truncated": 0,
    "judge_refusal": 0,
    "culprit": 0,
    "judge_error": 0,
    "format_error": 0,
    "prompt_too_long": 0,
    "too_many_candidates": 0,
    "nothing_to_rank": 0,
}


# ---------------------------------------------------------------- results


def test_a_ranked_rollout_has_its_score_and_no_flag():
    results, _ = run(members("good one", "bad one"))
    assert [r.pop("score") for r in results] == pytest.approx([0.6, 0.4])
    assert results[0] == {"rank_score": 6, "overlong_penalty": 0.0, "num_candidates": 2, **NO_FLAGS}
    assert results[1] == {"rank_score": 4, "overlong_penalty": 0.0, "num_candidates": 2, **NO_FLAGS}


@pytest.mark.parametrize(
    "texts, flag",
    [
        (["same", "same"], "nothing_to_rank"),
        ([f"answer {i}" for i in range(27)], "too_many_candidates"),
    ],
)
def test_a_group_that_is_not_ranked_pays_the_default_reward_and_says_why(texts, flag):
    results, genrm = run(members(*texts), default_reward=0.3)
    assert genrm.asked == []
    expected = {"score": 0.3, "rank_score": -1, "overlong_penalty": 0.0, "num_candidates": len(set(texts))}
    assert all(r == {**expected, **NO_FLAGS, flag: 1} for r in results)


def test_twenty_six_distinct_answers_are_ranked_in_one_call():
    texts = [f"answer {i}" + " good" * (i % 5) for i in range(26)]
    results, genrm = run(members(*texts))
    assert len(genrm.asked) == 1 and sorted(genrm.shown()[0]) == sorted(texts)
    assert [r["rank_score"] for r in results] == [5 + i % 5 for i in range(26)]
    assert all(r["too_many_candidates"] == 0 and r["num_candidates"] == 26 for r in results)


def test_every_rollout_carries_the_groups_flags_a_format_error_one_too():
    group = members("```\nok good\n```", "no block", "```\nok bad\n```")
    results, _ = run(group, GenRM(garbled), extraction="codeblock", format_error_reward=-0.5)
    assert [r["parse_error"] for r in results] == [1, 1, 1]
    assert (results[1]["format_error"], results[1]["score"]) == (1, -0.5)
    results, _ = run(group, GenRM(JudgeTimeout("http://g/v1", "slow")), extraction="codeblock", default_reward=0.2)
    assert [r["judge_error"] for r in results] == [1, 1, 1] and [r["score"] for r in results] == [0.2, 0.0, 0.2]
    assert [r["format_error"] for r in results] == [0, 1, 0] and results[0]["parse_error"] == 0


def test_on_parse_error_raise_stops_the_step():
    with pytest.raises(UnreadableJudgeReply, match=r"a judge reply could not be read \(parse_error: "):
        run(members("good one", "bad one"), GenRM(garbled), on_parse_error="raise")


def test_a_group_without_prompt_nor_source_text_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"^group g1: no src_text in extra_info and no prompt text"):
        run(members("good one", "bad one", prompt="  "))


# ---------------------------------------------------------------- the overlong penalty on every kind of reward

LONG = {"max_resp_len": 200, "buffer_len": 50, "penalty_factor": 1.0}  # 190 tokens: a penalty of 0.8


def test_the_overlong_penalty_is_taken_from_a_format_errors_reward():
    group = members("```\nok good\n```", "no block", "```\nok bad\n```", lengths=[10, 190, 10])
    results, _ = run(group, extraction="codeblock", format_error_reward=-0.5, **LONG)
    assert results[1]["score"] == pytest.approx(-0.5 - 0.8) and results[1]["overlong_penalty"] == pytest.approx(0.8)
    assert results[0]["score"] == pytest.approx(0.6) and results[0]["overlong_penalty"] == 0.0


def test_the_overlong_penalty_is_taken_from_a_default_reward():
    results, _ = run(members("x", "y", lengths=[10, 190]), GenRM(JudgeTimeout("u", "slow")), default_reward=0.5, **LONG)
    assert [r["score"] for r in results] == pytest.approx([0.5, 0.5 - 0.8])


@pytest.mark.parametrize("on_parse_error, unreadable", [("loss", 0.0), ("tie", 0.25)])
def test_the_overlong_penalty_is_taken_from_an_unreadable_groups_reward(on_parse_error, unreadable):
    group = members("good one", "bad one", lengths=[10, 190])
    results, _ = run(group, GenRM(garbled), default_reward=0.25, on_parse_error=on_parse_error, **LONG)
    assert [r["score"] for r in results] == pytest.approx([unreadable, unreadable - 0.8])


def test_the_overlong_penalty_is_taken_from_the_culprits_lowest_score():
    group = members("good one", "bad one", "plain one", "PWNED", lengths=[10, 10, 10, 190])
    genrm = GenRM(lambda msg: "garbled" if "PWNED" in msg else gqm_reply(msg))
    results, _ = run(group, genrm, **LONG)
    assert results[3]["culprit"] == 1 and results[3]["score"] == pytest.approx(0.0 - 0.8)


def test_with_score_scale_zero_only_the_overlong_penalty_counts():
    # reward = score x score_scale - penalty, for the culprit's lowest score and an unreadable group's loss too
    group = members("good one", "bad one", "plain one", "PWNED", lengths=[10, 10, 10, 190])
    genrm = GenRM(lambda msg: "garbled" if "PWNED" in msg else gqm_reply(msg))
    results, _ = run(group, genrm, score_scale=0.0, **LONG)
    assert [r["score"] for r in results] == pytest.approx([0.0, 0.0, 0.0, -0.8])
    results, _ = run(members("good one", "bad one", lengths=[10, 190]), GenRM(garbled), score_scale=0.0, **LONG)
    assert [r["score"] for r in results] == pytest.approx([0.0, -0.8])


@pytest.mark.parametrize(
    "length, max_resp_len, buffer_len, penalty",
    [
        (260, 200, 0, 0.0),  # buffer_len 0: off, however long
        (200, 200, 1, 1.0),  # a one-token buffer: the full penalty at the max
        (199, 200, 1, 0.0),
    ],
)
def test_overlong_penalty_edges(length, max_resp_len, buffer_len, penalty):
    assert overlong_penalty(length, max_resp_len, buffer_len, 1.0) == penalty


# ---------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    "response, mode, answer",
    [
        ("<think>x</think>line one\nline two", None, "line one\nline two"),  # full by default
        ("<think>x</think>line one\nline two", "full", "line one\nline two"),
        ("one\ntwo\nthree\n", "last_line", "three"),
    ],
)
def test_extract_answer_modes(response, mode, answer):
    assert (extract_answer(response) if mode is None else extract_answer(response, mode)) == answer


# ---------------------------------------------------------------- the GenRM tokenizer


def test_markup_tokens_are_the_tokenizers_special_and_added_tokens_that_look_like_markup():
    tokenizer = Tokenizer(special=["<s>", "</s>", "<>", "[INST]", "eos_token", "[x"], added=["<my_role>", "[]", "ab"])
    assert markup_tokens(tokenizer) == ("</s>", "<my_role>", "<s>", "[INST]")
    assert markup_tokens(Tokenizer(special=["<s>"])) == ("<s>",)
    assert markup_tokens(Tokenizer(added=["<my_role>"])) == ("<my_role>",)
    assert markup_tokens(SimpleNamespace()) == ()  # a tokenizer with neither list
    assert markup_tokens(None) == ()


def test_the_prompts_length_is_its_chat_template_with_the_generation_prompt():
    messages = [{"role": "system", "content": "Rank them."}, {"role": "user", "content": "A: one two"}]
    # "<|system|> Rank them. <|user|> A: one two <|assistant|>", and no special token added twice
    assert prompt_tokens(messages, Tokenizer()) == 8


def test_a_prompt_exactly_at_max_prompt_tokens_is_ranked_and_one_token_over_is_not():
    tokenizer = Tokenizer()
    _, genrm = run(members("good", "bad"), judge_tokenizer=tokenizer)
    length = prompt_tokens(genrm.asked[0], tokenizer)
    results, genrm = run(members("good", "bad"), judge_tokenizer=tokenizer, max_prompt_tokens=length)
    assert len(genrm.asked) == 1 and all(r["prompt_too_long"] == 0 for r in results)
    results, genrm = run(members("good", "bad"), judge_tokenizer=tokenizer, max_prompt_tokens=length - 1)
    assert genrm.asked == [] and all(r["prompt_too_long"] == 1 for r in results)


def test_judge_tokenizer_path_loads_the_genrms_tokenizer(monkeypatch):
    loaded = []

    def load(path):
        loaded.append(path)
        return Tokenizer(special=["<my_role>"])

    monkeypatch.setattr(group_ranking, "_load_tokenizer", load)
    results, genrm = run(
        members("good <my_role> text", "bad text"), judge_tokenizer_path="/models/grrm", max_prompt_tokens=10_000
    )
    assert loaded == ["/models/grrm"] and results[0]["prompt_too_long"] == 0
    assert "<my_role>" not in genrm.asked[0][-1]["content"]  # its markup token broken in the candidate
    results, _ = run(members("good", "bad"), judge_tokenizer_path="/models/grrm", max_prompt_tokens=5)
    assert all(r["prompt_too_long"] == 1 for r in results)


def test_max_prompt_tokens_without_a_tokenizer_names_the_setting_to_add():
    with pytest.raises(
        ValueError,
        match=r"^reward\.custom_reward_function\.reward_kwargs\.max_prompt_tokens needs the GenRM's tokenizer: set "
        r"judge_tokenizer_path \(verl passes it automatically when it hosts the GenRM\)$",
    ):
        run(members("a", "b"), max_prompt_tokens=100)


# ---------------------------------------------------------------- the order shown, the reading


@pytest.mark.parametrize("seed", [0, 5])
def test_each_group_is_shown_in_the_order_its_seed_and_uid_shuffle(seed):
    texts = [f"cand {i}" + " good" * i for i in range(6)]
    options = {} if seed == 0 else {"seed": seed}
    for uid in ("u1", "u2"):
        _, genrm = run(members(*texts, uid=uid), **options)
        assert genrm.shown() == [[texts[i] for i in shuffled_order(texts, seed, uid)]]


def test_the_culprit_search_shows_each_left_out_group_in_its_first_shuffle():
    texts = ["good one", "bad one", "plain one"]
    _, genrm = run(members(*texts, uid="u7"), GenRM(garbled), seed=3)
    left_out = genrm.shown()[2:]
    assert len(left_out) == 3
    for out, shown in zip(texts, left_out):
        group = [t for t in texts if t != out]
        assert shown == [group[i] for i in shuffled_order(group, 3, "u7")]


def test_a_ranking_in_a_lenient_layout_is_read():
    # no headers, no spaces after the separators: a GenRM's answer read leniently (protocols: LENIENT)
    def lenient(user_message):
        scores = {
            label: 5 + text.count("good") - text.count("bad") for label, text in gqm_candidates(user_message).items()
        }
        ranking = ">".join(sorted(scores, key=lambda label: -scores[label]))
        return (
            "I weighed them.\n" + ranking + "\n" + ",".join(f"{label}:{scores[label]}" for label in ranking.split(">"))
        )

    results, _ = run(members("good one", "bad one", "plain one"), GenRM(lenient))
    assert [r["rank_score"] for r in results] == [6, 4, 5] and all(r["parse_error"] == 0 for r in results)


# ---------------------------------------------------------------- the preflight (writing_rl/tools/preflight/)


def row(prompt="Write a haiku.", extra_info=None):
    return SimpleNamespace(prompt=prompt, ground_truth={}, extra_info=extra_info or {})


@pytest.mark.parametrize("extra_info", [None, {}, {"split": "train"}, {"src_text": "Guten Morgen"}])
def test_the_preflight_accepts_a_writing_row_and_a_translation_row_with_its_source(extra_info):
    assert preflight_row({}, extra_info) is None


@pytest.mark.parametrize("src_text", ["", "   ", None])
def test_the_preflight_refuses_a_translation_row_with_an_empty_source(src_text):
    with pytest.raises(
        ValueError,
        match=r"^extra_info\.src_text is empty: the GenRM needs the source text to rank translations$",
    ):
        preflight_row({}, {"src_text": src_text})


def test_the_preflights_ranking_call_of_a_writing_row_shows_its_group():
    assert preflight_judge_messages(row(), "RESPONSE", 3, {}) == gqm_prompt.build_messages(
        ["RESPONSE"] * 3, writing_prompt="Write a haiku.", separator="\n\n"
    )
    assert len(gqm_candidates(preflight_judge_messages(row(), "RESPONSE", 3, {})[-1]["content"])) == 3


def test_the_preflights_ranking_call_shows_at_most_26_candidates():
    messages = preflight_judge_messages(row(), "RESPONSE", 40, {})
    assert messages == gqm_prompt.build_messages(["RESPONSE"] * 26, writing_prompt="Write a haiku.")
    assert len(gqm_candidates(messages[-1]["content"])) == 26


def test_the_preflights_ranking_call_of_a_translation_row_shows_its_source():
    info = {"src_text": "Guten Morgen", "lang_pair": "de-en"}
    messages = preflight_judge_messages(row(extra_info=info), "RESPONSE", 2, {})
    assert messages == gqm_prompt.build_messages(["RESPONSE"] * 2, source_text="Guten Morgen", lang_pair="de-en")
    assert "Guten Morgen" in messages[-1]["content"] and "from German into English" in messages[-1]["content"]


def test_the_preflights_ranking_call_takes_the_prompt_options():
    template = "{intro}\n{source_heading}\n{source}\nRank these {n}:\n{candidates}\n{instructions}"
    options = {"system_prompt": "Rank fairly.", "template": template, "candidate_separator": "\n---\n"}
    messages = preflight_judge_messages(row(), "RESPONSE", 2, options)
    assert messages == gqm_prompt.build_messages(
        ["RESPONSE"] * 2, system="Rank fairly.", template=template, separator="\n---\n", writing_prompt="Write a haiku."
    )
    assert messages[0] == {"role": "system", "content": "Rank fairly."}
    assert "\n---\n" in messages[-1]["content"] and "Rank these 2:" in messages[-1]["content"]


@pytest.mark.parametrize("group_size, calls", [(8, 0.125), (2, 0.5), (1, 1.0), (0, 1.0)])
def test_one_ranking_call_per_group(group_size, calls):
    assert calls_per_rollout(row(), group_size, {}) == calls
