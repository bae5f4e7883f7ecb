#!/usr/bin/env bash
# One command: create .venv if missing, install jitr with its extras, run pytest.
# Re-runs reuse the venv (set JITR_REINSTALL=1 to force a reinstall).
# Extra arguments go to pytest, e.g. scripts/test.sh tests/losses -k ndcg
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_env.sh
exec python -m pytest "$@"
