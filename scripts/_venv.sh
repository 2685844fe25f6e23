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
    echo "installing $TORCH_SPEC, then writing-rl${extras:+[$extras]} into $VENV (first run: 1-3 min)" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$REPO_DIR${extras:+[$extras]}"
    echo "$want" > "$stamp"
  fi
  export PATH="$VENV/bin:$PATH"
}
