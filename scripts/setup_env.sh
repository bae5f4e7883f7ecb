# Sourced by scripts/test.sh (and the other entry scripts): make .venv and install jitr.
# torch==2.13.0 goes in first: it is the CPU wheel on this disk, and anything that
# later asks for torch (sentence-transformers) is then already satisfied.
VENV=${JITR_VENV:-.venv}
STAMP="$VENV/.jitr-installed"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
if [ ! -f "$STAMP" ] || [ "${JITR_REINSTALL:-0}" = 1 ] || [ pyproject.toml -nt "$STAMP" ]; then
  python -m pip install --quiet --upgrade pip setuptools wheel
  python -m pip install --quiet "torch==2.13.0"
  python -m pip install --quiet -e ".[relevance,dev]"
  touch "$STAMP"
fi
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
