#!/usr/bin/env bash
# The whole Writing-RL reward path on one machine, no GPU:
#   1. create/use .venv with writing-rl,
#   2. build Writing-RL training parquet from the bundled examples (examples/writing_prompts.jsonl),
#   3. score the bundled sample rollouts (examples/rollouts.jsonl) with the pairwise reward through
#      verl's reward loop worker, our manager and the judge at JUDGE_BASE_URL.
#
#   JUDGE_BASE_URL   OpenAI-compatible endpoint (vllm serve, OpenAI, DashScope, OpenRouter, ...)
#   JUDGE_MODEL      model name it serves
#   JUDGE_API_KEY_ENV  name of the env var holding its API key, if it needs one
#   POLICY_TOKENIZER   tokenizer used for the round trip text -> tokens -> text (default: a small
#                      byte-level BPE built here from the examples; any policy tokenizer works)
# Extra arguments are Hydra overrides for the scoring, e.g. reward.custom_reward_function.reward_kwargs.strategy=both
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
ensure_venv
cd "$REPO_DIR"

DATA_DIR="${DATA_DIR:-data/quickstart}"
OUT_DIR="${OUT_DIR:-runs/quickstart}"

echo "== 1/2 building Writing-RL rows from examples/writing_prompts.jsonl"
python data_prep/build_parquet.py writing-rl --quiet \
  --input examples/writing_prompts.jsonl --output "$DATA_DIR" --rejects "$DATA_DIR/rejects.jsonl"

if [ -z "${JUDGE_BASE_URL:-}" ]; then
  cat <<MSG

== 2/2 scoring needs a judge: set JUDGE_BASE_URL (and JUDGE_MODEL) and rerun, e.g.
     # any OpenAI-compatible server, e.g. a local vLLM:  vllm serve Qwen/Qwen3-8B --port 8000
     JUDGE_BASE_URL=http://127.0.0.1:8000/v1 JUDGE_MODEL=Qwen/Qwen3-8B bash scripts/quickstart.sh
     # a hosted API (the key stays in the env var you name):
     export DASHSCOPE_API_KEY=...
     JUDGE_BASE_URL=https://dashscope.aliyuncs.com/compatible-mode/v1 JUDGE_MODEL=qwen-plus \\
       JUDGE_API_KEY_ENV=DASHSCOPE_API_KEY bash scripts/quickstart.sh
   Training data is ready in $DATA_DIR/train.parquet.
MSG
  exit 0
fi
: "${JUDGE_MODEL:?set JUDGE_MODEL to the model name $JUDGE_BASE_URL serves}"

TOKENIZER="${POLICY_TOKENIZER:-}"
if [ -z "$TOKENIZER" ]; then
  TOKENIZER=.cache/quickstart/tokenizer
  python - "$TOKENIZER" <<'PY'
import json, sys
from writing_rl.tiny import build_tiny_tokenizer
texts = [json.dumps(json.loads(line)) for f in ("examples/writing_prompts.jsonl", "examples/rollouts.jsonl") for line in open(f)]
build_tiny_tokenizer(sys.argv[1], texts)
PY
fi

echo "== 2/2 scoring examples/rollouts.jsonl against the references with $JUDGE_MODEL at $JUDGE_BASE_URL"
KEY_OVERRIDE=()
if [ -n "${JUDGE_API_KEY_ENV:-}" ]; then KEY_OVERRIDE=("reward.reward_kwargs.judge.api_key_env=$JUDGE_API_KEY_ENV"); fi
writing-rl score --data "$DATA_DIR/train.parquet" --responses examples/rollouts.jsonl --out "$OUT_DIR" \
  --tokenizer "$TOKENIZER" --judge-url "$JUDGE_BASE_URL" --judge-model "$JUDGE_MODEL" \
  "${KEY_OVERRIDE[@]}" "$@"
