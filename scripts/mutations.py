"""Deliberate breaks the tests must catch: each one, alone, in a temporary copy of the repository (the
working tree, uncommitted edits included; or ``--rev``), with the tests named for it run there. A break
whose tests still pass is MISSED, and the exit status is 1. docs/development.md says when to add one.

    python scripts/mutations.py                       # every break (about 7 minutes on 2 CPU cores)
    python scripts/mutations.py rubric-weights terms-see-no-tokens   # some, by name
    python scripts/mutations.py --list                # the breaks and the tests that must catch each
    python scripts/mutations.py --baseline NAME ...   # also run the tests unbroken first: they must pass

The working tree is never edited: the copy is made under a temporary directory, each break is applied to
it and undone after its tests, and the copy is removed at the end. ``tests/test_mutations.py`` checks (fast,
in the suite) that each break's text still occurs exactly once in its file and that its tests exist.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Break:
    name: str
    path: str  # the file, from the repository root
    old: str  # text that occurs exactly once in it
    new: str  # what it becomes
    tests: tuple[str, ...]  # pytest node ids or test files that must fail
    what: str  # the feature broken, in a few words


def _break(name: str, path: str, old: str, new: str, tests: str | tuple[str, ...], what: str) -> Break:
    return Break(name, path, old, new, (tests,) if isinstance(tests, str) else tests, what)


TERMS_LOOP = "tests/test_terms_reward_loop.py::"
LEARNING = "tests/test_learning.py::"
PLUGINS = "tests/test_method_plugins.py::"
TOURNAMENT = "tests/test_tournament.py::"
TOURNAMENT_MATH = "tests/test_tournament_math.py::"
ENSEMBLE = "tests/test_judge_ensemble.py::"
RUBRIC = "tests/test_rubric.py::"
CLUSTER = "tests/test_cluster_job.py::"
RAY_JOB = "tests/test_ray_job.py::"
ENTRY = "tests/test_health_entry.py::"
RMBENCH = "tests/test_eval_rmbench.py::"
JUDGEBENCH = "tests/test_eval_judgebench.py::"
TRACKER = (
    "tests/test_tracker_judge_metrics.py::"
    "test_every_trainer_step_has_its_judge_metrics_in_the_tracker_under_its_own_step"
)

BREAKS = [
    # ---------------------------------------------------------------- the gaps of issue 35
    _break(
        "terms-see-no-tokens",
        "writing_rl/reward_loop/sample.py",
        "            self.response_length,\n            self.prompt,",
        "            0,\n            self.prompt,",
        TERMS_LOOP + "test_the_overlong_term_counts_verls_response_tokens_up_to_rollout_response_length",
        "a term sees 0 response tokens, not verl's count",
    ),
    _break(
        "overlong-default-length",
        "writing_rl/terms/shaping.py",
        "term = replace(term, max_length=response_length)",
        "term = replace(term, max_length=4096)",
        TERMS_LOOP + "test_the_overlong_term_counts_verls_response_tokens_up_to_rollout_response_length",
        "overlong.max_length=null ignores rollout.response_length",
    ),
    _break(
        "rubric-weights",
        "writing_rl/protocols/rubric.py",
        "criteria.append(Criterion(text.strip(), float(weight)))",
        "criteria.append(Criterion(text.strip(), math.copysign(1.0, weight)))",
        RUBRIC + "test_the_rows_weights_decide_the_reward_through_verls_reward_loop",
        "a rubric's weights dropped (signs kept)",
    ),
    _break(
        "rubric-cancel",
        "reward_fns/rubric.py",
        "call.cancel()  # (the sample has failed",
        "call.done()  # (the sample has failed",
        RUBRIC + "test_a_failed_criterion_call_fails_the_sample_and_frees_the_judge_for_the_next",
        "a failed criterion call leaves the sample's other calls running",
    ),
    _break(
        "rubric-format-error",
        "reward_fns/rubric.py",
        "return _result(0.0, positions, format_error=1)",
        "return _result(1.0, positions, format_error=1)",
        RUBRIC + "test_the_rows_weights_decide_the_reward_through_verls_reward_loop",
        "an unclosed reasoning block is paid a win",
    ),
    _break(
        "failed-sample-gains-from-terms",
        "writing_rl/reward_loop/scoring.py",
        "failed = any(info.get(key) for key in results.FAILURE_KEYS)",
        "failed = False",
        TERMS_LOOP + "test_a_failed_judge_call_gains_nothing_from_a_positive_term",
        "a failed sample is paid its positive terms",
    ),
    _break(
        "map-by-name",
        "docs/architecture.md",
        "`writing` (Writing-RL), `prompts`,\n      `rubric`",
        "`writing` (Writing-RL),\n      `rubric`",
        "tests/test_docs.py::test_the_architecture_map_names_every_module",
        "data/builders/prompts.py off the map (protocols/prompts.py is on it)",
    ),
    _break(
        "docs-command-value",
        "README.md",
        "--version 2 --out runs/rb2",
        "--version 7 --out runs/rb2",
        "tests/test_docs.py::test_each_command_shown_parses",
        "a command shown with a value argparse refuses",
    ),
    _break(
        "vllm-argument-misspelt",
        "writing_rl/genrm/vllm_engine.py",
        "gpu_memory_utilization=gpu_memory_utilization,",
        "gpu_memory_utilisation=gpu_memory_utilization,",
        "tests/test_genrm_engines.py",
        "the vllm engine hands vLLM an argument it does not take",
    ),
    # ---------------------------------------------------------------- one per reward
    _break(
        "pairwise-best-order",
        "reward_fns/pairwise.py",
        "score = sum(scores[o] for o in outcomes) / len(outcomes)",
        "score = max(scores[o] for o in outcomes)",
        "tests/test_pairwise.py",
        "Writing-RL pays the better of its two orders (position bias pays)",
    ),
    _break(
        "brpo-loss-free",
        "reward_fns/brpo.py",
        '"loss": -1.0}',
        '"loss": 0.0}',
        "tests/test_brpo.py",
        "BRPO: losing to the reference costs nothing",
    ),
    _break(
        "grrm-labels-not-mapped-back",
        "reward_fns/group_ranking.py",
        "return {candidates[i]: read.scores[gqm.LABELS[p]] for p, i in enumerate(order)}",
        "return {candidates[p]: read.scores[gqm.LABELS[p]] for p, i in enumerate(order)}",
        "tests/test_group_ranking.py",
        "GRRM: scores given to the candidates in their shuffled places",
    ),
    _break(
        "preference-tie-score",
        "reward_fns/preference.py",
        "return _result(float(options.tie_score), valid=1, predicted_tie=1)",
        "return _result(0.0, valid=1, predicted_tie=1)",
        "tests/test_preference.py",
        "pairwise GenRM: tie_score ignored",
    ),
    _break(
        "ranking-accuracy-score-term",
        "reward_fns/ranking_accuracy.py",
        "total = (ranking_reward + score_reward) * float(options.score_scale)",
        "total = ranking_reward * float(options.score_scale)",
        "tests/test_ranking_accuracy.py",
        "GQM GenRM: the score reward dropped",
    ),
    # ---------------------------------------------------------------- one per term
    _break(
        "overlong-slope",
        "writing_rl/terms/builtin.py",
        "(start - n) / self.buffer",
        "(start - n) / self.max_length",
        "tests/test_terms.py",
        "overlong: not -1 at max_length",
    ),
    _break(
        "length-above-band-free",
        "writing_rl/terms/builtin.py",
        "return -min(1.0, (ratio - self.max_ratio) / self.max_ratio)",
        "return 0.0",
        "tests/test_terms.py",
        "length: too long costs nothing",
    ),
    _break(
        "repetition-reads-reasoning",
        "writing_rl/terms/builtin.py",
        "return -repeated_share(units(answer_of(sample)), self.n)",
        "return -repeated_share(units(sample.response), self.n)",
        "tests/test_terms.py",
        "repetition: the reasoning block counted",
    ),
    _break(
        "format-tags-free",
        "writing_rl/terms/builtin.py",
        "return -1.0 if _TEMPLATE_TAG.search(text) else 0.0",
        "return 0.0",
        "tests/test_terms.py",
        "format: chat-template tags written as text cost nothing",
    ),
    _break(
        "language-never-wrong",
        "writing_rl/terms/builtin.py",
        "return 0.0 if identify(answer, tuple(self.languages)) == expected else -1.0",
        "return 0.0",
        "tests/test_terms.py",
        "language: an answer in the wrong language costs nothing",
    ),
    _break(
        "terms-failed-keeps-bonus",
        "writing_rl/terms/shaping.py",
        "min(score, failure_score) + sum(min(0.0, w) for w in weighted.values())",
        "min(score, failure_score) + sum(weighted.values())",
        "tests/test_terms.py",
        "a term of your own pays a failed sample its bonus",
    ),
    # ---------------------------------------------------------------- one per parser
    _break(
        "verdict-conflict-read",
        "writing_rl/protocols/pairwise.py",
        "    if len(found) == 1:\n        return found.pop()",
        "    if found:\n        return found.pop()",
        ("tests/test_parsing.py", "tests/test_red_team_parsing.py"),
        "conflicting verdicts read as one of them",
    ),
    _break(
        "json-score-conflict-read",
        "writing_rl/protocols/pairwise.py",
        "return Unreadable(f'conflicting \"{key}\" values {values[:4]} in one reply')",
        "return _number_in_range(values[-1], key, low, high)",
        ("tests/test_parsing.py", "tests/test_red_team_parsing.py"),
        "a critic's conflicting JSON scores read as the last",
    ),
    _break(
        "rubric-scores-conflict-read",
        "writing_rl/protocols/rubric.py",
        "return Unreadable('conflicting \"scores\" objects in one reply')",
        "return _scores_by_id(found[-1], count)",
        RUBRIC + "test_a_reply_that_misses_repeats_or_conflicts_is_unreadable",
        "conflicting rubric scores read as the last object",
    ),
    _break(
        "gqm-scores-disagree-with-ranking",
        "writing_rl/protocols/gqm_reply.py",
        "            reason = check_consistent(ranking, scores)\n",
        "            reason = None\n",
        ("tests/test_gqm.py", "tests/test_red_team_parsing.py"),
        "a GQM ranking and scores that disagree are read",
    ),
    _break(
        "reasoning-close-anywhere",
        "writing_rl/protocols/text.py",
        "    if close and THINK_OPEN not in reply[: close.start()]:",
        "    if close:",
        "tests/test_parsing.py",
        "a </think> after a quoted <think> ends the reasoning",
    ),
    # ---------------------------------------------------------------- one per limiter
    _break(
        "aimd-keeps-its-slots",
        "writing_rl/judge/limiter.py",
        "min(self.limit * self.decrease, self.slots - 1.0)",
        "min(self.limit * self.decrease, float(self.slots))",
        "tests/test_judge_limiter.py::test_aimd_rules",
        "AIMD: a rate-limit signal on a small limit takes no slot away",
    ),
    _break(
        "upstream-shared-across-keys",
        "writing_rl/judge/upstream.py",
        'key = (group, url, hashlib.sha256((api_key or "").encode()).hexdigest())',
        'key = (group, url, "")',
        "tests/test_judge_upstream.py::test_nothing_is_shared_across_event_loops_or_api_keys",
        "per-endpoint limit shared by two API keys",
    ),
    _break(
        "shadow-shares-training-limit",
        "writing_rl/reward_loop/shadow/scoring.py",
        'upstream_group="shadow"',
        'upstream_group=""',
        "tests/test_shadow.py::test_the_shadow_client_never_shares_the_training_judges_limit",
        "the shadow judge's calls take the training judge's room at a shared endpoint",
    ),
    _break(
        "shadow-drift-not-latched",
        "writing_rl/reward_loop/shadow/watch.py",
        "drifting = self.reading.drifting or self.streak >= self.looks",
        "drifting = self.streak >= self.looks",
        "tests/test_shadow.py::test_drift_takes_looks_in_a_row_and_once_seen_stays",
        "drift seen once is forgotten at the next quiet look",
    ),
    # ---------------------------------------------------------------- the gaps of issue 44, item 8
    _break(
        "gloo-sends-no-tensors",
        "writing_rl/cpu_backend/checkpoint_engine.py",
        "split_weight_chunks(_contiguous(weights), self.bucket_size)",
        "split_weight_chunks(_contiguous([]), self.bucket_size)",
        "tests/test_trainer_cpu.py::test_under_the_separate_async_trainer_the_rollout_gets_each_version_over_gloo",
        "the gloo checkpoint engine sends the rollout no tensors (it keeps its first weights)",
    ),
    _break(
        "sample-log-pairs-the-previous-response",
        "writing_rl/reward_loop/sample_log.py",
        "record.update(prompt=prompt, response=response)",
        'record.update(prompt=prompt, response=self.__dict__.get("last", response)); self.last = response',
        "tests/test_trainer_cpu.py::test_writing_rl_advances_its_curriculum_and_a_resumed_run_starts_from_the_saved_levels",
        "each logged reward beside another rollout's response (the step's rewards unchanged)",
    ),
    _break(
        "probe-position-bias-not-flagged",
        "writing_rl/tools/probe/summary.py",
        '"flagged": [name for name, share in checks if share["status"] == FLAGGED],',
        '"flagged": [name for name, share in checks if share["status"] == FLAGGED and name != "position-bias"],',
        "tests/test_probe_judge.py",
        "probe-judge: position bias left out of the flagged list (exit 0)",
    ),
    _break(
        "worker-skips-unknown-fn-options",
        "writing_rl/reward_loop/scoring.py",
        "        self.reward_fn.check_options(self.settings.on_parse_error)  # stops the worker at start",
        "        __import__('dataclasses').replace(self.reward_fn, reward_kwargs={k: v for k, v in "
        "self.reward_fn.reward_kwargs.items() if k in self.reward_fn.method.options.__dataclass_fields__})"
        ".check_options(self.settings.on_parse_error)  # stops the worker at start",
        "tests/test_fn_options.py::test_a_reward_worker_refuses_a_bad_option_when_it_starts",
        "a reward worker starts with a misspelt reward fn option (check-config still refuses it)",
    ),
    _break(
        "hedge-takes-the-other-reply",
        "writing_rl/judge/hedge.py",
        "answer = self._settle(done, owners, send, drop, replace)",
        "answer = first, await primary",
        "tests/test_judge_hedge.py::test_both_copies_answer_the_first_reply_is_the_reward_and_the_other_is_never_read",
        "a hedged request's first reply ignored for the other copy's",
    ),
    _break(
        "hedge-never-sees-an-idle-client",
        "writing_rl/judge/http.py",
        "return not any(room.waiters or room.urgent for room in rooms)",
        "return False",
        "tests/test_judge_hedge.py::test_a_held_request_is_hedged_once_no_request_waits_for_room",
        "a step's last slow request waits hedge_after x the percentile though no request waits for room",
    ),
    _break(
        "429-bursts-counted-in-requests",
        "tests/judge_server.py",
        "        if clock is None:\n            return (index",
        "        if True:\n            return (index",
        "tests/test_judge_faults.py::test_with_a_clock_a_429_burst_is_a_window_of_time_however_many_requests_come",
        "bench/faults.py's 429 bursts last as many requests as a client backing off takes time to send",
    ),
    _break(
        "killed-judge-forgets-its-counts",
        "bench/faults.py",
        "                self._previous_lives = self._occupancy()",
        "                self._previous_lives = Occupancy(down_s=self._previous_lives.down_s)",
        "tests/test_judge_occupancy.py::test_a_killed_judge_keeps_what_it_counted_and_counts_its_time_down",
        "the fault bench's judge occupancy drops what a killed judge answered: a kill condition's judges look idle",
    ),
    _break(
        "judge-start-up-counted-as-up",
        "bench/faults.py",
        "            super().start()  # (down until it serves again: its start-up is time down)\n"
        "            if self._down_at is not None:\n"
        "                self._previous_lives.down_s += time.monotonic() - self._down_at\n"
        "                self._down_at = None\n",
        "            if self._down_at is not None:\n"
        "                self._previous_lives.down_s += time.monotonic() - self._down_at\n"
        "                self._down_at = None\n"
        "            super().start()\n",
        "tests/test_judge_occupancy.py::"
        "test_a_judge_is_down_until_it_serves_again_and_killed_even_when_its_counters_cannot_be_read",
        "a restarting judge's slots count as up while its process starts: the judges look less busy than they were",
    ),
    _break(
        "retry-waits-behind-fresh-requests",
        "writing_rl/judge/limiter.py",
        "waiter = (self.urgent or self.waiters).popleft()",
        "waiter = (self.waiters or self.urgent).popleft()",
        (
            "tests/test_judge_faults.py::test_a_retry_waits_for_room_before_every_fresh_request",
            "tests/test_judge_faults.py::test_a_retry_goes_before_the_fresh_requests_queued_in_the_client",
        ),
        "a retry waits for room behind every fresh request (a sample's retries set the step's pace)",
    ),
    # ---------------------------------------------------------------- issue 44: a policy that cannot learn
    _break(
        "brpo-advantage-sign-flipped",
        "writing_rl/reward_loop/advantage.py",
        "advantages = scores * response_mask",
        "advantages = -scores * response_mask",
        LEARNING + "test_brpo_policy_learns_the_judges_taste_measured_apart_from_the_judge",
        "BRPO's advantage has the reward's sign reversed (the policy learns what the judge dislikes)",
    ),
    _break(
        "brpo-rewards-misaligned",
        "reward_fns/brpo.py",
        "            )\n    return results\n",
        "            )\n    return results[1:] + results[:1]\n",
        LEARNING + "test_brpo_policy_learns_the_judges_taste_measured_apart_from_the_judge",
        "each rollout of a BRPO group paid its neighbour's reward (the group's rewards unchanged)",
    ),
    _break(
        "learn-preset-frozen",
        "scripts/tiny_train.py",
        '"actor_rollout_ref.actor.optim.lr=3e-2",',
        '"actor_rollout_ref.actor.optim.lr=0.0",',
        LEARNING + "test_brpo_policy_learns_the_judges_taste_measured_apart_from_the_judge",
        "LEARN=1's optimizer moves nothing (learning rate 0)",
    ),
    _break(
        "curriculum-never-advances",
        "reward_fns/pairwise.py",
        'await curriculum.report(uid, result["win"] == 1.0, how.advance_threshold)',
        "await curriculum.report(uid, False, how.advance_threshold)",
        LEARNING + "test_writing_rl_policy_learns_and_its_curriculum_climbs",
        "Writing-RL's curriculum never moves a prompt up, however often the policy wins",
    ),
    _break(
        "watch-not-logged",
        "writing_rl/reward_loop/scoring.py",
        "info = {**info, **measured}",
        "info = dict(info)",
        TERMS_LOOP + "test_a_watch_is_logged_and_never_paid_even_when_it_fails",
        "reward.reward_kwargs.watch measures nothing into the extra info",
    ),
    _break(
        "watch-failure-logged-as-a-value",
        "writing_rl/terms/watch.py",
        "failed=math.nan",
        "failed=-1.0",
        TERMS_LOOP + "test_a_watch_is_logged_and_never_paid_even_when_it_fails",
        "a failed watch logs a number as if it had measured one (and skews its mean)",
    ),
    _break(
        "curriculum-level-not-reported",
        "writing_rl/reward_loop/health/metrics.py",
        'metrics[f"{key}_mean"] = float(values.mean())\n            metrics[f"{key}_max"]',
        'metrics[f"{key}_mean"] = 0.0\n            metrics[f"{key}_max"]',
        "tests/test_health.py::test_watches_and_the_curriculum_level_reach_the_step_metrics",
        "a method's own <area>/<name> keys (the curriculum's level) do not reach the tracker as their mean",
    ),
    # ---------------------------------------------------------------- judge health under every trainer (issue 45)
    _break(
        "legacy-judge-health-not-reported",
        "writing_rl/reward_loop/health/entry/trainers.py",
        'output.meta_info["metrics"].update(self._step_health(batch))',
        "self._step_health(batch)",
        ENTRY + "test_the_legacy_trainer_adds_judge_health_to_the_actor_update_metrics_it_logs",
        "the legacy trainer's steps carry no judge/ metrics to the tracker",
    ),
    _break(
        "separate-trainers-judge-health-not-reported",
        "writing_rl/reward_loop/health/entry/trainers.py",
        "self.metrics.update(self._step_health(batch))",
        "self._step_health(batch)",
        ENTRY + "test_the_separate_trainers_add_judge_health_where_they_collect_a_step_metrics",
        "fully-async and one-step-off steps carry no judge/ metrics to the tracker",
    ),
    _break(
        "fully-async-step-filed-under-the-next",
        "writing_rl/reward_loop/health/entry/fully_async.py",
        "        self._cycle_end = rollout_reset_timing_raw  # its last step is not in the aggregate yet",
        "        super()._fit_log_aggregated_training_metrics(rollout_reset_timing_raw)",
        ENTRY + "test_fully_async_metrics_of_each_step_are_filed_under_that_step",
        "fully-async logs a cycle's metrics before its last step is in them (verl's order: step 1 under step 2)",
    ),
    _break(
        "tiny-train-step-line-any-record",
        "scripts/tiny_train.py",
        'STEP_LINE = re.compile(r"\\btraining/global_step:(\\d+)\\b")',
        'STEP_LINE = re.compile(r"\\bstep:(\\d+) - ")',
        TRACKER,
        "tiny_train prints a step as finished for each tracker record (fully-async: step 2 four times)",
    ),
    # ---------------------------------------------------------------- verl's SFT trainer on the CPU
    _break(
        "tiny-sft-learning-rate-zero",
        "scripts/tiny_sft.py",
        'f"optim.lr={lr}",',
        '"optim.lr=0",',
        "tests/test_genrm_sft_cpu.py::test_verls_sft_trainer_on_the_cpu_teaches_the_tiny_genrm_to_answer_in_its_format",
        "the tiny GenRM SFT trains at learning rate 0 (verl still exits 0 and saves a model)",
    ),
    # ---------------------------------------------------------------- a Ray job on a cluster (issue 45)
    _break(
        "cluster-demand-one-cpu-per-gpu",
        "writing_rl/tools/shared/cluster/demand.py",
        "TRAINER_CPUS, SERVER_CPUS = 3, 2  # CPUs per GPU bundle",
        "TRAINER_CPUS, SERVER_CPUS = 1, 1  # CPUs per GPU bundle",
        (
            CLUSTER + "test_a_group_that_no_node_can_hold_is_refused_and_the_message_names_both_sides",
            CLUSTER + "test_the_demand_follows_verls_resource_pools",
        ),
        "the job's demand counts one CPU per GPU, not verl's bundles (3 for the trainer's pools)",
    ),
    _break(
        "cluster-env-not-forwarded",
        "writing_rl/tools/shared/cluster/job_env.py",
        '            spec["env_vars"] = dict(self.env_vars)',
        "            pass",
        CLUSTER + "test_the_judge_key_goes_to_the_job_only_when_asked",
        "the job's runtime environment carries none of the forwarded variables",
    ),
    _break(
        "cluster-keeps-ray-init-resources",
        "writing_rl/tools/shared/cluster/submit.py",
        '    return [f"ray_kwargs.ray_init.{key}=null" for key in RAY_OWN if ray_init.get(key) is not None]',
        "    return []",
        CLUSTER
        + "test_joining_a_cluster_drops_the_cpu_backends_own_resources_and_the_overlays_come_from_the_jobs_copy",
        "a job keeps the CPU backend's ray_init num_cpus/num_gpus, which Ray refuses when joining a cluster",
    ),
    _break(
        "cluster-upload-unchecked",
        "writing_rl/tools/shared/cluster/job_env.py",
        "    if total > limit_mib * 2**20:",
        "    if False:",
        CLUSTER + "test_the_upload_leaves_out_what_ray_leaves_out_and_refuses_a_large_one",
        "a working directory of any size is uploaded",
    ),
    _break(
        "preflight-never-asks-the-cluster",
        "writing_rl/tools/preflight/runner.py",
        "        if not args.no_cluster and cluster_address():",
        "        if False:",
        RAY_JOB + "test_the_preflight_refuses_a_job_the_cluster_can_never_schedule_and_reports_the_rest_too",
        "the preflight never asks the cluster: a job it can never schedule is submitted and waits",
    ),
    _break(
        "cluster-tracker-folder-unchecked",
        "writing_rl/tools/shared/cluster/probe.py",
        '    if with_paths and tracker_file.startswith("/"):',
        "    if False:",
        RAY_JOB + "test_the_preflight_refuses_a_job_the_cluster_can_never_schedule_and_reports_the_rest_too",
        "the folder of VERL_FILE_LOGGER_PATH is not checked on the cluster: verl's tracker stops the job at start",
    ),
    _break(
        "cluster-token-not-sent",
        "writing_rl/tools/shared/cluster/client.py",
        '        headers = {"Authorization": f"Bearer {token}"}',
        "        headers = None",
        RAY_JOB + "test_the_preflight_refuses_a_job_the_cluster_can_never_schedule_and_reports_the_rest_too",
        "the job server's token is not sent: a cluster with token authentication refuses every job",
    ),
    # ---------------------------------------------------------------- config errors and the preflight (issue 45)
    _break(
        "hydra-error-untranslated",
        "writing_rl/offline/compose.py",
        "refused.append(_explain(err, config_name, kept))",
        "refused.append(str(err).strip().splitlines()[0])",
        (
            "tests/test_cli_errors.py::test_a_hydra_mistake_is_one_line_naming_the_fix",
            "tests/test_preflight.py::test_mistyped_overrides_are_named_and_every_other_check_still_runs",
        ),
        "a misspelt key without '+' gets Hydra's 'Could not override', not the key meant",
    ),
    _break(
        "refused-override-drops-the-rest",
        "writing_rl/offline/compose.py",
        "                kept.remove(bad)",
        "                kept.clear()",
        (
            "tests/test_cli_errors.py::test_every_override_hydra_refuses_is_named_at_once",
            "tests/test_preflight.py::test_mistyped_overrides_are_named_and_every_other_check_still_runs",
        ),
        "after a refused override the config is composed without any (the next misspelt key and the paths unseen)",
    ),
    _break(
        "preflight-stops-at-config-problem",
        "writing_rl/tools/preflight/runner.py",
        "    check_config_stages(config, report)\n    reward_fn =",
        "    check_config_stages(config, report)\n    if report.problems:\n        return report\n    reward_fn =",
        (
            "tests/test_preflight.py::test_mistyped_overrides_are_named_and_every_other_check_still_runs",
            "tests/test_preflight.py::test_a_problem_in_each_config_stage_is_reported_and_the_judge_still_checked",
        ),
        "a config problem hides the path, data and judge checks",
    ),
    _break(
        "judge-unchecked-after-a-reward-kwargs-problem",
        "writing_rl/tools/preflight/runner.py",
        "        return ManagerConfig.from_verl(OmegaConf.create(plain), address)",
        "        raise",
        "tests/test_preflight.py::test_a_problem_in_each_config_stage_is_reported_and_the_judge_still_checked",
        "a refused reward.reward_kwargs key keeps the judge endpoint from being checked",
    ),
    _break(
        "dry-run-hydra-error-untranslated",
        "scripts/_launch.sh",
        '      preflight "${args[@]}"\n      printf \'%s\\n\' "$hydra_output" >&2',
        "      printf '%s\\n' \"$hydra_output\" >&2",
        "tests/test_overlay_and_scripts.py::"
        "test_script_dry_run_answers_a_misspelt_key_with_the_key_meant_and_checks_the_rest",
        "DRY_RUN shows Hydra's error for a misspelt key, not the key meant",
    ),
    _break(
        "replica-always-vllm",
        "writing_rl/tools/preflight/config_checks.py",
        "            name, unit = _engine(engine)",
        '            name, unit = "vLLM", "GPU(s)"',
        "tests/test_preflight.py::test_the_gpu_layout_names_the_rollout_engine_configured",
        "the preflight calls every rollout vLLM (the CPU backend's transformers rollout too)",
    ),
    _break(
        "progress-bar-before-input-check",
        "writing_rl/data/driver.py",
        "    check_input(settings.input_path)\n    plan = plan_splits(settings)",
        "    plan = plan_splits(settings)",
        "tests/test_build_driver.py::test_an_input_it_cannot_read_is_one_error_line_before_any_progress_bar",
        "build_parquet draws an empty progress bar before the error for a missing input",
    ),
    # ---------------------------------------------------------------- issue 46: the group path's speed
    _break(
        "group-path-3ms-per-sample",
        "writing_rl/curriculum/handle.py",
        '        """The level every rollout of group ``uid`` is judged at (pinned by the first to ask)."""\n',
        '        """The level every rollout of group ``uid`` is judged at (pinned by the first to ask)."""\n'
        "        busy_until = __import__('time').perf_counter() + 0.003\n"
        "        while __import__('time').perf_counter() < busy_until:\n"
        "            pass\n",
        "tests/test_speed_guard.py::test_the_group_path_keeps_its_speed_targets",
        "every Writing-RL rollout costs its reward worker 3 ms more CPU",
    ),
    _break(
        "group-pins-never-reused",
        "writing_rl/curriculum/groups.py",
        "        if known is None or known[1] < now:",
        "        if True:",
        "tests/test_curriculum.py::test_a_worker_asks_for_a_groups_level_once_and_forgets_a_failed_question",
        "every rollout of a group asks the scheduler for its level",
    ),
    _break(
        "group-pins-keep-the-finished-task",
        "writing_rl/curriculum/groups.py",
        "            self.pinned[uid] = (answer.result(), known[1])",
        "            pass",
        "tests/test_curriculum.py::test_a_worker_asks_for_a_groups_level_once_and_forgets_a_failed_question",
        "a worker's pins keep each group's finished question (its task) instead of the level: the workers' RSS grows",
    ),
    _break(
        "actor-class-made-at-every-lookup",
        "writing_rl/reward_loop/actors.py",
        "@functools.cache\ndef remote_class",
        "def remote_class",
        "tests/test_curriculum.py::test_an_actor_class_is_made_once_per_process",
        "each lookup of the collector or scheduler makes a new Ray actor class: the workers' RSS grows",
    ),
    _break(
        "merged-reports-count-one",
        "writing_rl/curriculum/groups.py",
        "reported + (count[0] if count else 1))",
        "1)",
        "tests/test_curriculum.py::test_a_batchs_reports_of_one_group_go_as_one_and_count_every_rollout",
        "a batch's reports of one group count as one rollout",
    ),
    # ---------------------------------------------------------------- issue 47: methods as plug-ins, tournaments
    _break(
        "method-extras-never-started",
        "writing_rl/reward_loop/fn_extras.py",
        "for extra in asked if extra.name in self.accepted}",
        "for extra in asked if False}",
        PLUGINS + "test_a_method_asks_for_a_service_and_the_loop_starts_it_and_hands_it_over",
        "the reward loop never starts the services a method asks for",
    ),
    _break(
        "unregistered-method-ignored",
        "writing_rl/reward_loop/reward_fn.py",
        'if method is None and isinstance(getattr(unwrapped, "__globals__", {}).get("METHOD"), RewardMethod):',
        "if False:",
        PLUGINS + "test_a_module_that_declares_a_method_but_never_registers_it_is_told_how",
        "a METHOD never registered is silently ignored (its loss and options unknown)",
    ),
    _break(
        "dropped-groups-reach-no-listener",
        "writing_rl/reward_loop/dropped_groups.py",
        "return [name for name in ray.util.list_named_actors() if",
        "return [] and [name for name in ray.util.list_named_actors() if",
        "tests/test_health_tracker.py::"
        "test_groups_verl_evicts_untrained_report_their_judge_calls_and_take_their_curriculum_move_back",
        "groups verl drops untrained keep the curriculum moves they made",
    ),
    _break(
        "tournament-unreadable-game-left-out",
        "reward_fns/tournament.py",
        "                    blame.counted.setdefault(player, []).append((opponent, blame.fallback))\n",
        "",
        (
            TOURNAMENT + "test_making_any_of_its_games_unreadable_never_pays_an_answer_more_than_losing_them",
            TOURNAMENT + "test_an_answer_that_breaks_every_reading_is_blamed_and_costs_the_others_nothing",
        ),
        "a game whose reply cannot be read is left out for the answer that broke it: failing a loss pays more",
    ),
    _break(
        "tournament-judge-error-unflagged",
        "reward_fns/tournament.py",
        "                blame.judge_error.add(player)",
        "                pass",
        TOURNAMENT + "test_a_game_whose_call_failed_counts_as_a_tie_for_both_flagged_so_on_judge_error_decides",
        "a game whose judge call failed is not flagged judge_error: on_judge_error never applies to it",
    ),
    _break(
        "tournament-verdict-read-for-the-first-of-the-pair",
        "reward_fns/tournament.py",
        "        second = pair[1] if first == pair[0] else pair[0]",
        "        first, second = pair",
        TOURNAMENT + "test_a_verdict_that_names_no_answer_falls_on_the_position_not_on_an_answers_place_in_the_group",
        "every game shows the answer that sorts first first: a verdict naming no answer falls on it",
    ),
    _break(
        "tournament-games-depend-on-arrival-order",
        "reward_fns/tournament.py",
        "players = sorted({a for a in answers if a is not None})",
        "players = list(dict.fromkeys(a for a in answers if a is not None))",
        TOURNAMENT + "test_k_opponents_meets_k_seeded_siblings_and_is_reproducible_in_any_order",
        "the same group gets other games when its rollouts arrive in another order",
    ),
    _break(
        "tournament-one-order-always-first",
        "reward_fns/tournament.py",
        "(self.rng.choice(pair),)",
        "(pair[0],)",
        TOURNAMENT + "test_one_order_shows_each_game_once_with_the_first_slot_drawn_so_a_bias_averages_out",
        "orders=1 always shows the same answer first: the judge's position bias decides",
    ),
    _break(
        "tournament-k-opponents-unbalanced",
        "writing_rl/tournament/schedules.py",
        " + [(cycle[-1], cycle[0])]",
        "",
        TOURNAMENT_MATH + "test_k_opponents_gives_everyone_k_or_k_plus_1_games_and_no_pair_twice",
        "k_opponents: with n and k odd, one answer plays k-1 games",
    ),
    _break(
        "tournament-swiss-rematch",
        "writing_rl/tournament/schedules.py",
        "if frozenset((first, pool[idx])) in played:",
        "if False:",
        TOURNAMENT_MATH + "test_a_swiss_round_avoids_a_rematch_whenever_one_can_be_avoided",
        "swiss rounds repeat games they could avoid",
    ),
    _break(
        "tournament-bracket-loser-goes-on",
        "writing_rl/tournament/schedules.py",
        "return first if mean > 0.5 else second",
        "return second if mean > 0.5 else first",
        (
            TOURNAMENT_MATH + "test_a_bracket_plays_n_minus_1_games_everyone_once_a_round_and_the_strongest_wins",
            TOURNAMENT + "test_single_elimination_plays_n_minus_one_games_and_the_best_answer_wins_every_round",
        ),
        "a single-elimination bracket sends each game's loser on",
    ),
    # ---------------------------------------------------------------- issue 55: the pointwise method
    _break(
        "pointwise-unreadable-reply-compared",
        "reward_fns/pointwise.py",
        "readable = [score_of[a] for a in answers if a is not None and isinstance(score_of[a], float)]",
        "readable = [score_of[a] if isinstance(score_of[a], float) else 10.0 for a in answers if a is not None]",
        (
            "tests/test_pointwise.py::test_an_unreadable_reply_pays_the_loss_or_a_tie_never_more",
            "tests/test_pointwise.py::test_streaming_mode_one_rollout_per_call_on_a_random_worker",
        ),
        "a rollout whose score cannot be read still counts in its siblings' win rates, as a 10",
    ),
    _break(
        "tournament-copeland-counts-results",
        "writing_rl/tournament/aggregation.py",
        "for (a, b), outcome in pair_outcomes(n, results).items():",
        "for a, b, outcome in checked(n, results):",
        TOURNAMENT_MATH + "test_copeland_counts_each_opponent_once_by_the_net_of_their_results",
        "copeland counts results, not opponents",
    ),
    _break(
        "tournament-bt-prior-dropped",
        "writing_rl/tournament/aggregation.py",
        "    if prior <= 0:\n",
        "    prior = 1e-6\n    if prior <= 0:\n",
        TOURNAMENT_MATH + "test_the_prior_keeps_an_unbeaten_player_finite_and_below_1",
        "bradley_terry without its prior: an unbeaten answer is paid about 1",
    ),
    _break(
        "ensemble-split-pays-a-win",
        "writing_rl/protocols/comparison.py",
        '"tie": ((frozenset(OUTCOMES), "tie"), (frozenset(VERDICTS), "C")),',
        '"tie": ((frozenset(OUTCOMES), "win"), (frozenset(VERDICTS), "C")),',
        ENSEMBLE + "test_a_split_counts_as_the_declared_rule_says_never_more_than_a_tie",
        "a judgment whose ensemble split pays a win",
    ),
    _break(
        "ensemble-unreadable-judge-left-out",
        "writing_rl/judge/votes.py",
        "    if why:\n        return Reading(_unreadable(why, len(answers)), unread)",
        "    if False:\n        return Reading(_unreadable(why, len(answers)), unread)",
        ENSEMBLE + "test_one_judge_unreadable_makes_the_judgment_unreadable_so_a_text_cannot_silence_the_strict_judge",
        "a judge a text makes unreadable is left out: the lenient judges decide that text's judgment",
    ),
    _break(
        "preflight-pings-one-judge-of-an-ensemble",
        "writing_rl/tools/preflight/judge_checks.py",
        'judges = judge.ensemble.judges(judge, "reward.reward_kwargs.judge") or [("", judge)]',
        'judges = [("", judge)]',
        "tests/test_preflight.py::test_every_judge_of_an_ensemble_is_pinged",
        "the preflight pings one judge of an ensemble: a member that serves no such model starts the run",
    ),
    _break(
        "ensemble-one-judge-fails-all",
        "writing_rl/judge/ensemble.py",
        "            return MemberAnswer(name, error=err)",
        "            raise",
        ENSEMBLE + "test_one_judge_failing_leaves_the_others_to_decide_and_is_counted",
        "one ensemble judge failing fails the whole judgment",
    ),
    _break(
        "judge-session-outlives-its-loop",
        "writing_rl/judge/session.py",
        "        if self._session is None or self._session.closed or self._loop is not loop:",
        "        if self._session is None or self._session.closed:",
        "tests/test_judge_http.py::test_a_client_survives_being_used_from_a_new_event_loop",
        "a judge client keeps the aiohttp session of a closed event loop",
    ),
    _break(
        "bounds-exclusive-inclusive",
        "writing_rl/settings.py",
        '"above": (">", ">", operator.gt),',
        '"above": (">", ">", operator.ge),',
        "tests/test_config_bounds.py::test_a_setting_out_of_range_names_its_full_key_and_its_bound",
        "an exclusive bound (option(above=...)) lets its own value through: judge.timeout_s=0 starts a run",
    ),
    # ---------------------------------------------------------------- issue 53: real models on a laptop
    _break(
        "smollm2-end-of-turn-left-wrong",
        "writing_rl/models/packaged.py",
        "    tokenizer.eos_token = tokenizer.pad_token = model.end_of_turn\n",
        "",
        "tests/test_real_model.py::test_the_conversion_puts_the_end_of_turn_right_and_checks_the_weights",
        "the converted SmolLM2 keeps the GGUF's eos (<|im_start|>): verl's rollouts and SFT targets end on the wrong token",
    ),
    _break(
        "probe-unreadable-counted-as-compared",
        "writing_rl/tools/probe/summary.py",
        'COMPARED = (*DECIDED, "refused")',
        'COMPARED = (*DECIDED, "refused", "unreadable")',
        "tests/test_probe_judge.py::test_a_judge_whose_replies_are_never_readable_fails_with_exit_4",
        "probe-judge counts an unreadable reply as a comparison the probe lost: a judge nobody can read passes",
    ),
    _break(
        "degraded-pairs-labelled-backwards",
        "data_prep/degraded_pairs.py",
        '            "chosen": answer["answer"],\n            "rejected": copy,',
        '            "chosen": copy,\n            "rejected": answer["answer"],',
        "tests/test_degrade.py::test_every_pair_chooses_the_original_answer_over_a_differing_copy",
        "the GenRM's real-text pairs prefer the degraded copy to the original",
    ),
    _break(
        "degraded-critique-blames-the-original",
        "data_prep/degraded_pairs.py",
        '{"critique": critique(name, "B"), "critique_swapped": critique(name, "A")}',
        '{"critique": critique(name, "A"), "critique_swapped": critique(name, "B")}',
        "tests/test_degrade.py::test_pref_sft_reads_the_pairs_as_they_are_and_writes_both_orders",
        "the GenRM's SFT replies name the original answer as the damaged one, then prefer it",
    ),
    _break(
        "quickstart-position-bias-inverted",
        "writing_rl/tools/quickstart_report.py",
        'return {first, second} == {"A", "B"} or first == second == "C"',
        "return first == second",
        "tests/test_quickstart_report.py::test_reading_lines_count_readable_replies_and_the_position_bias",
        "the quickstart calls a judge that follows the position one that keeps its choice",
    ),
    _break(
        "hf-engine-no-fill-wait",
        "writing_rl/genrm/hf_engine.py",
        "self._batches = BatchQueue(self._joins, self.run_batch_or_split, fill_wait_s=FILL_WAIT_S)",
        "self._batches = BatchQueue(self._joins, self.run_batch_or_split)",
        "tests/test_pool.py::test_a_burst_reaching_an_idle_queue_is_answered_together_not_its_first_request_alone",
        "a burst's first request is generated alone and the rest wait for it (serve-judge 0.83x plain generate)",
    ),
    _break(
        "quickstart-reads-cut-replies",
        "writing_rl/tools/quickstart_report.py",
        'if call.get("reply") is None or call.get("finish_reason") in UNREAD_FINISH:',
        'if call.get("reply") is None:',
        "tests/test_quickstart_report.py::test_a_reply_cut_at_max_tokens_is_not_read_even_when_it_holds_a_verdict",
        "the quickstart counts a reply cut at max_tokens as readable, which the reward pays as unreadable",
    ),
    # Issue 56: the judge benchmarks, each scored as its own code scores it.
    _break(
        "rewardbench-ties-accuracy-not-strict",
        "writing_rl/evaluation/rewardbench_sets.py",
        "stats[kind][prompt] = (margin > 0, spread, margin)",
        "stats[kind][prompt] = (margin >= 0, spread, margin)",
        (
            "tests/test_rewardbench_official.py::test_the_ties_score_is_process_single_model_s",
            "tests/test_eval_rewardbench.py::test_a_rated_genrm_rates_each_answer_alone_and_scores_as_reward_bench",
        ),
        "a Ties row whose correct and incorrect answers are rated equal counts as accurate",
    ),
    _break(
        "rewardbench-rated-top-tie-full-credit",
        "writing_rl/evaluation/rewardbench_sets.py",
        "return (0 in best) / len(best)",
        "return float(0 in best)",
        (
            "tests/test_rewardbench_official.py::test_a_v2_prompt_scores_as_run_generative_v2_scores_it",
            "tests/test_eval_rewardbench.py::test_a_rated_genrm_rates_each_answer_alone_and_scores_as_reward_bench",
        ),
        "a chosen answer tied with others for the best rating scores 1, not 1/k",
    ),
    _break(
        "rewardbench-ties-left-out-of-overall",
        "writing_rl/evaluation/rewardbench.py",
        'accuracy = {subset: s["mean"] for subset, s in subsets.items() if s["count"]',
        'accuracy = {subset: s["mean"] for subset, s in subsets.items() if subset != TIES and s["count"]',
        (
            "tests/test_rewardbench_official.py::test_a_v2_run_averages_its_six_subsets_as_the_official_code_scores_them",
            "tests/test_eval_rewardbench.py::test_v2_best_of_4_from_parquet_with_ties_rated_and_in_the_overall",
        ),
        "v2's overall averages five subsets, Ties left out",
    ),
    _break(
        "rmbench-ties-count-as-correct",
        "writing_rl/evaluation/rmbench.py",
        "c > r)",
        "c >= r)",
        RMBENCH + "test_the_scoring_matches_rm_benchs_compute_accuracy_over_random_draws",
        "equal ratings count as a correct pair, where RM-Bench's strict > counts them wrong",
    ),
    _break(
        "rmbench-hard-easy-swapped",
        "writing_rl/evaluation/rmbench.py",
        "np.sum(np.triu(acc, 1)) / 3, np.mean(np.diag(acc)), np.sum(np.tril(acc, -1)) / 3",
        "np.sum(np.tril(acc, -1)) / 3, np.mean(np.diag(acc)), np.sum(np.triu(acc, 1)) / 3",
        (
            RMBENCH + "test_the_scoring_matches_rm_benchs_compute_accuracy_over_random_draws",
            RMBENCH + "test_a_pairwise_genrm_on_rm_benchs_own_file",
        ),
        "hard reads the lower triangle (chosen fancier) and easy the upper",
    ),
    _break(
        "rmbench-pairwise-tie-wins",
        "writing_rl/evaluation/rmbench.py",
        "int(v > 0)",
        "int(v >= 0)",
        (
            RMBENCH + "test_the_pairwise_rule_and_the_bootstrap",
            RMBENCH + "test_position_bias_and_replies_without_a_verdict",
        ),
        "a pair the GenRM splits (a win and a loss, or two ties) counts as the chosen answer winning",
    ),
    _break(
        "judgebench-game2-unflipped",
        "writing_rl/evaluation/judgebench.py",
        "    seen = [decisions[0], *(flip(d) for d in decisions[1:])]\n",
        "    seen = list(decisions)\n",
        (
            JUDGEBENCH + "test_scores_and_tallies_match_the_official_metric_on_random_decisions",
            JUDGEBENCH + "test_the_benchmarks_published_numbers_come_back_from_its_own_output_file",
        ),
        "game 2's decision is scored in its own order, not flipped as flip_judgment does",
    ),
    _break(
        "judgebench-several-labels-last",
        "writing_rl/evaluation/judgebench.py",
        "        return distinct.pop(), False\n    return None, False\n",
        "        return distinct.pop(), False\n    return ARENA_LABEL.findall(text)[-1], False\n",
        (
            JUDGEBENCH + "test_the_arena_hard_reader_matches_get_score_on_random_replies",
            JUDGEBENCH + "test_arena_hard_reader_asks_once_more_for_a_label_and_resumes",
        ),
        "a reply with several distinct [[...]] labels reads its last one (Arena-Hard v2's rule), not None as get_score",
    ),
    _break(
        "judgebench-no-second-attempt",
        "writing_rl/evaluation/judgebench.py",
        "j.value is not None and j.value.ask_again]",
        "j.value is not None and j.value.ask_again and False]",
        JUDGEBENCH + "test_arena_hard_reader_asks_once_more_for_a_label_and_resumes",
        "a reply with no label is not asked again (ArenaHard's second attempt dropped)",
    ),
    _break(
        "ppe-conflict-orientation",
        "writing_rl/evaluation/ppe.py",
        "won, lost = (i, j) if scores[i] > scores[j] else (j, i)",
        "won, lost = (j, i) if scores[i] > scores[j] else (i, j)",
        "tests/test_eval_ppe.py",
        "PPE's correctness pairs prefer the response scored wrong",
    ),
    _break(
        "ppe-tie-counts-right",
        "writing_rl/evaluation/ppe.py",
        '"correct": None if judgment.error is not None else picked == "chosen",',
        '"correct": None if judgment.error is not None else picked in ("chosen", "tie"),',
        "tests/test_eval_ppe.py",
        "a tie verdict counts as naming PPE's preferred response",
    ),
    _break(
        "ppe-human-winner-flipped",
        "writing_rl/evaluation/ppe.py",
        'FIRST_WINS = {"model_a": True, "model_b": False}',
        'FIRST_WINS = {"model_a": False, "model_b": True}',
        "tests/test_eval_ppe.py",
        "PPE's human-preference pairs prefer the losing response",
    ),
    _break(
        "eqbench-rubric-score-20-dropped",
        "writing_rl/evaluation/eqbench.py",
        "            if float(number) <= SCORE_MAX:",
        "            if float(number) < SCORE_MAX:",
        "tests/test_eval_eqbench.py::test_rubric_parsing_and_scores_match_the_official_functions",
        "a judge score of exactly 20 is dropped, where core/scoring.py keeps every value up to 20",
    ),
    _break(
        "eqbench-both-orders-never-deduplicated",
        "writing_rl/evaluation/eqbench_pairwise.py",
        "        if signature not in seen:",
        "        if True:",
        "tests/test_eval_eqbench.py::test_ratings_match_the_official_solver_and_normalisation",
        "both orders of a matchup with the same fraction are both rated, where core/elo.py's dedupe keeps one",
    ),
    _break(
        "eqbench-trueskill-draw-margin-zero",
        "writing_rl/evaluation/trueskill.py",
        "    return ppf((draw_probability + 1) / 2.0) * math.sqrt(players) * beta",
        "    return 0.0",
        "tests/test_eval_eqbench.py::test_trueskill_matches_values_recorded_from_the_trueskill_package",
        "TrueSkill's draw margin is exactly 0, where the trueskill package's erfcinv fit gives about 1e-5 "
        "(draws then fail instead of widening sigma)",
    ),
]


def copy_repository(into: Path, rev: str | None) -> Path:
    """The repository's files (tracked and untracked, not ignored; or ``rev``'s tree) under ``into``."""
    root = into / "repo"
    if rev is not None:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
        return root
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():  # (a tracked file deleted in the working tree is not copied)
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def environment(root: Path) -> dict[str, str]:
    """The copy's packages first on the path (the editable install maps them to the working tree only
    after sys.path is searched); Ray's workers inherit it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["WRITING_RL_RELEASE"] = "1"  # a test named for a break runs even when it is in the release suite only
    return env


def check_imports_from(root: Path, env: dict[str, str]) -> None:
    code = "import writing_rl, reward_fns; print(writing_rl.__file__); print(reward_fns.__file__)"
    found = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    if any(not Path(line).resolve().is_relative_to(root.resolve()) for line in found.stdout.split()):
        raise SystemExit(f"the copy's packages are not the ones imported: {found.stdout}")


def apply(root: Path, item: Break) -> str:
    """Writes the break into the copy; returns the file's original text."""
    path = root / item.path
    text = path.read_text(encoding="utf-8")
    count = text.count(item.old)
    if count != 1:
        raise ValueError(f"{item.name}: the text to break occurs {count} times in {item.path}, not once")
    path.write_text(text.replace(item.old, item.new), encoding="utf-8")
    return text


def run_tests(root: Path, env: dict[str, str], tests: tuple[str, ...], timeout_s: float) -> tuple[int | None, str]:
    """(pytest's exit status or None on a timeout, its summary line)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    try:
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"no result within {timeout_s:.0f} s"
    lines = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    return done.returncode, (lines[-1].strip("= ") if lines else done.stdout.strip()[-300:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="breaks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the breaks and their tests, run nothing")
    parser.add_argument("--baseline", action="store_true", help="run each break's tests unbroken first")
    parser.add_argument("--rev", help="break this git revision's files instead of the working tree")
    parser.add_argument("--timeout-s", type=float, default=1800.0, help="per pytest run")
    args = parser.parse_args(argv)
    known = {b.name: b for b in BREAKS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"no break named {', '.join(unknown)} (--list lists them)")
    chosen = [known[n] for n in args.names] or BREAKS
    if args.list:
        for item in chosen:
            print(f"{item.name}: {item.what} ({item.path})\n    {' '.join(item.tests)}")
        return 0

    problems = 0
    with tempfile.TemporaryDirectory(prefix="mutations-") as tmp:
        root = copy_repository(Path(tmp), args.rev)
        env = environment(root)
        check_imports_from(root, env)
        for item in chosen:
            if args.baseline:
                status, summary = run_tests(root, env, item.tests, args.timeout_s)
                if status != 0:
                    problems += 1
                    print(f"BROKEN   {item.name}: its tests fail unbroken: {summary}", flush=True)
                    continue
            original = apply(root, item)
            try:
                status, summary = run_tests(root, env, item.tests, args.timeout_s)
            finally:
                (root / item.path).write_text(original, encoding="utf-8")
            caught = status in (1, 2)  # tests failed (1), or the break stopped their collection (2)
            problems += not caught
            verdict = "caught" if caught else "MISSED" if status == 0 else "UNCLEAR"
            print(f"{verdict:<8} {item.name}: {item.what}: {summary}", flush=True)
    print(f"{len(chosen) - problems} of {len(chosen)} breaks caught")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
