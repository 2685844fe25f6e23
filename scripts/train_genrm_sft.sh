#!/usr/bin/env bash
# GenRM SFT cold start with verl's SFT trainer (torchrun -m verl.trainer.sft_trainer, config
# sft_trainer_engine) on a `messages` parquet from `build_parquet.py gqm-sft` or `pref-sft`.
#
# Required:  MODEL_PATH (base model, HF dir or hub id)  TRAIN_FILES (messages parquet)
# Optional:  VAL_FILES  N_GPUS (8)  NNODES (1; more: also NODE_RANK, MASTER_ADDR, MASTER_PORT)
#            MAX_LENGTH (8192 tokens per conversation)  OUTPUT_DIR (checkpoints/genrm_sft)
#            DRY_RUN=1 (print verl's composed SFT config, check it and the data, then exit)
#            BACKEND=cpu (this machine's CPU, for a tiny model: verl's CPU backend (docs/train-on-a-laptop.md),
#              one training process, N_GPUS=1; adds CPU_OVERRIDES below, before the extra arguments)
#            PYTHON (.venv/bin/python when the quickstart built it, else python)  TORCHRUN (torchrun beside it)
# Extra arguments are Hydra overrides of verl's sft_trainer_engine config, e.g. optim.lr=1e-5
# Defaults follow GRRM's SFT recipe: lr 6e-6, cosine, 10% warmup, 3 epochs. Checkpoints include an HF
# model (OUTPUT_DIR/global_step_N/huggingface): the MODEL_PATH of the RL scripts.
set -euo pipefail
source "$(dirname "$0")/_launch.sh"

require_env \
  MODEL_PATH "base model to fine-tune (HF dir or hub id)" \
  TRAIN_FILES "messages parquet (python data_prep/build_parquet.py gqm-sft|pref-sft ...)"

NNODES="${NNODES:-1}"
# What a CPU needs instead of an accelerator: the device; FSDP2 (FSDP1 refuses to sync module states on a
# CPU); no torch.compile; PyTorch's attention, not flash-attention; no data loader worker processes.
CPU_OVERRIDES=(
  "trainer.device=cpu"
  "engine.strategy=fsdp2"
  "engine.use_torch_compile=false"
  "++model.override_config.attn_implementation=sdpa"
  "data.num_workers=0"
)
BACKEND_OVERRIDES=()
case "${BACKEND:-}" in
  "") N_GPUS="${N_GPUS:-8}" ;;
  cpu)
    N_GPUS="${N_GPUS:-1}"
    if [ "$N_GPUS" != "1" ] || [ "$NNODES" != "1" ]; then
      echo "error: BACKEND=cpu runs one training process on this machine: N_GPUS=1 and NNODES=1" \
        "(got N_GPUS=$N_GPUS NNODES=$NNODES)" >&2
      exit 2
    fi
    export VERL_PLATFORM=cpu  # verl loads our CPU platform (writing_rl.cpu_backend) in the trainer process
    BACKEND_OVERRIDES=("${CPU_OVERRIDES[@]}")
    ;;
  *) echo "error: BACKEND must be cpu, or unset for the accelerator verl finds (got BACKEND=$BACKEND)" >&2; exit 2 ;;
esac
OVERRIDES=(
  "model.path=$MODEL_PATH"
  "data.train_files=$TRAIN_FILES"
  "data.val_files=${VAL_FILES:-null}"
  "data.messages_key=messages"
  "data.max_length=${MAX_LENGTH:-8192}"
  "data.truncation=error"
  "data.train_batch_size=64"
  "data.use_dynamic_bsz=true"
  "data.max_token_len_per_gpu=${MAX_LENGTH:-8192}"
  "optim.lr=6e-6"
  "optim.lr_scheduler_type=cosine"
  "optim.lr_warmup_steps_ratio=0.1"
  "trainer.total_epochs=3"
  "trainer.project_name=writing-rl"
  "trainer.experiment_name=genrm_sft"
  "trainer.logger=[console]"
  "trainer.default_local_dir=${OUTPUT_DIR:-checkpoints/genrm_sft}"
  "checkpoint.save_contents=[model,optimizer,extra,hf_model]"
  "trainer.n_gpus_per_node=$N_GPUS"
  "trainer.nnodes=$NNODES"
  "${BACKEND_OVERRIDES[@]}"
  "$@"
)

if [ "${DRY_RUN:-0}" = "1" ]; then
  exec "$PYTHON" -m data_prep.check_sft --print "${OVERRIDES[@]}"
fi

if [ -z "${TORCHRUN:-}" ]; then
  TORCHRUN="$(dirname "$(command -v "$PYTHON")")/torchrun"
  [ -x "$TORCHRUN" ] || TORCHRUN=torchrun
fi
if [ "$NNODES" = "1" ]; then
  DIST=(--standalone --nnodes=1 --nproc_per_node="$N_GPUS")
else
  require_env NODE_RANK "this node's rank (0..NNODES-1)" MASTER_ADDR "address of node 0"
  DIST=(--nnodes="$NNODES" --nproc_per_node="$N_GPUS" --node_rank="$NODE_RANK"
        --master_addr="$MASTER_ADDR" --master_port="${MASTER_PORT:-29500}")
fi
exec "$TORCHRUN" "${DIST[@]}" -m verl.trainer.sft_trainer "${OVERRIDES[@]}"
