# Shared by scripts/train_*.sh: check env vars, then run verl's main_ppo here or submit it to Ray.
#   CONFIG_NAME      overlay in hydra_configs/ (set by the calling script)
#   OVERRIDES        bash array of Hydra overrides (set by the calling script), "$@" is appended
#   RAY_ADDRESS      when set: submit to that cluster (its job server, http://HEAD:8265) as a Ray job, with this repo
#                    as the working dir, and follow it (docs/many-nodes.md); Ctrl-C leaves the job running
#   JOB_PYTHON       with RAY_ADDRESS: the interpreter on the cluster's nodes (default: PYTHON, the same path there)
#   FORWARD_ENV      with RAY_ADDRESS: more variables for the job, besides VERL_PLATFORM, VERL_USE_EXTERNAL_PLUGINS,
#                    the HF caches, ... (writing_rl/tools/shared/cluster/job_env.py FORWARDED)
#   STOP_ON_INTERRUPT=1  with RAY_ADDRESS: Ctrl-C stops the job instead of leaving it running
#   DRY_RUN=1        write the composed config to DRY_RUN_OUT (default outputs/dry_run/), run the preflight
#                    (writing-rl preflight), then exit; its verdict is the last line. DRY_RUN_PRINT=1 prints
#                    the config too
#   TRAINER          which of verl's trainers runs it: v1-sync, v1-colocate-async, v1-separate-async, legacy,
#                    fully-async, one-step-off (writing_rl/tools/shared/trainers.py; docs/trainers.md); default:
#                    the overlay's (v1-sync)
#   PREFLIGHT=0      skip the preflight a real run starts with (config, paths, data, lengths, judge)
#   REMOTE_PATHS     variables whose paths only the cluster sees, not checked here, e.g. "MODEL_PATH TRAIN_FILES" or all
#   FORWARD_JUDGE_API_KEY=1  copy the judge API key into the Ray job's env (visible in the dashboard)
#   PYTHON           interpreter (default: the quickstart's .venv/bin/python when it exists, else python)
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO_DIR/.venv/bin/python" ]; then PYTHON="$REPO_DIR/.venv/bin/python"; else PYTHON=python; fi
fi

# require_env VAR "what it is" ...: stop with every missing variable named.
require_env() {
  local missing=()
  while [ $# -gt 0 ]; do
    if [ -z "${!1:-}" ]; then missing+=("  $1: $2"); fi
    shift 2
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "error: missing environment variable(s):" >&2
    printf '%s\n' "${missing[@]}" >&2
    exit 2
  fi
}

# preflight ARGS...: every problem a run would meet, one line each; stops the script when there is one.
preflight() {
  local remote=()
  for name in ${REMOTE_PATHS:-}; do remote+=(--remote "$name"); done
  "$PYTHON" -m writing_rl.tools.preflight --config-dir "$REPO_DIR/hydra_configs" "${remote[@]}" "$@" || exit 1
}

launch() {
  local module=verl.trainer.main_ppo spec selected=()
  if [ -n "${TRAINER:-}" ]; then
    spec="$("$PYTHON" -m writing_rl.tools.shared.trainers "$TRAINER")" || exit 2
    module="$(head -n 1 <<< "$spec")"
    mapfile -t selected < <(tail -n +2 <<< "$spec")
  fi
  # The trainer's overrides after the script's (a +node preset's batch sizes yield to +entry=fully_async's).
  local args=(--config-name "$CONFIG_NAME" "${OVERRIDES[@]}" "${selected[@]}" "$@")
  if [ "${DRY_RUN:-0}" = "1" ]; then
    local dir="${DRY_RUN_OUT:-$REPO_DIR/outputs/dry_run}"
    local composed="$dir/$CONFIG_NAME.yaml"
    mkdir -p "$dir"
    echo "== python: $PYTHON" >&2
    local composed_ok=1 hydra_output
    "$PYTHON" -m "$module" --config-path "$REPO_DIR/hydra_configs" "${args[@]}" --cfg job > "$composed.tmp" 2> "$composed.err" || composed_ok=0
    hydra_output="$(cat "$composed.err")"
    rm -f "$composed.err"
    if [ "$composed_ok" = 0 ]; then
      # Hydra's own message offers '+' for a mistyped key; the preflight names the key meant, checks the rest.
      rm -f "$composed.tmp"
      echo "== $module could not compose the config; preflight"
      preflight "${args[@]}"
      printf '%s\n' "$hydra_output" >&2
      exit 1
    fi
    if [ -n "$hydra_output" ]; then printf '%s\n' "$hydra_output" >&2; fi
    mv "$composed.tmp" "$composed"
    if [ "${DRY_RUN_PRINT:-0}" = "1" ]; then cat "$composed"; fi
    echo "== the composed config, as $module reads it: $composed ($(wc -l < "$composed") lines)"
    echo "== preflight"
    preflight "${args[@]}"
    return
  fi
  if [ "${PREFLIGHT:-1}" != "0" ]; then
    preflight "${args[@]}"
  fi
  if [ -z "${RAY_ADDRESS:-}" ]; then
    exec "$PYTHON" -m "$module" --config-path "$REPO_DIR/hydra_configs" "${args[@]}"
  fi
  # A Ray job (writing_rl/tools/shared/cluster/submit.py): this repo uploaded as its working directory, the variables
  # it needs forwarded, its output followed here (docs/many-nodes.md).
  exec "$PYTHON" -m writing_rl.tools.shared.cluster.submit --repo "$REPO_DIR" --module "$module" --config-name "$CONFIG_NAME" \
    "${OVERRIDES[@]}" "${selected[@]}" "$@"
}

# train_with_judge CONFIG "what TRAIN_FILES holds" "what the judge is" [overrides...]: the policy
# trainings scored by a judge (writing_rl, brpo, tournament, grrm_mt_grpo) all take the same variables:
#   MODEL_PATH TRAIN_FILES VAL_FILES, then the judge: JUDGE_BASE_URL + JUDGE_MODEL (an endpoint), or
#   GENRM=colocated|standalone + GENRM_PATH (verl hosts the GenRM: hydra_configs/genrm/*.yaml);
#   optional JUDGE_API_KEY_ENV, N_GPUS (the policy's GPUs per node; default: the config's, 8, or 4 with
#   GENRM=standalone, whose GenRM takes reward.reward_model.n_gpus_per_node=4 more), NNODES,
#   NODE_PRESET=one_gpu|eight_gpus (+node=...: lengths, batch sizes and memory for a first run on one
#   node, hydra_configs/node/*.yaml, docs/one-node.md)
train_with_judge() {
  CONFIG_NAME="$1"
  local train_hint="$2" judge_hint="$3"
  shift 3
  local needed=(MODEL_PATH "policy model (HF dir or hub id)" TRAIN_FILES "$train_hint" VAL_FILES "validation parquet")
  if [ -n "${GENRM:-}" ]; then
    case "$GENRM" in colocated|standalone) ;; *) echo "error: GENRM must be colocated or standalone, got '$GENRM'" >&2; exit 2 ;; esac
    needed+=(GENRM_PATH "the GenRM verl hosts (HF dir or hub id)")
  else
    needed+=(
      JUDGE_BASE_URL "$judge_hint (or GENRM=colocated|standalone + GENRM_PATH to let verl host the GenRM)"
      JUDGE_MODEL "model name the judge endpoint serves"
    )
  fi
  require_env "${needed[@]}"
  # A GenRM colocated with the policy trains under verl's legacy trainer (+genrm=colocated sets it): our entry
  # point for it, so that judge/ metrics reach the tracker (docs/judges/health.md).
  if [ "${GENRM:-}" = colocated ] && [ -z "${TRAINER:-}" ]; then TRAINER=legacy; fi
  OVERRIDES=(
    "actor_rollout_ref.model.path=$MODEL_PATH"
    "data.train_files=$TRAIN_FILES"
    "data.val_files=$VAL_FILES"
    "trainer.nnodes=${NNODES:-1}"
  )
  # Only when set: a default here would override the standalone preset's split of the node.
  if [ -n "${N_GPUS:-}" ]; then
    OVERRIDES+=("trainer.n_gpus_per_node=$N_GPUS")
  fi
  if [ -n "${NODE_PRESET:-}" ]; then
    case "$NODE_PRESET" in
      one_gpu|eight_gpus) ;;
      *) echo "error: NODE_PRESET must be one_gpu or eight_gpus (hydra_configs/node/), got '$NODE_PRESET'" >&2; exit 2 ;;
    esac
    if [ "$NODE_PRESET" = one_gpu ] && [ "${GENRM:-}" = standalone ]; then
      echo "error: NODE_PRESET=one_gpu has one GPU and GENRM=standalone needs GPUs of its own: use GENRM=colocated (the GenRM sleeps on the same GPU) or a judge endpoint" >&2
      exit 2
    fi
    OVERRIDES+=("+node=$NODE_PRESET")
  fi
  if [ -n "${GENRM:-}" ]; then
    OVERRIDES+=("+genrm=$GENRM" "reward.reward_model.model_path=$GENRM_PATH")
  else
    OVERRIDES+=(
      "reward.reward_kwargs.judge.base_url=$JUDGE_BASE_URL"
      "reward.reward_kwargs.judge.model=$JUDGE_MODEL"
    )
  fi
  if [ -n "${JUDGE_API_KEY_ENV:-}" ]; then
    OVERRIDES+=("reward.reward_kwargs.judge.api_key_env=$JUDGE_API_KEY_ENV")
  fi
  launch "$@"
}
