#!/usr/bin/env bash
# Writing-RL: GRPO with the pairwise judge reward against references (hydra_configs/writing_rl.yaml).
#
# Required:  MODEL_PATH  TRAIN_FILES  VAL_FILES  JUDGE_BASE_URL  JUDGE_MODEL
# Optional:  JUDGE_API_KEY_ENV (name of the env var holding the key)  N_GPUS (8)  NNODES (1)
#            RAY_ADDRESS (submit as a Ray job)  DRY_RUN=1 (print + check the config, then exit)
# Extra arguments are Hydra overrides, e.g. reward.custom_reward_function.reward_kwargs.strategy=both
set -euo pipefail
source "$(dirname "$0")/_launch.sh"

require_env \
  MODEL_PATH "policy model (HF dir or hub id)" \
  TRAIN_FILES "training parquet (python data_prep/build_parquet.py writing-rl ...)" \
  VAL_FILES "validation parquet" \
  JUDGE_BASE_URL "OpenAI-compatible judge endpoint, e.g. http://judge-host:8000/v1" \
  JUDGE_MODEL "model name the judge endpoint serves"

CONFIG_NAME=writing_rl
OVERRIDES=(
  "actor_rollout_ref.model.path=$MODEL_PATH"
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  "reward.reward_kwargs.judge.base_url=$JUDGE_BASE_URL"
  "reward.reward_kwargs.judge.model=$JUDGE_MODEL"
  "trainer.n_gpus_per_node=${N_GPUS:-8}"
  "trainer.nnodes=${NNODES:-1}"
)
if [ -n "${JUDGE_API_KEY_ENV:-}" ]; then
  OVERRIDES+=("reward.reward_kwargs.judge.api_key_env=$JUDGE_API_KEY_ENV")
fi
launch "$@"
