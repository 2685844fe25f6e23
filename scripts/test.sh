#!/usr/bin/env bash
# Run the test suite on a fresh machine: creates/uses .venv, installs torch (CPU) first, then
# writing-rl with its test extras, then runs pytest. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
ensure_venv test
cd "$REPO_DIR"
exec "$VENV/bin/python" -m pytest tests "$@"
