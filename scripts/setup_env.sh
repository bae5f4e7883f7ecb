# Sourced by scripts/test.sh and scripts/train.sh: make .venv and install jitr.
# torch==$JITR_TORCH goes in first: it is the CPU wheel on this disk, and anything that
# later asks for torch (sentence-transformers) is then already satisfied. On Linux,
# triton==$JITR_TRITON goes in beside it: PyPI's (CUDA) build of that torch pins it, so
# every user who installs torch from PyPI has it, and the tests run with it too
# (.ci/triton_check.sh checks the pin against PyPI's torch).
# pip's own output (resolver notes, build-backend warnings) goes to
# $VENV/pip-install.log and is shown only if the install fails.
VENV=${JITR_VENV:-.venv}
STAMP="$VENV/.jitr-installed"
PIP_LOG="$VENV/pip-install.log"

JITR_TORCH=2.13.0
JITR_TRITON=3.7.1

jitr_step() { printf '==> %s\n' "$*" >&2; }

jitr_install() {
  python -m pip install --quiet --upgrade pip setuptools wheel &&
    python -m pip install --quiet "torch==$JITR_TORCH" &&
    { [ "$(uname -s)" != Linux ] || python -m pip install --quiet "triton==$JITR_TRITON"; } &&
    python -m pip install --quiet -e ".[train,relevance,dev,docs]"
}

if [ ! -x "$VENV/bin/python" ]; then
  jitr_step "Creating the virtual environment $VENV"
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
if [ ! -f "$STAMP" ] || [ "${JITR_REINSTALL:-0}" = 1 ] || [ pyproject.toml -nt "$STAMP" ] ||
  [ scripts/setup_env.sh -nt "$STAMP" ]; then
  jitr_step "Installing jitr and its dependencies into $VENV (pip log: $PIP_LOG)"
  if ! PYTHONWARNINGS=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 jitr_install >"$PIP_LOG" 2>&1; then
    echo "pip install failed; the end of $PIP_LOG:" >&2
    tail -n 40 "$PIP_LOG" >&2
    return 1
  fi
  touch "$STAMP"
fi
# TF runs only the input pipelines: no C++ INFO lines, no oneDNN notice.
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
export TF_ENABLE_ONEDNN_OPTS=${TF_ENABLE_ONEDNN_OPTS:-0}
