# Shared by test.sh and quickstart.sh: create/use a virtual environment with writing-rl installed.
#   VENV        venv directory (default: .venv in the repo)
#   PYTHON_BIN  interpreter that creates it (default: python3; 3.10-3.12)
#   TORCH_SPEC  torch requirement installed first (default: torch==2.13.0, the CPU build this
#               machine type carries; a plain `torch` would pull a multi-GB CUDA build)
#   EXTRAS      pip extras of writing-rl (e.g. test)
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO_DIR/.venv}"
PYTHON_BIN="${PYTHON_BIN:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"

# pip_with_progress ARGS...: pip install, printing a line per 20 packages it collects, what it installs,
# and a heartbeat while it installs (pip itself is silent then), instead of minutes of silence.
pip_with_progress() {
  local log="$VENV/pip-install.log" pid elapsed=0
  "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off "$@" > "$log" 2>&1 &
  pid=$!
  local shown=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    elapsed=$((elapsed + 5))
    local collected
    collected="$(grep -c '^Collecting ' "$log" || true)"
    if [ "$collected" -ge $((shown + 20)) ]; then
      shown="$collected"
      echo "   pip: $collected packages resolved ($(grep '^Collecting ' "$log" | tail -n 1 | cut -d' ' -f2))" >&2
    elif grep -q '^Installing collected packages' "$log" && [ $((elapsed % 15)) -eq 0 ]; then
      echo "   pip: installing... (${elapsed}s)" >&2
    elif [ $((elapsed % 30)) -eq 0 ]; then
      echo "   pip: working... (${elapsed}s)" >&2
    fi
  done
  if ! wait "$pid"; then
    echo "error: pip install $* failed; its output:" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
  grep '^Successfully installed' "$log" | awk '{print "   pip: installed " NF - 2 " packages"}' >&2 || true
}

ensure_venv() {
  local extras="${1:-}"
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON_BIN" -c 'import sys; assert (3, 10) <= sys.version_info[:2] <= (3, 12), sys.version' \
      || { echo "error: $PYTHON_BIN must be Python 3.10-3.12 (set PYTHON_BIN)" >&2; exit 2; }
    echo "creating $VENV" >&2
    "$PYTHON_BIN" -m venv "$VENV"
  fi
  # Reinstall only when setup.py or the requested extras changed since the last install.
  local stamp="$VENV/.writing-rl-installed"
  local want
  want="$(cat "$REPO_DIR/setup.py" | sha256sum | cut -c1-16) $TORCH_SPEC [$extras]"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "installing $TORCH_SPEC, then writing-rl${extras:+[$extras]} into $VENV (first run: 2-4 min, about 2 GB)" >&2
    pip_with_progress "$TORCH_SPEC"
    pip_with_progress -e "$REPO_DIR${extras:+[$extras]}"
    echo "$want" > "$stamp"
  fi
  export PATH="$VENV/bin:$PATH"
}
