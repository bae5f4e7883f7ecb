#!/usr/bin/env bash
# One command: create .venv if missing, install jitr with its extras (and, on Linux, the
# triton that PyPI's torch brings: the tests run with what a PyPI install has), check the style
# (ruff format + ruff lint, configured in pyproject.toml), run pytest.
# Re-runs reuse the venv (set JITR_REINSTALL=1 to force a reinstall).
# Extra arguments go to pytest, e.g. scripts/test.sh tests/losses -k ndcg
# The tests run in JITR_TEST_WORKERS pytest-xdist processes (default 2; 0: one process).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_env.sh
jitr_install_triton
jitr_step "Checking the style (ruff format --check, ruff check)"
ruff format --check --quiet . || { echo "ruff format would change the files above: run 'ruff format .'" >&2; exit 1; }
ruff check --quiet .
jitr_step "Running the tests"
exec python -m pytest -n "${JITR_TEST_WORKERS:-2}" --dist worksteal "$@"
