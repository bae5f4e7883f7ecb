#!/usr/bin/env bash
# One command: create .venv if missing and install jitr with every extra into it (the apps,
# the relevance estimators, the tests' and the docs' tools; re-runs reuse it, set
# JITR_REINSTALL=1 to force a reinstall), then say its size and how to use it.
# JITR_VENV names another folder for the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
source scripts/setup_env.sh
jitr_step "Ready in $((SECONDS - START)) s: $VENV ($(du -sh "$VENV" | cut -f1)) holds jitr $(
  python -c 'import jitr; print(jitr.__version__)'
) with torch $(python -c 'import importlib.metadata as m; print(m.version("torch"))')"
jitr_step "Use it with: source $VENV/bin/activate  (then jitr-train --help)"
