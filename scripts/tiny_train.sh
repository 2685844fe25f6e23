#!/usr/bin/env bash
# verl's real trainer (python -m verl.trainer.main_ppo) with one of our methods, on this machine's CPU:
# a tiny random Qwen2 and tokenizer built here, a few dozen rows from examples/, the method's own overlay
# with only the backend swapped (+backend=cpu), a local judge where the method needs one. A few minutes
# on 2 cores; what it proves and what it does not: docs/train-on-a-laptop.md.
#
#   bash scripts/tiny_train.sh METHOD [hydra overrides...]
#   METHOD: writing_rl, brpo, tournament, grrm_mt_grpo, rubric, grrm_rlvr, genrm_pairwise_rl
#
#   STEPS              training steps (default 3); a checkpoint is saved at the last one, and a rerun with
#                      more STEPS and the same OUT resumes from it (trainer.resume_mode=auto)
#   TRAINER            v1-sync, v1-colocate-async, v1-separate-async, legacy, fully-async or one-step-off
#                      (docs/trainers.md); default: the overlay's (v1-sync, or legacy with GENRM=colocated).
#                      The three that generate apart from training get a rollout process of their own here,
#                      sent each new version of the weights over gloo (writing_rl/cpu_backend/checkpoint_engine.py)
#   OUT                where everything goes (default runs/tiny/METHOD): metrics.jsonl (verl's file
#                      tracker), reward.png, train.log, samples/ (each reward our manager returned),
#                      rollouts/ (verl's dump; none under one-step-off, whose dump verl 0.9.1 breaks), checkpoints/,
#                      summary.json
#   JUDGE_BASE_URL     an OpenAI-compatible judge (JUDGE_MODEL: the model it serves; JUDGE_API_KEY_ENV:
#                      the variable holding its key; JUDGE_MAX_TOKENS: its completion budget). Unset: the
#                      stand-in judge (tests/stand_in_judge.py),
#                      whose verdicts are noise in the judge's format, so rewards vary within a group
#   STAND_IN_FAULTS=N  about one stand-in judge request in N fails (HTTP 500, no verdict, cut, refused): how
#                      failures look to the trainer (default 0: none)
#   LEARN=1            a policy that learns (docs/train-on-a-laptop.md, "A policy that learns"): the stand-in
#                      judge with a taste, 20 steps at lr 3e-2, validation before and after, the taste measured on
#                      verl's dumps (table, plot, summary.json) and the learning check (exit 3 when it fails)
#   TASTE              what the stand-in judge prefers and the run measures (tests/taste.py: letter:X, word:W,
#                      length:LOW-HIGH, ending:S; a leading - reverses it; LEARN=1's default letter:e)
#   JUDGE_TASTE        what the stand-in judge prefers when not TASTE (none: every verdict a tie, so that reward
#                      terms alone teach); JUDGE_FLIP=P reverses a verdict with probability P
#   SEED               the rollout's sampling seed and the order of the rows
#   POLICY=smollm2     the policy is SmolLM2-135M-Instruct (writing-rl model smollm2: a real instruct model from the
#                      package registry), with its own tokenizer and chat template, instead of the tiny random one
#   JUDGE=smollm2      the judge is SmolLM2, served here by writing-rl serve-judge --engine hf (JUDGE_MAX_TOKENS
#                      default 48); with GENRM, the GenRM verl hosts is SmolLM2 (GENRM_PATH)
#   GENRM              colocated or standalone: verl hosts a tiny untrained GenRM on the CPU rollout
#                      (+genrm=... presets) instead of a judge endpoint
#   MODEL_PATH         start the policy (for grrm_rlvr, genrm_pairwise_rl: the GenRM trained) from this HF model
#                      folder instead of the tiny random one, e.g. scripts/tiny_sft.py's SFT'd GenRM; it must
#                      use the tiny tokenizer (CACHE_DIR/tokenizer)
#   GENRM_PATH         with GENRM: the HF model folder verl hosts (reward.reward_model.model_path), e.g. an RLVR
#                      run's checkpoints/global_step_N/actor/huggingface; default: the tiny untrained GenRM
#   ROWS               the rows the method's builder reads (default: its file under examples/)
#   HF_CHECKPOINT=1    the last checkpoint also holds the policy as an HF model
#                      (checkpoints/global_step_N/actor/huggingface: actor.checkpoint.save_contents + hf_model)
#   CACHE_DIR          the built model and tokenizer (default .cache/tiny)
#   RAY_ADDRESS        a Ray cluster's job server (http://HEAD:8265): the run goes there as a Ray job, followed here,
#                      after the preflight's cluster check; OUT and CACHE_DIR on storage the cluster sees too
#                      (scripts/tiny_cluster.py, docs/many-nodes.md). Unset: a Ray of its own on this machine
#   SKIP_VENV=1        use the python already on PATH instead of .venv
# Exit status 0 only when every step finished.
set -euo pipefail
if [ "${SKIP_VENV:-0}" = "1" ]; then
  REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  PY=python
else
  source "$(dirname "$0")/_venv.sh"
  ensure_venv plot
  PY="$VENV/bin/python"
fi
cd "$REPO_DIR"
exec "$PY" scripts/tiny_train.py "$@"
