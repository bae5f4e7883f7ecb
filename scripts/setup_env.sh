# Sourced by scripts/install.sh, test.sh and train.sh: make .venv and install jitr.
# torch==$JITR_TORCH goes in first (where a local wheel folder has its CPU build, pip takes
# it; from PyPI alone, Linux gets its CUDA build, with triton), and anything that later asks
# for torch (sentence-transformers) is then already satisfied. jitr_install_triton (called
# by scripts/test.sh) adds the triton==$JITR_TRITON that PyPI's build of that torch pins, so
# the tests run with what a PyPI install has (.ci/triton_check.sh checks the pin).
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
    python -m pip install --quiet -e ".[train,relevance,dev,docs]"
}

# triton==$JITR_TRITON in the active environment, on Linux (where PyPI's torch pins it),
# unless the installed torch requires a triton itself (PyPI's CUDA build brought its own).
jitr_install_triton() {
  [ "$(uname -s)" = Linux ] || return 0
  python -c 'import importlib.metadata as m, re, sys
sys.exit(0 if any(re.match(r"triton\b", r) for r in m.requires("torch") or []) else 1)' &&
    return 0
  local have
  have=$(python -c 'import importlib.metadata as m; print(m.version("triton"))' 2>/dev/null || true)
  [ "$have" = "$JITR_TRITON" ] && return 0
  jitr_step "Installing triton==$JITR_TRITON beside torch, as PyPI's torch==$JITR_TORCH has it"
  PYTHONWARNINGS=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    python -m pip install --quiet "triton==$JITR_TRITON" >>"$PIP_LOG" 2>&1 || {
    echo "pip install triton==$JITR_TRITON failed; the end of $PIP_LOG:" >&2
    tail -n 20 "$PIP_LOG" >&2
    return 1
  }
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
