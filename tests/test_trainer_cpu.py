"""verl's real trainer (``python -m verl.trainer.main_ppo``, v1 trainer unless a preset says otherwise) around
every method, on the CPU backend, through the script a user runs: ``scripts/tiny_train.sh``.

Each test reads one or two whole training runs (about a minute and a half each on 2 cores): marked ``trainer``,
so a developer can leave them out with ``-m "not trainer"``. The runs start in the background as soon as
pytest has collected the tests that read them (tests/trainer_runs.py), and each test waits for its own. What
the tests read back is what verl wrote: its file tracker (metrics.jsonl), its dump of each step's rollouts and scores (rollouts/<step>.jsonl) and its checkpoints, against what our reward
managers returned (the sample log, ``samples/``).
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from writing_rl.curriculum.log import read_state

from conftest import REPO_DIR
from trainer_runs import (
    COLOCATE_ASYNC,
    DEAD_JUDGE,
    ENSEMBLE,
    FULLY_ASYNC,
    ONE_STEP_OFF,
    REAL_JUDGED,
    SEPARATE_ASYNC,
    SMOLLM2_RUNS,
    read_sample_logs,
    tiny_train,
    uses,
)

pytestmark = pytest.mark.trainer

PER_STEP = 16  # tiny_train.py: 4 prompts x 4 rollouts
GROUP = 4
FAILURES = ("judge_error", "parse_error", "judge_truncated", "judge_refusal")
JUDGE_KEYS = ("judge/error_rate", "judge/parse_error_rate", "judge/calls_total", "judge/latency_p50_s")


@pytest.fixture(scope="module")
def runs(trainer_runs_started):
    return trainer_runs_started


def metrics(out: Path) -> dict[int, dict]:
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return {json.loads(line)["step"]: json.loads(line)["data"] for line in lines if line.strip()}


def dumped(out: Path, step: int) -> list[dict]:
    return [json.loads(line) for line in (out / "rollouts" / f"{step}.jsonl").read_text().splitlines()]


def ours_by_step(out: Path, steps: list[int], first: int = 0) -> dict[int, list[dict]]:
    """What our managers returned, split into steps: the v1 sync trainer scores all of a step's rollouts
    before the next step generates, so the log in time order is the steps in order (``first``: records
    of earlier runs in the same OUT, left out)."""
    records = read_sample_logs(out / "samples")[first:]
    assert len(records) >= PER_STEP * len(steps), f"{len(records)} rewards logged for steps {steps}"
    return {step: records[i * PER_STEP : (i + 1) * PER_STEP] for i, step in enumerate(steps)}


def assert_verl_trained_on_our_rewards(
    out: Path, steps: list[int], logged: dict | None = None
) -> dict[int, list[dict]]:
    logged = metrics(out) if logged is None else logged
    assert sorted(logged) == steps
    ours = ours_by_step(out, steps)
    for step in steps:
        rewards = [record["reward"] for record in ours[step]]
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(rewards), abs=1e-5)
        assert_each_rollout_paid_its_own_reward(dumped(out, step), ours[step])
        for key in JUDGE_KEYS:
            assert key in logged[step], f"step {step}: no {key} in verl's metrics"
        assert logged[step]["actor/grad_norm"] > 0  # rewards varied within groups: the policy got a gradient
    return ours


def assert_each_rollout_paid_its_own_reward(rows: list[dict], records: list[dict]) -> None:
    """verl's dumped rollouts of a step and what our managers returned for them, matched by text: the same
    (response, reward) pairs, as many of each (a reward paid to another rollout of the step shows here)."""
    theirs = sorted((row["output"], row["score"]) for row in rows)
    ours = sorted((record["response"], record["reward"]) for record in records)
    assert [text for text, _ in theirs] == [text for text, _ in ours]
    assert [score for _, score in theirs] == pytest.approx([reward for _, reward in ours], abs=1e-5)


def finished(output: str) -> bool:
    return output.startswith("rc=0\n") and "every step finished" in output


def assert_terms_reached_verl(ours: dict[int, list[dict]], logged: dict[int, dict]) -> None:
    for step, records in ours.items():
        assert "reward_terms/repetition_mean" in logged[step]
        assert all("term/repetition" in record for record in records)


@pytest.mark.release
@pytest.mark.parametrize("method", [pytest.param(m, marks=uses(m)) for m in ("grrm_mt_grpo", "rubric")])
def test_a_judged_method_trains_on_exactly_the_rewards_our_manager_returned(method, runs):
    """The rubric's run has a judge that fails one request in four: its failures reach verl's tracker as
    they were returned, each named and paid a loss."""
    (output,), out = runs.get(method)
    assert finished(output), output[-3000:]
    ours = assert_verl_trained_on_our_rewards(out, [1, 2])
    logged = metrics(out)
    assert_terms_reached_verl(ours, logged)
    for step, records in ours.items():
        for rate, flag in (("judge/error_rate", "judge_error"), ("judge/parse_error_rate", "parse_error")):
            assert logged[step][rate] == pytest.approx(statistics.mean(r[flag] for r in records)), (step, rate)
    assert_one_shape_and_failures_paid_a_loss([r for records in ours.values() for r in records],
                                              some_failed=method == "rubric")  # fmt: skip
    assert (out / "reward.png").read_bytes().startswith(b"\x89PNG")


@uses("tournament")
def test_the_tournament_trains_on_its_rewards_and_a_failed_game_is_left_out_and_counted(runs):
    """A method added as a plug-in (reward_fns/tournament.py) through verl's trainer, with a judge that fails one
    request in four: every failed game is counted and blamed, a failed call paid the loss."""
    (output,), out = runs.get("tournament")
    assert finished(output), output[-3000:]
    ours = assert_verl_trained_on_our_rewards(out, [1, 2])
    assert_terms_reached_verl(ours, metrics(out))
    records = [r for step in ours.values() for r in step]
    assert len({tuple(sorted(r)) for r in records}) == 1  # one shape, failed or not
    # A failed call pays the loss (on_judge_error=loss); an unreadable game counts as a loss for the answer
    # blamed (parse_error=1), among its other games.
    assert_one_shape_and_failures_paid_a_loss([r for r in records if not r["parse_error"]], some_failed=False)
    assert sum(r["failed_games"] for r in records) > 0, "none of the stand-in judge's faults reached a game"
    assert all(r["failed_games"] > 0 for r in records if r["parse_error"] or r["judge_error"])
    played = [r for r in records if r["games"] > 0]
    assert played and all(0.0 <= r["reward"] - 0.5 * r["term/repetition"] <= 1.0 for r in played)


@pytest.mark.release
@uses(ENSEMBLE)
def test_a_judge_ensemble_trains_and_every_judges_calls_reach_the_tracker(runs):
    """Writing-RL judged by a three-judge ensemble through verl's trainer, its judges failing one request in four:
    every judgment asks the three, a reply one cannot read makes it a failure paid no more than a loss."""
    (output,), out = runs.get(ENSEMBLE)
    assert finished(output), output[-3000:]
    ours = assert_verl_trained_on_our_rewards(out, [1, 2])
    records = [r for step in ours.values() for r in step]
    assert_one_shape_and_failures_paid_a_loss(records)
    judged = [r for r in records if not r["format_error"]]
    assert all(r["judge_calls"] % 3 == 0 for r in judged)  # each judgment asks the three judges
    for name in ("one", "two", "three"):
        assert sum(r[f"judge/ensemble/{name}/calls_total"] for r in judged) == sum(r["judge_calls"] for r in judged) / 3
    logged = metrics(out)
    assert all(logged[step]["judge/ensemble/one/calls_total"] > 0 for step in (1, 2))


@uses("writing_rl")
def test_writing_rl_advances_its_curriculum_and_a_resumed_run_starts_from_the_saved_levels(runs):
    # Run 1: 2 steps, a checkpoint at step 2. Run 2: STEPS=3 in the same OUT, verl resumes from global_step_2.
    (first, second), out = runs.get("writing_rl")
    assert finished(first), first[-3000:]
    assert (out / "metrics.previous.jsonl").exists()
    logged = {json.loads(line)["step"]: json.loads(line)["data"] for line in (out / "metrics.previous.jsonl").open()}
    assert_verl_trained_on_our_rewards(out, [1, 2], logged)
    assert (out / "checkpoints" / "global_step_2").is_dir()
    saved = read_state(out / "curriculum-after-run-1").table.as_dict()
    assert any(level > 0 for level in saved.values()), f"no prompt moved to a harder reference: {saved}"
    # The shadow judge (the stand-in again) scored the rollouts too; its results reached verl's tracker.
    assert sum(logged[step].get("shadow/samples_total", 0) for step in (1, 2)) > 0, logged
    assert all(logged[step]["shadow/failed_total"] == 0 for step in (1, 2) if "shadow/failed_total" in logged[step])

    assert finished(second), second[-3000:]
    assert sorted(metrics(out)) == [3]
    rows = pq.read_table(out / "data" / "train.parquet").to_pylist()
    row_id = {
        row["reward_model"]["ground_truth"]["prompt"]: str(row["reward_model"]["ground_truth"]["id"]) for row in rows
    }
    step3 = read_sample_logs(out / "samples")[2 * PER_STEP :]
    assert len(step3) == PER_STEP
    assert_each_rollout_paid_its_own_reward(dumped(out, 3), step3)
    for record in step3:
        # Each rollout of step 3 was judged against at least the reference its prompt had reached in run 1.
        assert record["curriculum/level"] >= saved.get(row_id[record["prompt"]], 0)
    resumed = read_state(out / "checkpoints" / "curriculum").table.as_dict()
    assert all(resumed[key] >= level for key, level in saved.items())
    assert any(record["curriculum/level"] > 0 for record in step3) == any(saved.values())


def assert_each_dumped_rollout_was_paid_what_we_returned(out: Path, steps: list[int], ours: list[dict]) -> None:
    """For trainers that judge ahead of training: the rewards logged in time order are not the steps in order,
    so each step's dumped rollouts are matched to what our manager returned for the same response."""
    logged = metrics(out)
    assert sorted(logged) == steps
    paid: dict[str, list[float]] = {}
    for record in ours:
        paid.setdefault(record["response"], []).append(record["reward"])
    for step in steps:
        rows = dumped(out, step)
        assert len(rows) == PER_STEP
        for row in rows:
            assert any(abs(reward - row["score"]) < 1e-5 for reward in paid.get(row["output"], [])), row["output"]
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(r["score"] for r in rows), abs=1e-5)
        assert logged[step]["actor/grad_norm"] > 0


def assert_steps_trained_on_groups_we_paid(
    logged: dict[int, dict], steps: list[int], ours: list[dict], varied: bool = True
) -> None:
    """For trainers that dump no rollouts (fully-async; one-step-off, whose dump verl 0.9.1 breaks): each step's
    score is the mean, minimum and maximum of some 4 whole groups our manager paid. ``varied``: rewards vary
    within groups, so the policy got a gradient."""
    assert sorted(logged) == steps
    groups: dict[str, list[float]] = {}
    for record in ours:
        groups.setdefault(record["uid"], []).append(record["reward"])
    whole = [rewards for rewards in groups.values() if len(rewards) == GROUP]
    for step in steps:
        data = logged[step]
        assert any(
            statistics.mean(r for g in chosen for r in g) == pytest.approx(data["critic/score/mean"], abs=1e-5)
            and min(r for g in chosen for r in g) == pytest.approx(data["critic/score/min"], abs=1e-5)
            and max(r for g in chosen for r in g) == pytest.approx(data["critic/score/max"], abs=1e-5)
            for chosen in itertools.combinations(whole, PER_STEP // GROUP)
        ), f"step {step}: no {PER_STEP // GROUP} of our {len(whole)} groups give verl's scores {data}"
        assert data["actor/grad_norm"] > 0 or not varied


def assert_one_shape_and_failures_paid_a_loss(ours: list[dict], loss: float = 0.0, some_failed: bool = True) -> None:
    """verl builds a batch's extra-info columns from its first sample: every reward we returned carries the
    same keys with the same types, failed or not, and each failure is named and paid no more than a loss.
    ``some_failed``: the run made enough judge calls that one in 4 failing cannot miss them all (p < 1e-3)."""
    shapes = {
        tuple(sorted((key, type(value).__name__) for key, value in record.items() if key not in ("time", "uid")))
        for record in ours
    }
    assert len(shapes) == 1, shapes
    failed = [record for record in ours if any(record[key] for key in FAILURES)]
    assert failed or not some_failed, "none of the stand-in judge's faults reached a sample"
    assert all(record["reward"] <= loss + 1e-9 for record in failed), failed


def assert_rollout_loaded_each_step(output: str, tensors: int) -> dict[int, str]:
    """After each step the new weights reached the rollout's own process, in order, all ``tensors`` of them (the
    CPU rollout's line in the trainer's log; some trainers also load version 0 at start, or the last one again
    at the end). Returns the digest of the rollout's weights after each step's load."""
    loads = re.findall(r"CPU rollout: weights of step (\d+) loaded \((\d+) tensors, digest (\w+)\)", output)
    loaded = [int(step) for step, _, _ in loads]
    assert {1, 2} <= set(loaded) and loaded == sorted(loaded), loaded
    assert [int(count) for _, count, _ in loads] == [tensors] * len(loads), loads
    return {int(step): digest for step, _, digest in loads}


def policy_tensors(runs) -> int:
    """The tensors of the tiny policy the runs train: what every weight update must bring the rollout."""
    from transformers import AutoModelForCausalLM

    return len(AutoModelForCausalLM.from_pretrained(runs.cache / "policy").state_dict())


@pytest.mark.release
@uses(COLOCATE_ASYNC)
def test_under_the_colocate_async_trainer_verl_trains_on_rewards_our_manager_returned(runs):
    """verl's v1 colocate_async mode judges a warm-up batch ahead. The curriculum judges every rollout of a
    group at the one level pinned for it; a judge that fails now and then."""
    (output,), out = runs.get(COLOCATE_ASYNC)
    assert finished(output), output[-3000:]
    ours = read_sample_logs(out / "samples")  # in the order our managers returned them
    assert len(ours) >= 3 * PER_STEP  # the warm-up batch, then one ahead of each step
    assert_each_dumped_rollout_was_paid_what_we_returned(out, [1, 2], ours)
    logged = metrics(out)
    for step in (1, 2):
        for key in (*JUDGE_KEYS, "reward_terms/repetition_mean"):
            assert key in logged[step], f"step {step}: no {key} in verl's metrics"
    assert all("term/repetition" in record for record in ours)
    assert_one_level_per_group(ours)
    assert_one_shape_and_failures_paid_a_loss(ours)


def assert_one_level_per_group(ours: list[dict]) -> None:
    by_group: dict[str, set[int]] = {}
    for record in ours:
        by_group.setdefault(record["uid"], set()).add(record["curriculum/level"])
    assert all(len(levels) == 1 for levels in by_group.values()), by_group  # groups of two steps interleave


@uses(SEPARATE_ASYNC)
def test_under_the_separate_async_trainer_the_rollout_gets_each_version_over_gloo(runs):
    """GRRM's group ranking, terms on, a judge that fails now and then; rollout in a process of its own."""
    (output,), out = runs.get(SEPARATE_ASYNC)
    assert finished(output), output[-3000:]
    ours = read_sample_logs(out / "samples")
    assert_each_dumped_rollout_was_paid_what_we_returned(out, [1, 2], ours)
    assert_one_shape_and_failures_paid_a_loss(ours, some_failed=False)  # one call per group: too few to be sure
    logged = metrics(out)
    for step in (1, 2):
        for key in (*JUDGE_KEYS, "reward_terms/repetition_mean"):
            assert key in logged[step], f"step {step}: no {key} in verl's metrics"
    # The rollout generates with every tensor the actor holds after step 2 (its checkpoint), not only some of them.
    import torch

    from writing_rl.cpu_backend.rollout import weights_digest

    actor = torch.load(out / "checkpoints" / "global_step_2" / "actor" / "model_world_size_1_rank_0.pt",
                       weights_only=False)  # fmt: skip
    assert assert_rollout_loaded_each_step(output, len(actor))[2] == weights_digest(actor)


@uses(FULLY_ASYNC)
def test_under_the_fully_async_trainer_the_curriculum_pins_each_group_and_failures_stay_losses(runs):
    """Writing-RL with its curriculum and terms under verl.experimental.fully_async_policy: each rollout alone
    to a random reward worker, weights over gloo after every step, a judge that fails now and then."""
    (output,), out = runs.get(FULLY_ASYNC)
    assert finished(output), output[-3000:]
    ours = read_sample_logs(out / "samples")
    assert len(ours) >= 2 * PER_STEP
    assert_steps_trained_on_groups_we_paid(tiny_train().read_metrics(out / "metrics.jsonl"), [1, 2], ours)
    assert_one_shape_and_failures_paid_a_loss(ours)
    assert_one_level_per_group(ours)
    assert all("term/repetition" in record for record in ours)
    assert_rollout_loaded_each_step(output, policy_tensors(runs))


@uses(ONE_STEP_OFF)
def test_under_the_one_step_off_trainer_the_rubric_reward_reaches_verl(runs):
    (output,), out = runs.get(ONE_STEP_OFF)
    assert finished(output), output[-3000:]
    ours = read_sample_logs(out / "samples")
    assert_steps_trained_on_groups_we_paid(tiny_train().read_metrics(out / "metrics.jsonl"), [1, 2], ours)
    assert_one_shape_and_failures_paid_a_loss(ours)
    assert all("term/repetition" in record for record in ours)
    assert_rollout_loaded_each_step(output, policy_tensors(runs))


@pytest.mark.release
@pytest.mark.parametrize(
    ("key", "loss", "varied"),
    [pytest.param(k, loss, varied, marks=uses(k)) for k, loss, varied in
     (("brpo-colocate-async", -1.0, True), ("brpo-separate-async", -1.0, True), ("brpo-fully-async", -1.0, True),
      ("writing_rl-legacy", 0.0, True), ("grrm_mt_grpo-legacy-standalone", 0.0, False))],
)  # fmt: skip
def test_the_rest_of_the_trainer_matrix_trains_on_rewards_we_paid(key, loss, varied, runs):
    """The GenRM verl hosts (standalone) under the trainers CI does not run it with; Writing-RL under the
    legacy trainer with a judge that fails now and then."""
    (output,), out = runs.get(key)
    assert finished(output), output[-3000:]
    ours = read_sample_logs(out / "samples")
    # The untrained GenRM writes no readable verdict: nearly every sample it judges is a named failure (BRPO's
    # bootstrapped sibling is still paid 0 against the others' -1; every GRRM rollout is paid the same 0).
    assert_steps_trained_on_groups_we_paid(tiny_train().read_metrics(out / "metrics.jsonl"), [1, 2], ours, varied)
    assert_one_shape_and_failures_paid_a_loss(ours, loss)


# Release: rule-based rewards, the judged path's parts they use are CI's; their 2-step runs were 5 of CI's 30 minutes.
@pytest.mark.release
@pytest.mark.parametrize("method", [pytest.param(m, marks=uses(m)) for m in ("grrm_rlvr", "genrm_pairwise_rl")])
def test_a_genrm_training_run_scores_each_rollout_with_the_rule_based_reward(method, runs):
    from omegaconf import OmegaConf
    from verl.utils.import_utils import load_extern_object

    (output,), out = runs.get(method)
    assert finished(output), output[-3000:]
    logged = metrics(out)
    assert sorted(logged) == [1, 2]
    module = {"grrm_rlvr": "reward_fns.ranking_accuracy", "genrm_pairwise_rl": "reward_fns.preference"}[method]
    compute_score = load_extern_object(module_path=f"pkg://{module}", object_name="compute_score")
    overlay = OmegaConf.load(REPO_DIR / "hydra_configs" / f"{method}.yaml")
    kwargs = OmegaConf.to_container(overlay.reward.custom_reward_function.reward_kwargs)
    for step in (1, 2):
        rows = dumped(out, step)
        assert len(rows) == PER_STEP
        for row in rows:  # what verl paid each rollout is what our reward fn says of its text
            score = compute_score(data_source=None, solution_str=row["output"], ground_truth=row["gts"], **kwargs)
            assert row["score"] == pytest.approx(score if isinstance(score, float) else score["score"], abs=1e-5)
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(r["score"] for r in rows), abs=1e-5)


@pytest.mark.parametrize(
    ("method", "preset"),
    [pytest.param(m, p, marks=uses(f"{m}-{p}")) for m, p in (("brpo", "standalone"), ("grrm_mt_grpo", "colocated"))],
)
def test_a_genrm_preset_serves_the_tiny_genrm_on_the_cpu_rollout(method, preset, runs):
    """+genrm=standalone runs under the v1 trainer, +genrm=colocated under the legacy one (its preset)."""
    (output,), out = runs.get(f"{method}-{preset}")
    assert finished(output), output[-3000:]
    logged = metrics(out)
    assert sorted(logged) == [1, 2]
    if method == "brpo":  # BRPO's run, with its terms: the method's checks through the v1 trainer
        ours = assert_verl_trained_on_our_rewards(out, [1, 2])
        assert_terms_reached_verl(ours, logged)
        # +1 beat the bootstrapped sibling, -1 lost to it, 0 the sibling itself or a tie; the untrained GenRM's
        # replies are unreadable, and a sample with one is paid the loss (-1) whatever it was compared to.
        methods = {round(r["reward"] - 0.5 * r["term/repetition"], 6) for s in ours.values() for r in s}
        assert methods <= {-1.0, 0.0, 1.0}
        unreadable = [r for s in ours.values() for r in s if r["parse_error"]]
        assert all(round(r["reward"] - 0.5 * r["term/repetition"], 6) == -1.0 for r in unreadable)
    for step, records in ours_by_step(out, [1, 2]).items():
        rewards = [record["reward"] for record in records]
        assert logged[step]["critic/score/mean"] == pytest.approx(statistics.mean(rewards), abs=1e-5)
        # Every call reached the GenRM verl hosts and was answered (an untrained model: its replies are
        # unreadable, each paid the method's loss, never a silent reward).
        assert sum(record["judge_calls"] for record in records) > 0
        assert sum(record["judge_tokens"] for record in records) > 0
        assert all(record["judge_error"] == 0 for record in records)
        assert all(record["parse_error"] == 0 or record["reward"] <= 0 for record in records)


@pytest.mark.release
@uses(DEAD_JUDGE)
def test_a_judge_that_fails_every_call_is_paid_a_loss_until_the_guard_stops_the_run(runs):
    (output,), out = runs.get(DEAD_JUDGE)
    # Step 1: 16 samples, below failure_min_samples=24: each failed call paid a pairwise loss, the run goes on.
    logged = metrics(out)
    assert sorted(logged) == [1], output[-3000:]
    assert logged[1]["judge/error_rate"] == 1.0 and logged[1]["critic/score/mean"] == 0.0
    step1 = read_sample_logs(out / "samples")[:PER_STEP]
    assert len(step1) == PER_STEP and all(r["judge_error"] == 1 and r["reward"] == 0.0 for r in step1)
    # Step 2 reaches 24 samples, all failed: above max_judge_error_rate, the guard stops the run, and no step
    # trains on the part of its batch that was scored before.
    assert not output.startswith("rc=0\n")
    log = (out / "train.log").read_text(errors="replace")
    assert "above reward.reward_kwargs.max_judge_error_rate=0.1" in log, output[-3000:]
    assert "RewardFailedError" in log and "could not be scored" in output


@pytest.mark.release
@pytest.mark.parametrize("key", [pytest.param(k, marks=uses(k)) for k in SMOLLM2_RUNS])
def test_a_real_policy_and_a_real_judge_through_verls_trainer(runs, key):
    """SmolLM2-135M-Instruct as the policy (its own tokenizer and chat template) and, for a judged method, as the
    judge served beside the run: 2 steps of verl's trainer; the rollouts are words; every reply the reward could not
    read is counted and paid no more than a loss; the time of a step and of its reward stage are in verl's metrics."""
    (output,), out = runs.get(key)
    assert finished(output), output[-3000:]
    assert "smollm2 and tokenizer" in output
    logged = metrics(out)
    for step in (1, 2):
        # streaming mode: the reward stage runs inside generation (timing_s/gen), its judge calls timed apart
        assert logged[step]["timing_s/step"] >= logged[step]["timing_s/gen"] > 0, logged[step]
    dumped = [json.loads(line)["output"] for line in (out / "rollouts" / "1.jsonl").read_text().splitlines()]
    words = " ".join(dumped).split()
    assert len(words) > 100 and sum(w.strip(".,;:!?\"'()").isalpha() for w in words) > 0.6 * len(words), dumped[:3]
    if key.removesuffix("-smollm2") not in REAL_JUDGED:  # the GenRM-training overlays: a rule-based reward
        return
    assert "judge: smollm2" in output
    ours = read_sample_logs(out / "samples")
    assert len(ours) >= 2 * PER_STEP
    for step in (1, 2):
        for name in JUDGE_KEYS:
            assert name in logged[step], f"step {step}: no {name} in verl's metrics"
    # SmolLM2 seldom writes the verdict format: failures are certain. Each is paid at most 0, the loss of every
    # method here but BRPO, whose candidates pay 0 for a comparison with a reference that every candidate failed
    # against (the culprit, which pays -1: reward_fns/brpo.py), and -1 otherwise. The tournament counts an
    # unreadable game as a loss for the answer blamed, among its other games (parse_error=1, paid for the rest).
    if key.startswith("tournament"):
        shapes = {tuple(sorted((k, type(v).__name__) for k, v in r.items() if k not in ("time", "uid"))) for r in ours}
        assert len(shapes) == 1, shapes
        assert all(r["reward"] <= 0.0 for r in ours if r["judge_error"])  # a failed call: the loss
        assert any(r["parse_error"] for r in ours) and all(r["failed_games"] > 0 for r in ours if r["parse_error"])
        # an answer none of whose games could be read: every game counted as lost, below a tie (Bradley-Terry's
        # prior keeps a player who lost every game above 0)
        assert all(r["reward"] < 0.5 for r in ours if r["games"] == 0 and r["failed_games"] > 0)
        return
    assert_one_shape_and_failures_paid_a_loss(ours, some_failed=True)
