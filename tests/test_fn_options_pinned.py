"""Every declared option of every shipped reward fn changes what the fn does: for each one, two values whose
results (rewards, extra info, or the requests the judge is sent) must differ, so an option the fn ignores
fails here. The table is checked against the declarations (each module's ``METHOD.options``): a new option
without an entry fails, naming it. Then reward_loop/fn_options.py's reading and checking of the options."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

import pytest

import reward_fns
from writing_rl.judge import JudgeReply, JudgeTimeout, SampleJudge
from writing_rl.reward_loop import fn_options
from writing_rl.reward_loop.contract import Member
from writing_rl.reward_loop.fn_options import FN_PREFIX, PASSED_BY_THE_CALLER, check_fn_options, read_options
from writing_rl.settings import ConfigError, option

from conftest import writing_row
from judge_server import default_script

UNREADABLE = "Both have merits; I will not choose."


class Judge:
    """A judge double: the scripted judge's default replies (or ``reply(user message)``), every request kept;
    ``fail``: every call fails after its retries."""

    def __init__(self, reply: Callable[[str], str] | None = None, fail: bool = False):
        self.reply, self.fail, self.asked = reply, fail, []

    async def complete(self, messages):
        self.asked.append(messages)
        if self.fail:
            raise JudgeTimeout("http://judge/v1", "no reply", attempts=1)
        user = messages[-1]["content"]
        text = self.reply(user) if self.reply else default_script({"messages": messages}, 0).content
        return JudgeReply(text, "stop", 0.01)


def scores_reply(user: str) -> str:
    """A score-format pairwise reply: A 7 and B 6 whatever the responses (a tie within a margin of 1)."""
    return "Both read well.\nA: 7, B: 6"


def observed(run: Callable[[], Any], judge: Judge | None = None) -> str:
    """What a run shows: its result (or the error it raised) and every request the judge was sent."""
    try:
        result = run()
    except Exception as err:  # an option may make a run refuse: that is a result too
        result = ("raised", type(err).__name__, str(err))
    asked = judge.asked if judge is not None else []
    return json.dumps({"result": result, "asked": asked}, sort_keys=True, default=repr)


def group(*texts: str, prompt: str = "Write a toast.", lengths=None, ground_truth=None) -> list[Member]:
    lengths = lengths or [len(t) for t in texts]
    truth = ground_truth or {"prompt": prompt}
    return [Member("group-1", t, n, prompt, "writing", truth, {}) for t, n in zip(texts, lengths)]


class Curriculum:
    """The curriculum extra, as a double: every group at level 0; advances kept."""

    def __init__(self):
        self.advanced = []

    async def pin(self, key, levels):
        return 0

    async def advance(self, key, level, uid):
        self.advanced.append((key, level))


def pairwise(text="a good story", reply=None, fail=False, **options):
    from reward_fns.pairwise import compute_score

    judge = Judge(reply, fail)
    row = writing_row(0)
    run = compute_score(
        "writing", text, row["reward_model"]["ground_truth"], row["extra_info"], judge=SampleJudge(judge), **options
    )
    return observed(lambda: asyncio.run(run), judge)


def pairwise_curriculum(**options):
    """Two rollouts of a row with two references: one wins against the first, one loses."""
    from reward_fns.pairwise import compute_group_score

    judge, curriculum = Judge(), Curriculum()
    truth = writing_row(0, target=("a plain story", "a good good story"))["reward_model"]["ground_truth"]
    members = group("a good story", "a bad story", prompt="Write a story.", ground_truth=truth)
    run = compute_group_score(members, judge=SampleJudge(judge), curriculum=curriculum, **options)
    return observed(lambda: (asyncio.run(run), curriculum.advanced), judge)


BRPO_TEXTS = ("good good toast", "a bad toast", "plain toast", "good toast", "<think>never closed")


def brpo(texts=BRPO_TEXTS, reply=None, **options):
    from reward_fns.brpo import compute_score

    judge = Judge(reply)
    return observed(lambda: asyncio.run(compute_score(group(*texts), judge=SampleJudge(judge), **options)), judge)


TOURNAMENT_TEXTS = ("good good toast", "a bad toast", "plain toast", "good toast", "<think>never closed")


def tournament(reply=None, **options):
    from reward_fns.tournament import compute_score

    judge = Judge(reply)
    members = group(*TOURNAMENT_TEXTS)
    return observed(lambda: asyncio.run(compute_score(members, judge=SampleJudge(judge), **options)), judge)


def pointwise_reply(user: str) -> str:
    """A pointwise score: 5 plus the answer's 'good' minus 'bad' (the request holds neither word)."""
    answer = user.split("[Answer]", 1)[1]
    return f'Rated.\n{{"score": {5 + answer.count("good") - answer.count("bad")}}}'


def pointwise(**options):
    from reward_fns.pointwise import compute_score

    judge = Judge(pointwise_reply)
    members = group(*TOURNAMENT_TEXTS)
    return observed(lambda: asyncio.run(compute_score(members, judge=SampleJudge(judge), **options)), judge)


def pointwise_template(tmp_path) -> str:
    path = tmp_path / "pointwise.txt"
    path.write_text("Rate this answer to {prompt}:\n[Answer]\n{response}\nEnd with a JSON score.")
    return str(path)


RANKED_TEXTS = ("good poem\nlast line one", "bad poem\nlast line two", "plain poem\nlast", "<think>never closed")


def group_ranking(reply=None, fail=False, lengths=None, **options):
    from reward_fns.group_ranking import compute_score

    judge = Judge(reply, fail)
    members = group(*RANKED_TEXTS, prompt="Write a haiku.", lengths=lengths)
    return observed(lambda: asyncio.run(compute_score(members, judge=SampleJudge(judge), **options)), judge)


RUBRIC = {
    "prompt": "Write about a station.",
    "rubric": [
        {"criterion": "Tells a story", "weight": 2.0},
        {"criterion": "Names the station", "weight": 1.0},
        {"criterion": "Contains factual errors", "weight": -1.0},
    ],
}


def rubric(**options):
    from reward_fns.rubric import compute_score

    def reply(user: str) -> str:
        block = json.dumps({"scores": [{"id": i + 1, "score": s} for i, s in enumerate((9, 5, 1))]})
        return f"Reasoning.\n```json\n{block}\n```" if "### " not in user else '```json\n{"score": 7}\n```'

    judge = Judge(reply)
    run = compute_score("rubric", "A story of a station.", RUBRIC, {}, judge=SampleJudge(judge), **options)
    return observed(lambda: asyncio.run(run), judge)


def preference(answer: str, label: str = "A", **options):
    from reward_fns.preference import compute_score

    return observed(lambda: compute_score("preference", answer, label, None, **options))


TRUTH = json.dumps({"A": 8, "B": 7, "C": 6, "D": 2})
WHY = "A keeps every nuance; B is close; C loses a clause; D mistranslates the verb."


def ranked_answer(scores="A: 8, B: 7, C: 6, D: 2", analysis=WHY, headers=True):
    if not headers:
        return f"{analysis}\nA > B > C > D\n{scores}"
    return f"{analysis}\n\n### Final Ranking:\n\nA > B > C > D\n\n### Scores:\n\n{scores}\n"


def ranking_accuracy(answer=None, **options):
    from reward_fns.ranking_accuracy import compute_score

    answer = ranked_answer() if answer is None else answer
    return observed(lambda: compute_score("grrm", answer, TRUTH, {}, **options))


@dataclass(frozen=True)
class Case:
    """Two values of an option, and the run (given the option as a keyword) whose results must differ."""

    a: Any
    b: Any
    run: Callable[..., str]


def pairwise_template(tmp_path):
    path = tmp_path / "pairwise.txt"
    path.write_text("Q: {prompt}\n1) {response_a}\n2) {response_b}\nSay [[A]] or [[B]].")
    return str(path)


# (group_ranking's template is the layout's text, not a file: gqm_prompt.py's TEMPLATE_FIELDS)
GQM_TEMPLATE = "{intro}\n{source_heading}\n{source}\nRank these {n}:\n{candidates}\n{instructions}"


def cases(tmp_path, tokenizer_dir) -> dict[tuple[str, str], Case]:
    """(module, option) -> its case. ``tmp_path``, ``tokenizer_dir``: for the options that name a file."""
    return {
        # reward_fns.pairwise: one response against the row's reference "a plain story".
        ("pairwise", "strategy"): Case("position-disadvantage", "both", pairwise),
        ("pairwise", "win_score"): Case(1.0, 0.75, lambda **o: pairwise("a good story", **o)),
        ("pairwise", "tie_score"): Case(0.5, 0.25, lambda **o: pairwise("a story", **o)),
        ("pairwise", "loss_score"): Case(0.0, -1.0, lambda **o: pairwise("a bad story", **o)),
        ("pairwise", "neutral_reward"): Case(None, 0.2, lambda **o: pairwise(fail=True, **o)),
        ("pairwise", "template"): Case(None, pairwise_template(tmp_path), pairwise),
        ("pairwise", "system_prompt"): Case(None, "Be terse.", pairwise),
        ("pairwise", "output"): Case("verdict", "scores", lambda **o: pairwise(reply=scores_reply, **o)),
        ("pairwise", "tie_margin"): Case(0.0, 1.0, lambda **o: pairwise(reply=scores_reply, output="scores", **o)),
        ("pairwise", "advance_threshold"): Case(0.0, 0.9, pairwise_curriculum),
        # reward_fns.brpo: a group judged against a bootstrapped reference.
        ("brpo", "strategy"): Case("both", "position-advantage", brpo),
        ("brpo", "num_references"): Case(1, 2, brpo),
        ("brpo", "seed"): Case(0, 1, brpo),
        ("brpo", "format_error_reward"): Case(-1.0, -0.5, brpo),
        ("brpo", "template"): Case(None, pairwise_template(tmp_path), brpo),
        ("brpo", "system_prompt"): Case(None, "Be terse.", brpo),
        ("brpo", "output"): Case("verdict", "scores", lambda **o: brpo(reply=scores_reply, **o)),
        ("brpo", "tie_margin"): Case(0.0, 1.0, lambda **o: brpo(reply=scores_reply, output="scores", **o)),
        ("brpo", "votes"): Case(1, 3, brpo),
        ("brpo", "win_rule"): Case("mean", "consistent", lambda **o: brpo(reply=lambda user: "[[A]]", **o)),
        # reward_fns.tournament: the group's games.
        ("tournament", "schedule"): Case("round_robin", "swiss", tournament),
        ("tournament", "aggregation"): Case("win_rate", "bradley_terry", tournament),
        ("tournament", "opponents"): Case(1, 2, lambda **o: tournament(schedule="k_opponents", **o)),
        ("tournament", "rounds"): Case(None, 1, lambda **o: tournament(schedule="swiss", **o)),
        ("tournament", "orders"): Case(2, 1, tournament),
        ("tournament", "prior"): Case(1.0, 5.0, tournament),
        ("tournament", "seed"): Case(0, 1, lambda **o: tournament(schedule="k_opponents", opponents=1, **o)),
        ("tournament", "format_error_reward"): Case(0.0, -0.5, tournament),
        ("tournament", "template"): Case(None, pairwise_template(tmp_path), tournament),
        ("tournament", "system_prompt"): Case(None, "Be terse.", tournament),
        # reward_fns.pointwise: each answer scored alone by 'good' minus 'bad', normalised in the group.
        ("pointwise", "normalise"): Case("win_rate", "scale", pointwise),
        ("pointwise", "template"): Case(None, pointwise_template(tmp_path), pointwise),
        ("pointwise", "system_prompt"): Case(None, "Be terse.", pointwise),
        ("pointwise", "format_error_reward"): Case(0.0, -0.5, pointwise),
        ("tournament", "output"): Case("verdict", "scores", lambda **o: tournament(reply=scores_reply, **o)),
        ("tournament", "tie_margin"): Case(0.0, 1.0, lambda **o: tournament(reply=scores_reply, output="scores", **o)),
        # reward_fns.group_ranking: one GenRM call ranks the group.
        ("group_ranking", "extraction"): Case("full", "last_line", group_ranking),
        ("group_ranking", "score_scale"): Case(0.1, 0.2, group_ranking),
        ("group_ranking", "default_reward"): Case(0.0, 0.3, lambda **o: group_ranking(fail=True, **o)),
        ("group_ranking", "format_error_reward"): Case(0.0, -0.5, group_ranking),
        ("group_ranking", "max_resp_len"): Case(
            None, 10, lambda **o: group_ranking(lengths=[9, 3, 3, 3], buffer_len=4, **o)
        ),
        ("group_ranking", "buffer_len"): Case(
            0, 4, lambda **o: group_ranking(lengths=[9, 3, 3, 3], max_resp_len=10, **o)
        ),
        ("group_ranking", "penalty_factor"): Case(
            1.0, 0.5, lambda **o: group_ranking(lengths=[9, 3, 3, 3], max_resp_len=10, buffer_len=4, **o)
        ),
        ("group_ranking", "max_prompt_tokens"): Case(
            None, 5, lambda **o: group_ranking(judge_tokenizer_path=str(tokenizer_dir), **o)
        ),
        ("group_ranking", "judge_tokenizer_path"): Case(
            None, str(tokenizer_dir), lambda **o: group_ranking(max_prompt_tokens=5, **o)
        ),
        ("group_ranking", "seed"): Case(0, 1, group_ranking),
        ("group_ranking", "system_prompt"): Case(None, "Rank fairly.", group_ranking),
        ("group_ranking", "template"): Case(None, GQM_TEMPLATE, group_ranking),
        ("group_ranking", "candidate_separator"): Case("\n\n", "\n---\n", group_ranking),
        ("group_ranking", "parse_retries"): Case(0, 1, lambda **o: group_ranking(reply=lambda u: UNREADABLE, **o)),
        ("group_ranking", "find_culprit"): Case(
            True, False, lambda **o: group_ranking(reply=lambda u: UNREADABLE, parse_retries=0, **o)
        ),
        # reward_fns.rubric: the judge scores the response against the row's criteria.
        ("rubric", "per_criterion"): Case(False, True, rubric),
        ("rubric", "system_prompt"): Case(None, "Score strictly.", rubric),
        ("rubric", "positions"): Case(8, 2, rubric),
        # reward_fns.preference: a GenRM's verdict against the human label (no judge).
        ("preference", "output_format"): Case("auto", "verdict", lambda **o: preference("A: 8, B: 4", **o)),
        ("preference", "tie_score"): Case(0.0, 0.3, lambda **o: preference("Even.\n[[C]]", **o)),
        ("preference", "allow_tie"): Case(True, False, lambda **o: preference("Even.\n[[C]]", **o)),
        # reward_fns.ranking_accuracy: a GenRM's ranking against the gold one (no judge).
        ("ranking_accuracy", "variant"): Case(
            "default", "no_cot", lambda **o: ranking_accuracy("A > B > C > D\nA: 8, B: 7, C: 6, D: 2", **o)
        ),
        ("ranking_accuracy", "prompt_type"): Case(None, "ranking", ranking_accuracy),
        ("ranking_accuracy", "score_scale"): Case(1.0, 0.5, ranking_accuracy),
        ("ranking_accuracy", "margin_rewards"): Case(
            None, [1.0, 0.5], lambda **o: ranking_accuracy(ranked_answer("A: 9, B: 7, C: 6, D: 2"), **o)
        ),
        ("ranking_accuracy", "require_headers"): Case(
            True, False, lambda **o: ranking_accuracy(ranked_answer(headers=False), **o)
        ),
        ("ranking_accuracy", "min_reasoning_chars"): Case(
            50,
            500,
            lambda **o: ranking_accuracy(
                "x" * 200 + "\n### Final Ranking:\nA > B > C > D\n### Scores:\nA: 8, B: 7, C: 6, D: 2",
                variant="zero",
                **o,
            ),
        ),
    }


def declared_options() -> list[tuple[str, str]]:
    """(module, option) for every option a shipped reward fn declares (its ``METHOD.options``)."""
    found = []
    for info in pkgutil.iter_modules(reward_fns.__path__):
        method = getattr(importlib.import_module(f"reward_fns.{info.name}"), "METHOD", None)
        if method is not None and method.options is not None:
            found += [(info.name, f.name) for f in dataclasses.fields(method.options)]
    return found


DECLARED = declared_options()


def test_every_declared_reward_fn_option_has_a_case(tmp_path, tokenizer_dir):
    table = cases(tmp_path, tokenizer_dir)
    missing = [f"{module}.{name}" for module, name in DECLARED if (module, name) not in table]
    assert not missing, f"options with no case in tests/test_fn_options_pinned.py: {', '.join(missing)}"
    assert sorted(table) == sorted(DECLARED)  # (and no case for an option that is gone)


@pytest.mark.parametrize("module, name", DECLARED, ids=[f"{m}.{n}" for m, n in DECLARED])
def test_each_reward_fn_option_changes_what_the_fn_does(module, name, tmp_path, tokenizer_dir):
    case = cases(tmp_path, tokenizer_dir).get((module, name))
    assert case is not None, f"{module}.{name} has no case"
    given = lambda value: {} if value is None else {name: value}  # noqa: E731 (None: the declared default)
    first = case.run(**given(case.a))
    assert case.run(**given(case.a)) == first  # the same value, the same run: a difference is the option's
    assert case.run(**given(case.b)) != first


# ---------------------------------------------------------------- reward_loop/fn_options.py


@dataclass(frozen=True)
class Options:
    size: int = option(3, minimum=1)
    low: float = 0.0
    high: float = 1.0
    names: list = option(["a"])

    def check(self, prefix: str) -> None:
        if self.low > self.high:
            raise ConfigError(f"{prefix}.low={self.low} is above {prefix}.high={self.high}")


def test_options_are_read_with_their_defaults_and_each_value_checked():
    assert read_options(Options, {"size": 5}) == Options(size=5)
    with pytest.raises(ConfigError, match=rf"{FN_PREFIX}\.size=0: expected a number >= 1"):
        read_options(Options, {"size": 0})
    with pytest.raises(ConfigError, match=rf"unknown key\(s\) under {FN_PREFIX}: sise"):
        read_options(Options, {"sise": 5})


def test_a_rule_across_options_is_checked_every_time_they_are_read():
    for _ in range(2):  # a refused set is never kept as read
        with pytest.raises(ConfigError, match=rf"{FN_PREFIX}\.low=2.0 is above {FN_PREFIX}\.high=1.0"):
            read_options(Options, {"low": 2.0})


def test_the_same_options_given_again_are_read_once():
    first = read_options(Options, {"size": 7, "low": 0.5})
    assert read_options(Options, {"size": 7, "low": 0.5}) is first
    assert read_options(Options, {"size": 8, "low": 0.5}).size == 8


def test_options_holding_a_list_are_read_each_time_with_their_values():
    assert read_options(Options, {"names": ["x", "y"]}).names == ["x", "y"]
    assert read_options(Options, {"names": ["z"]}).names == ["z"]
    with pytest.raises(ConfigError, match=rf"{FN_PREFIX}\.size=0"):
        read_options(Options, {"names": ["x"], "size": 0})


def test_the_options_read_are_kept_up_to_a_bound():
    read = [read_options(Options, {"size": n}) for n in range(1, 3 * fn_options._READ_MAX)]
    assert [o.size for o in read] == list(range(1, 3 * fn_options._READ_MAX))
    assert 0 < len(fn_options._READ) <= fn_options._READ_MAX
    assert read_options(Options, {"size": 3 * fn_options._READ_MAX - 1}) is read[-1]  # the latest are kept
    # full at exactly the bound: the next new options start it afresh
    fn_options._READ.clear()
    for n in range(1, fn_options._READ_MAX + 1):
        read_options(Options, {"size": n})
    assert len(fn_options._READ) == fn_options._READ_MAX
    read_options(Options, {"size": fn_options._READ_MAX + 1})
    assert len(fn_options._READ) == 1


def test_a_fn_with_declared_options_is_checked_against_them():
    checked = check_fn_options(lambda **kw: 0.0, {"size": 2, "high": 3.0}, "my_fn", Options)
    assert checked == "reward fn options: 2 set, checked against my_fn's declared options"
    with pytest.raises(ConfigError, match=rf"{FN_PREFIX}\.size=0"):
        check_fn_options(lambda **kw: 0.0, {"size": 0}, "my_fn", Options)
    with pytest.raises(ConfigError, match=rf"{FN_PREFIX}\.low=5.0 is above"):
        check_fn_options(lambda **kw: 0.0, {"low": 5.0}, "my_fn", Options)


def test_a_failure_setting_under_the_fns_options_is_refused_naming_its_key():
    refused = r"reward_kwargs\.on_parse_error: the manager passes on_parse_error to the reward fn; not an option \(set reward\.reward_kwargs\.on_parse_error\)"
    with pytest.raises(ConfigError, match=refused):
        check_fn_options(lambda **kw: 0.0, {"on_parse_error": "tie"}, "my_fn", Options)
    with pytest.raises(ConfigError, match=refused):  # a fn taking **kwargs would otherwise get it silently
        check_fn_options(lambda **kw: 0.0, {"on_parse_error": "tie"}, "my_fn", None)
    with pytest.raises(
        ConfigError, match=r"reward_kwargs\.uid: the manager passes uid to the reward fn; not an option$"
    ):
        check_fn_options(lambda **kw: 0.0, {"uid": "x"}, "my_fn", None)


def plain_fn(data_source, solution_str, ground_truth, extra_info=None, *, judge=None, uid=None, weight=1.0):
    return 0.0


def test_a_fn_without_declared_options_is_checked_against_its_signature():
    assert (
        check_fn_options(plain_fn, {"weight": 2.0}, "my_fn", None) == "reward fn options: 1 set, each one my_fn takes"
    )
    assert check_fn_options(plain_fn, None, "my_fn", None) == "reward fn options: 0 set, each one my_fn takes"
    with pytest.raises(ConfigError) as refused:
        check_fn_options(plain_fn, {"wieght": 2.0}, "my_fn", None)
    # the parameters named are the options: not what the manager passes (the sample, the judge, the uid)
    assert str(refused.value) == (
        f"{FN_PREFIX}.wieght: my_fn has no such parameter; did you mean {FN_PREFIX}.weight? (its parameters: weight)"
    )


@pytest.mark.parametrize("name", PASSED_BY_THE_CALLER)
def test_an_argument_the_caller_passes_is_refused_as_a_setting(name):
    def fn(**kw):
        return 0.0

    fn.__signature__ = inspect.Signature([inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None)])
    with pytest.raises(ConfigError, match=rf"{FN_PREFIX}\.{name}\b"):
        check_fn_options(fn, {name: 1}, "my_fn", None)
