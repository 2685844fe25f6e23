#!/usr/bin/env bash
# GRRM RLVR: GRPO on the SFT'd group-ranking GenRM with the rule-based ranking-accuracy reward
# (hydra_configs/grrm_rlvr.yaml; data from `build_parquet.py gqm-rl`). No judge endpoint needed.
#
# Required:  MODEL_PATH (the GenRM after SFT: scripts/train_genrm_sft.sh)  TRAIN_FILES  VAL_FILES
# Optional:  N_GPUS (8)  NNODES (1)  VARIANT (default | no_cot | zero)
#            RAY_ADDRESS (submit as a Ray job)  DRY_RUN=1 (print + check the config, then exit)
# Extra arguments are Hydra overrides, e.g. reward.custom_reward_function.reward_kwargs.score_scale=0.5
set -euo pipefail
source "$(dirname "$0")/_launch.sh"

require_env \
  MODEL_PATH "the GenRM to train (HF dir or hub id), usually the SFT checkpoint" \
  TRAIN_FILES "training parquet (python data_prep/build_parquet.py gqm-rl ...)" \
  VAL_FILES "validation parquet (gqm-rl without augmentation)"

CONFIG_NAME=grrm_rlvr
OVERRIDES=(
  "actor_rollout_ref.model.path=$MODEL_PATH"
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  "reward.custom_reward_function.reward_kwargs.variant=${VARIANT:-default}"
  "trainer.n_gpus_per_node=${N_GPUS:-8}"
  "trainer.nnodes=${NNODES:-1}"
)
launch "$@"
