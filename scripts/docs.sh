#!/usr/bin/env bash
# Builds the documentation site into docs/_build/html (Sphinx + MyST, docs/conf.py) with the
# flags of tests/test_docs_site.py: warnings are errors (-W), every reference must resolve
# (-n). Then serves it on http://localhost:$PORT (default 8000) until Ctrl-C, unless
# --no-serve is given. Creates .venv and installs jitr with its extras if needed, as
# scripts/test.sh does. Extra arguments go to sphinx-build, e.g. scripts/docs.sh -E (reread
# every page).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVE=1
ARGS=()
for arg in "$@"; do
  if [ "$arg" = --no-serve ]; then SERVE=0; else ARGS+=("$arg"); fi
done
source scripts/setup_env.sh
OUT=docs/_build
jitr_step "Building the documentation into $OUT/html (sphinx-build -W -n)"
python -m sphinx -W -n --keep-going -j 1 -q -b html -d "$OUT/doctrees" ${ARGS[@]+"${ARGS[@]}"} docs "$OUT/html"
echo "Built $OUT/html/index.html"
if [ "$SERVE" = 1 ]; then
  PORT=${PORT:-8000}
  jitr_step "Serving $OUT/html on http://localhost:$PORT (Ctrl-C stops)"
  exec python -m http.server "$PORT" --bind 127.0.0.1 --directory "$OUT/html"
fi
