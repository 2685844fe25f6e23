"""What a reward worker does around any reward fn (writing_rl/reward_loop/scoring.py), pinned piece by piece on
one ``WorkerScoring`` built from the Writing-RL overlay (no judge is called, no Ray): the request as text, a
sample as the reward terms see it, decoding, the batch log and the failure policy's bookkeeping."""

from __future__ import annotations

import copy
from functools import lru_cache

import numpy as np
import pytest
from omegaconf import OmegaConf, open_dict

from writing_rl.reward_loop.sample import ResponseReader, Sample, prompt_text
from writing_rl.reward_loop.scoring import WorkerScoring
from writing_rl.terms import TermInput

from conftest import compose_writing_rl

# ---------------------------------------------------------------- the request as text


@pytest.mark.parametrize(
    "raw_prompt, ground_truth, text",
    [
        ([{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "last"}],
         None, "last"),  # the last user turn
        (({"role": "system", "content": "s"}, {"role": "user", "content": "in a tuple"}), None, "in a tuple"),
        (np.array([{"role": "user", "content": "in an array"}], dtype=object), None, "in an array"),
        ([{"role": "user", "content": 12}], None, "12"),  # as text
        ([{"role": "user"}], None, ""),  # a user turn without content
        ([{"role": "user", "content": "chat"}], {"prompt": "row"}, "chat"),  # the chat first
        ([{"role": "system", "content": "s"}], {"prompt": "row"}, "row"),  # no user turn: the row's prompt
        (["user", {"role": "assistant", "content": "a"}], {"prompt": "row"}, "row"),  # (a turn must be a dict)
        ("a plain string", {"prompt": "row"}, "row"),  # not a chat
        (42, {"prompt": "row"}, "row"),
        (None, {"prompt": "row"}, "row"),
        (None, {"prompt": 3}, ""),  # a prompt that is not text
        (None, "just a reference", ""),
        (None, None, ""),
    ],
)  # fmt: skip
def test_the_request_is_the_last_user_turn_of_the_chat_else_the_rows_prompt(raw_prompt, ground_truth, text):
    assert prompt_text(raw_prompt, ground_truth) == text


def test_a_sample_reaches_the_reward_terms_with_its_prompt_source_truth_and_a_copy_of_its_extra_info():
    truth = {"prompt": "Write a poem.", "target": ["a poem"]}
    extra = {"index": 4}
    fields = {"reward_model": {"ground_truth": truth}, "data_source": "writing", "extra_info": extra}
    sample = Sample("a response", 17, fields)
    terms = sample.for_terms()
    assert terms == TermInput("a response", 17, "Write a poem.", "writing", truth, {"index": 4})
    assert terms.extra_info is not extra  # a term cannot change the row
    bare = Sample("r", 1, {"reward_model": {}, "extra_info": None}).for_terms()
    assert bare == TermInput("r", 1, "", None, None, {})


# ---------------------------------------------------------------- a worker


JUDGE_URL = "http://127.0.0.1:9/v1"  # never called
SHADOW = {
    "reward.reward_kwargs.shadow.fraction": 1.0,
    "reward.reward_kwargs.shadow.judge.base_url": JUDGE_URL,
    "reward.reward_kwargs.shadow.judge.model": "shadow-model",
}


class Tokens:
    """A tokenizer stand-in: token i is VOCAB[i]; ``special`` names its special tokens. Records each decode."""

    VOCAB = ["<think>", "a plan", "</think>", "a story", "<|im_end|>", "<<|im_end|>>", "<pad>"]

    def __init__(self, special=("<|im_end|>", "<<|im_end|>>", "<pad>")):
        self.all_special_tokens = list(special)
        self.asked = []

    def decode(self, ids, skip_special_tokens):
        self.asked.append((list(ids), skip_special_tokens))
        pieces = [self.VOCAB[i] for i in ids]
        return "".join(p for p in pieces if not (skip_special_tokens and p in self.all_special_tokens))


@lru_cache(maxsize=None)
def overlay():
    # (composed once: hydra is slow; no model is loaded, the tokenizer is a stand-in)
    return compose_writing_rl("/nonexistent/model", JUDGE_URL)


@pytest.fixture
def worker():
    """``worker(settings, drop=(), tokenizer=Tokens())``: a WorkerScoring of the Writing-RL overlay with
    ``settings`` ({key: value}) set and the keys ``drop`` names removed."""

    def build(settings=None, drop=(), tokenizer=None, reward_router_address=None):
        config = copy.deepcopy(overlay())
        with open_dict(config):
            for key, value in (settings or {}).items():
                OmegaConf.update(config, key, value, force_add=True)
            for key in drop:
                parent, _, leaf = key.rpartition(".")
                del OmegaConf.select(config, parent)[leaf]
        return WorkerScoring(config, Tokens() if tokenizer is None else tokenizer, reward_router_address)

    return build


# ---------------------------------------------------------------- a worker's start


def test_a_worker_takes_its_share_of_the_judge_and_of_its_budget(worker):
    scoring = worker({"reward.num_workers": 4, "reward.reward_kwargs.judge.max_concurrency": 10,
                      "reward.reward_kwargs.judge.budget.calls": 100})  # fmt: skip
    assert scoring.judge.concurrency == 2 and scoring.judge.spend.budget.workers == 4
    assert scoring.judge.spend.budget.shares == {"calls": 25}
    alone = worker({"reward.num_workers": None, "reward.reward_kwargs.judge.max_concurrency": 10})
    assert alone.judge.concurrency == 10 and alone.judge.spend.budget.workers == 1  # no num_workers: one
    assert alone.summary.judge is alone.judge and alone.settings.judge.base_url == JUDGE_URL


def test_a_workers_guard_and_failure_policy_follow_the_settings(worker):
    scoring = worker({
        "reward.reward_kwargs.max_judge_error_rate": 0.1,
        "reward.reward_kwargs.max_parse_error_rate": 0.2,
        "reward.reward_kwargs.max_group_incomplete_rate": 0.3,
        "reward.reward_kwargs.max_term_error_rate": 0.4,
        "reward.reward_kwargs.failure_window": 50,
        "reward.reward_kwargs.failure_min_samples": 7,
        "reward.reward_kwargs.on_judge_error": "neutral",
        "reward.reward_kwargs.on_parse_error": "tie",
        "reward.reward_kwargs.failure_score": 0.125,
    })  # fmt: skip
    guard = scoring.guard
    limits = {"judge_error": 0.1, "parse_error": 0.2, "group_incomplete": 0.3, "term_error": 0.4}
    assert guard.limits == limits and guard.recent.maxlen == 50 and guard.min_samples == 7
    assert (scoring.failure.on_judge_error, scoring.failure.on_parse_error, scoring.failure.loss) == (
        "neutral",
        "tie",
        0.125,
    )
    assert scoring.keys.expected is None and scoring.sample_log is None and scoring.shadow is None
    assert (scoring.watch_failed, scoring.in_flight, scoring.batches_started) == (False, 0, 0)


def test_without_a_failure_score_a_failed_sample_is_paid_the_methods_loss(worker):
    assert worker().failure.loss == 0.0  # Writing-RL's pairwise reward: a loss is 0


def test_a_worker_hosted_genrm_is_the_judge_when_none_is_named(worker):
    scoring = worker({"reward.reward_kwargs.judge.base_url": None}, reward_router_address="10.0.0.1:8000")
    assert scoring.settings.judge.base_url == "http://10.0.0.1:8000/v1"


def test_a_worker_without_a_reward_fn_says_which_setting_to_set(worker):
    from writing_rl.settings import ConfigError

    with pytest.raises(ConfigError) as error:
        worker({"reward.custom_reward_function.path": None})
    assert str(error.value) == (
        "writing-rl's reward managers score with a judge-based reward fn: set "
        "reward.custom_reward_function.path to a method's fn (docs/methods/)"
    )


def test_an_on_parse_error_the_reward_fn_does_not_honour_stops_the_worker(worker, tmp_path):
    from writing_rl.settings import ConfigError

    path = tmp_path / "strict.py"
    path.write_text(STRICT)
    fn = {"reward.custom_reward_function.path": str(path), "reward.custom_reward_function.name": "strict"}
    drop = ("reward.custom_reward_function.reward_kwargs",)
    assert worker({**fn, "reward.reward_kwargs.on_parse_error": "raise"}, drop).failure.loss == -1.0  # its loss
    with pytest.raises(ConfigError) as error:
        worker({**fn, "reward.reward_kwargs.on_parse_error": "tie"}, drop)
    assert str(error.value) == f"reward.reward_kwargs.on_parse_error='tie': {path}:strict supports loss, raise"


STRICT = """
from writing_rl.reward_loop.contract import RewardMethod, register

async def strict(data_source, solution_str, ground_truth, extra_info=None, *, judge):
    return 0.5

METHOD = register(strict, RewardMethod(failure_score=lambda **kwargs: -1.0, on_parse_error=("loss", "raise")))
"""


def test_dapos_group_filter_with_the_judge_health_sampler_stops_the_worker_at_start(worker):
    from writing_rl.settings import ConfigError

    assert worker({"algorithm.filter_groups.enable": False}).shadow is None  # the overlay's sampler alone: fine
    with pytest.raises(ConfigError, match="JudgeHealthSampler"):
        worker({"algorithm.filter_groups.enable": True})


def test_the_worker_log_gets_a_handler_once_and_stops_propagating(worker):
    import logging

    from writing_rl.reward_loop.scoring import logger

    saved = (list(logger.handlers), logger.level, logger.propagate)
    for handler in saved[0]:
        logger.removeHandler(handler)
    try:
        worker()
        worker()
        (handler,) = logger.handlers
        assert isinstance(handler, logging.StreamHandler) and logger.level == logging.INFO and not logger.propagate
        record = logging.LogRecord("writing_rl", logging.INFO, "", 0, "hello", None, None)
        assert handler.format(record) == "[writing-rl] hello"
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        for handler in saved[0]:
            logger.addHandler(handler)
        logger.setLevel(saved[1])
        logger.propagate = saved[2]


def item(fields, response_ids, response_mask, prompt_mask=(0, 1, 1)):
    from types import SimpleNamespace

    mask = np.array(list(prompt_mask) + list(response_mask))
    return SimpleNamespace(non_tensor_batch=fields, batch={"responses": np.array(response_ids), "attention_mask": mask})


def test_reading_a_sample_decodes_its_valid_response_tokens_only(worker):
    scoring = worker()
    fields = {"reward_model": {"ground_truth": {"prompt": "p"}}, "extra_info": {}}
    sample = scoring.reader.read(item(fields, [3, 4, 6, 6], [1, 1, 0, 0], prompt_mask=(0, 1, 1, 1, 1)))
    assert sample == Sample("a story", 2, fields)
    assert scoring.reader.tokenizer.asked == [([3, 4], True)]  # the padding is never decoded


def test_a_batch_without_ground_truth_names_verls_v1_trainer_and_the_two_ways_out(worker):
    with pytest.raises(RuntimeError) as error:
        worker().reader.read(item({"extra_info": {}}, [3], [1]))
    assert str(error.value) == (
        "the batch verl sent to the reward manager has no 'reward_model' field (ground truth). "
        "verl 0.9's v1 trainer drops it when the reward model runs colocated: set "
        "trainer.use_v1=false, or host the GenRM standalone (reward.reward_model.enable_resource_pool=true)"
    )


def test_decoding_drops_special_tokens():
    tokens = Tokens()
    assert decoded(tokens, [0, 1, 2, 3, 4]) == "<think>a plan</think>a story"  # (not special here)
    assert tokens.asked == [([0, 1, 2, 3, 4], True)]


def test_reasoning_tags_a_tokenizer_marks_special_are_kept_and_the_other_special_tokens_dropped_whole():
    tokens = Tokens(special=("<think>", "</think>", "<|im_end|>", "<<|im_end|>>", "<pad>"))
    assert decoded(tokens, [0, 1, 2, 3, 5, 4, 6]) == "<think>a plan</think>a story"
    assert tokens.asked == [([0, 1, 2, 3, 5, 4, 6], False)]
    # (the longer special token first: removing <|im_end|> first would leave "<>")


def decoded(tokens, ids):
    return ResponseReader(tokens)._decode(ids)


def test_a_worker_keeps_the_think_tags_its_tokenizer_marks_special_and_sorts_the_others_longest_first(worker):
    plain = worker().reader
    assert plain._special_think_tags == set()
    marked = worker(tokenizer=Tokens(special=("<pad>", "<think>", "<<|im_end|>>", "</think>", "<|im_end|>"))).reader
    assert marked._special_think_tags == {"<think>", "</think>"}
    assert marked._other_special_tokens == ["<<|im_end|>>", "<|im_end|>", "<pad>"]
    assert marked._decode([0, 1, 2, 3, 5]) == "<think>a plan</think>a story"


def test_a_tokenizer_that_names_no_special_tokens_decodes_without_them(worker):
    class Bare:
        def decode(self, ids, skip_special_tokens):
            return f"{list(ids)} {skip_special_tokens}"

    scoring = worker(tokenizer=Bare()).reader
    assert scoring._special_think_tags == set() and scoring._other_special_tokens == []
    assert scoring._decode([1, 2]) == "[1, 2] True"


def test_a_samples_judge_records_its_calls_for_the_worker_client_and_keeps_transcripts_as_set(worker):
    scoring = worker()
    own = scoring.new_judge()
    assert own.judge is scoring.judge and own.client is scoring.judge and own.keep_transcripts is False
    other = object()
    through = worker({"reward.reward_kwargs.keep_transcripts": True}).new_judge(other)
    assert through.judge is other and through.keep_transcripts is True and through.client is not other


def test_the_judge_policy_keeps_an_unreadable_reply_and_the_last_error_as_examples(worker):
    from writing_rl.judge import JudgeTimeout

    scoring = worker()
    judge = scoring.new_judge()
    judge.unreadable.append(("no verdict here", "no_verdict"))
    judge.errors.extend([JudgeTimeout(JUDGE_URL, "first", attempts=1), JudgeTimeout(JUDGE_URL, "last", attempts=2)])
    scoring.apply_judge_policy(judge)  # on_judge_error=loss: the step goes on
    assert scoring.guard.unreadable_example == ("no verdict here", "no_verdict")
    assert scoring.guard.examples == {"judge_error": str(judge.errors[-1])} and "last" in str(judge.errors[-1])


def test_the_idle_log_flushes_a_batch_once_nothing_is_in_flight(worker):
    import logging

    scoring = worker()
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger("writing_rl").addHandler(handler)
    try:
        scoring._log_if_idle()  # nothing counted: nothing to say
        scoring.summary.add(1.0, {"win": 1}, [0.5])
        scoring.in_flight = 1
        scoring._log_if_idle()  # a sample still in flight: the batch goes on
        assert lines == []
        scoring.in_flight = 0
        scoring._log_if_idle()
    finally:
        logging.getLogger("writing_rl").removeHandler(handler)
    assert len(lines) == 1 and lines[0].startswith("1 samples") and scoring.summary.count == 0


# ---------------------------------------------------------------- the shadow judge


def test_a_shadow_judge_gets_its_share_of_the_shadow_concurrency(worker):
    scoring = worker({**SHADOW, "reward.num_workers": 4, "reward.reward_kwargs.shadow.judge.max_concurrency": 16})
    assert scoring.shadow.config is scoring.settings.shadow and scoring.shadow.config.fraction == 1.0
    assert scoring.shadow.judge.concurrency == 4 and scoring.shadow.judge.spend.budget.workers == 4
    assert worker().shadow is None  # fraction 0: off


def test_a_shadow_judge_for_a_fn_that_calls_no_judge_is_refused_at_start(worker, tmp_path):
    from writing_rl.settings import ConfigError

    path = tmp_path / "no_judge.py"
    path.write_text("def no_judge(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.5\n")
    fn = {
        "reward.custom_reward_function.path": str(path),
        "reward.custom_reward_function.name": "no_judge",
        "reward.reward_kwargs.failure_score": 0.0,
    }
    drop = ("reward.custom_reward_function.reward_kwargs",)
    assert worker(fn, drop).shadow is None
    with pytest.raises(ConfigError) as error:
        worker({**fn, **SHADOW}, drop)
    assert str(error.value) == (
        f"reward.reward_kwargs.shadow.fraction=1, but the reward fn {path}:no_judge makes no judge calls (it "
        "declares no `judge` parameter): there is nothing to shadow; set it to 0"
    )


@pytest.mark.parametrize(
    "extra_info, infos, shadowed",
    [
        ({"index": 0}, [{"win": 1}], True),
        (None, [{"judge_error": 1}, {"win": 0}], True),  # a member scored cleanly
        ({"index": 0}, [{"judge_error": 1}, {"parse_error": 1}], False),  # none did
        ({"index": 0}, [], False),
        ({"split": "test"}, [{"win": 1}], False),  # validation
    ],
)
def test_training_samples_with_a_clean_call_are_shadowed(worker, extra_info, infos, shadowed):
    assert worker(SHADOW).shadows(extra_info, infos) is shadowed
    assert worker().shadows(extra_info, infos) is False  # no shadow judge


def test_a_result_takes_the_defaults_then_the_fns_values_then_the_measures_and_a_failed_call_pays_the_loss(worker):
    scoring = worker({"reward.reward_kwargs.failure_score": 0.25})
    score, info = scoring.complete(
        {"score": 0.75, "win": 1, "judge_calls": 5},
        defaults={"win": 0, "tie": 1},
        measured={"judge_calls": 2, "judge_error": 0},
    )
    assert score == 0.75 and info["win"] == 1 and info["tie"] == 1 and info["judge_calls"] == 2
    assert info["parse_error"] == 0 and "position_consistent" not in info  # a fn key's default; no method's key
    failed, _ = scoring.complete(
        {"score": 0.75, "win": 1, "judge_calls": 5}, {"tie": 1}, {"judge_calls": 0, "judge_error": 1}
    )
    assert failed == 0.25  # on_judge_error=loss: no more than the loss
    with pytest.raises(ValueError, match="verl needs the same keys for every sample"):
        scoring.complete({"score": 0.5, "win": 1}, {"tie": 1}, {"judge_calls": 1})  # no judge_error this time


# ---------------------------------------------------------------- finishing a sample

MEASURES = """
def words(data_source, solution_str, ground_truth, extra_info):
    return float(len(solution_str.split()))

def fussy(data_source, solution_str, ground_truth, extra_info):
    if "poison" in solution_str:
        raise ValueError("cannot measure this one")
    return 1.0
"""


def sample_of(text, split=None, uid="u-1"):
    extra = {"index": 0} if split is None else {"index": 0, "split": split}
    fields = {"reward_model": {"ground_truth": {"prompt": "Write."}}, "extra_info": extra, "uid": uid,
              "data_source": "writing", "raw_prompt": [{"role": "user", "content": "Write a story."}]}  # fmt: skip
    return Sample(text, len(text.split()), fields)


def finish(scoring, sample, score, info, latencies=(0.5,), transcripts=None):
    import asyncio

    return asyncio.run(scoring.finish(sample, score, dict(info), list(latencies), transcripts or [{"t": 1}]))


CLEAN = {"judge_error": 0, "parse_error": 0, "win": 1}


def test_finishing_pays_the_terms_and_counts_the_sample_in_the_guard_and_the_summary(worker):
    scoring = worker(
        {"reward.reward_kwargs.terms.repetition.weight": 0.5, "reward.reward_kwargs.terms.repetition.n": 1}
    )
    output = finish(scoring, sample_of("a a b b"), 0.75, CLEAN)
    assert output["reward_score"] == pytest.approx(0.5)  # 0.75 + 0.5 x -(1 - 2/4)
    info = output["reward_extra_info"]
    assert info["reward/method"] == 0.75 and info["term/repetition"] == pytest.approx(-0.5) and info["term_error"] == 0
    assert "judge_transcripts" not in output  # not kept
    assert len(scoring.guard.recent) == 1 and scoring.summary.count == 1 and scoring.summary.latencies == [0.5]


def test_a_sample_whose_judge_call_failed_is_paid_no_more_than_the_loss_with_the_terms_penalties(worker):
    scoring = worker({"reward.reward_kwargs.terms.repetition.weight": 0.5, "reward.reward_kwargs.terms.repetition.n": 1,
                      "reward.reward_kwargs.failure_score": 0.0})  # fmt: skip
    output = finish(scoring, sample_of("a a b b"), 0.75, {**CLEAN, "judge_error": 1})
    assert output["reward_score"] == pytest.approx(-0.25)  # min(0.75, 0.0) - 0.25
    assert scoring.guard.counts["judge_error"] == 1


def test_a_failing_term_is_kept_as_the_guards_example(worker, tmp_path):
    path = tmp_path / "measures.py"
    path.write_text(MEASURES)
    term = {"weight": 1.0, "fn": {"path": str(path), "name": "fussy"}}
    scoring = worker({"reward.reward_kwargs.terms.fussy": term})
    finish(scoring, sample_of("fine"), 0.5, CLEAN)
    assert "term_error" not in scoring.guard.examples
    output = finish(scoring, sample_of("poison"), 0.5, CLEAN)
    assert output["reward_extra_info"]["term_error"] == 1
    assert "cannot measure this one" in scoring.guard.examples["term_error"]


def test_watches_measure_every_sample_and_the_first_failure_alone_is_logged(worker, tmp_path):
    import logging

    path = tmp_path / "measures.py"
    path.write_text(MEASURES)
    watch = {
        "words": {"fn": {"path": str(path), "name": "words"}},
        "fussy": {"fn": {"path": str(path), "name": "fussy"}},
    }
    scoring = worker({"reward.reward_kwargs.watch": watch})
    lines = []
    handler = logging.Handler(level=logging.WARNING)
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger("writing_rl").addHandler(handler)
    try:
        first = finish(scoring, sample_of("three plain words"), 0.5, CLEAN)
        failed = [finish(scoring, sample_of(f"poison {i}"), 0.5, CLEAN) for i in range(2)]
    finally:
        logging.getLogger("writing_rl").removeHandler(handler)
    assert first["reward_score"] == 0.5 and first["reward_extra_info"]["watch/words"] == 3.0
    assert first["reward_extra_info"]["watch_error"] == 0 and first["reward_extra_info"]["win"] == 1
    assert all(f["reward_extra_info"]["watch_error"] == 1 and f["reward_score"] == 0.5 for f in failed)
    assert len(lines) == 1 and "cannot measure this one" in lines[0]
    assert lines[0].endswith(" (watch_error counts every failed measure; the reward is unchanged)")


def test_a_sample_log_gets_each_sample_with_its_uid_prompt_response_reward_and_numbers(worker, tmp_path):
    from trainer_runs import read_sample_logs

    scoring = worker({"reward.reward_kwargs.sample_log_dir": str(tmp_path / "log")})
    finish(scoring, sample_of("a story", uid=7), 0.25, CLEAN)
    (record,) = read_sample_logs(tmp_path / "log")
    assert record["uid"] == "7" and record["prompt"] == "Write a story." and record["response"] == "a story"
    assert record["reward"] == 0.25 and record["win"] == 1


def test_transcripts_go_back_only_when_kept_and_nothing_is_summed_when_the_summary_is_off(worker):
    kept = worker({"reward.reward_kwargs.keep_transcripts": True, "reward.reward_kwargs.log_summary": False})
    output = finish(kept, sample_of("a story"), 0.5, CLEAN, transcripts=[{"messages": "m"}])
    assert output["judge_transcripts"] == [{"messages": "m"}] and kept.summary.count == 0


def test_a_worker_that_is_never_idle_logs_its_summary_once_it_is_overdue(worker, monkeypatch):
    import logging

    import writing_rl.reward_loop.health.batch_summary as summary

    scoring = worker()
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger("writing_rl").addHandler(handler)
    try:
        finish(scoring, sample_of("a story"), 0.5, CLEAN)
        assert lines == [] and scoring.summary.count == 1  # not overdue yet
        monkeypatch.setattr(summary, "MAX_BATCH_S", 0.0)
        finish(scoring, sample_of("a story"), 0.5, CLEAN)
    finally:
        logging.getLogger("writing_rl").removeHandler(handler)
    assert len(lines) == 1 and lines[0].startswith("2 samples") and scoring.summary.count == 0


def test_a_shadowed_worker_adds_the_shadow_keys_and_stops_on_drift_when_told(worker):
    from writing_rl.reward_loop.shadow.scoring import ShadowDrift

    scoring = worker({**SHADOW, "reward.reward_kwargs.shadow.on_drift": "stop"})
    scoring.shadow._carried["shadow_skipped"] = 3  # results finished since the last training sample
    validation = finish(scoring, sample_of("a story", split="test"), 0.5, CLEAN)["reward_extra_info"]
    assert validation["shadow_skipped"] == 0 and validation["shadow_drift"] == -1  # (no look yet)
    training = finish(scoring, sample_of("a story"), 0.5, CLEAN)["reward_extra_info"]
    assert training["shadow_skipped"] == 3  # carried by the next training sample
    from writing_rl.reward_loop.shadow.watch import DriftReading

    scoring.shadow.reading = DriftReading(ready=True, drifting=True)  # the watch's last look saw drift
    with pytest.raises(ShadowDrift):
        finish(scoring, sample_of("a story"), 0.5, CLEAN)
