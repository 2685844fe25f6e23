#!/usr/bin/env bash
# Pointwise score rewards: each rollout scored 1-10 alone by the judge, normalised within its group
# (hydra_configs/pointwise.yaml): the cheapest judged reward, and the baseline a pairwise method must beat.
#
# Required:  MODEL_PATH  TRAIN_FILES  VAL_FILES, and JUDGE_BASE_URL + JUDGE_MODEL (an OpenAI-compatible judge)
#            or GENRM=colocated|standalone + GENRM_PATH (verl hosts the GenRM on vLLM)
# Optional:  JUDGE_API_KEY_ENV (name of the env var holding the key)  N_GPUS (policy GPUs per node: 8; 4 with GENRM=standalone)  NNODES (1)
#            NODE_PRESET=one_gpu|eight_gpus (a first run on one node: docs/one-node.md)
#            RAY_ADDRESS (submit as a Ray job)  DRY_RUN=1 (print + check the config, then exit)
# Extra arguments are Hydra overrides, e.g. actor_rollout_ref.rollout.n=16
set -euo pipefail
source "$(dirname "$0")/_launch.sh"
train_with_judge pointwise \
  "training parquet (python data_prep/build_parquet.py prompts ...)" \
  "OpenAI-compatible endpoint of the judge, e.g. http://judge-host:8000/v1" \
  "$@"
