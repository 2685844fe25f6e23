#!/usr/bin/env bash
# Pairwise GenRM RL (Writing-Zero): GRPO on the SFT'd pairwise GenRM, reward 1 when its verdict matches
# the human preference (hydra_configs/genrm_pairwise_rl.yaml; data from `build_parquet.py pref-rl`).
# No judge endpoint needed.
#
# Required:  MODEL_PATH (the GenRM after SFT: scripts/train_genrm_sft.sh)  TRAIN_FILES  VAL_FILES
# Optional:  N_GPUS (8)  NNODES (1)
#            RAY_ADDRESS (submit as a Ray job)  DRY_RUN=1 (print + check the config, then exit)
# Extra arguments are Hydra overrides, e.g. reward.custom_reward_function.reward_kwargs.tie_score=0.5
set -euo pipefail
source "$(dirname "$0")/_launch.sh"

require_env \
  MODEL_PATH "the GenRM to train (HF dir or hub id), usually the SFT checkpoint" \
  TRAIN_FILES "training parquet (python data_prep/build_parquet.py pref-rl ...)" \
  VAL_FILES "validation parquet"

CONFIG_NAME=genrm_pairwise_rl
OVERRIDES=(
  "actor_rollout_ref.model.path=$MODEL_PATH"
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  "trainer.n_gpus_per_node=${N_GPUS:-8}"
  "trainer.nnodes=${NNODES:-1}"
)
launch "$@"
