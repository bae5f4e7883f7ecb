#!/usr/bin/env bash
# Parity with open_clip itself (tests/parity, marker open_clip): jitr's CLIP / SigLIP towers,
# converters, export, tokenizers, tables and losses against open_clip_torch, timm and PyPI's
# torch. open_clip imports torchvision, whose PyPI build needs PyPI's torch (a local CPU
# build of torch lacks its operators), so this runs in a virtual environment of its own:
#   1. $JITR_PARITY_VENV (default .venv-open-clip) with torch, torchvision and open_clip_torch
#      from PyPI alone (pip --isolated: no local wheel folder, index or constraint; on Linux
#      PyPI's torch is its CUDA build, which runs on CPU), then jitr's test dependencies and
#      jitr itself (editable, no extras: torch stays PyPI's);
#   2. pytest -m open_clip tests/parity: every test must pass and none may be skipped or
#      left uncollected (a missing open_clip fails the step). The zero-shot test runs jitr's
#      console scripts from the project's own environment, $JITR_MAIN_VENV (default .venv,
#      which scripts/test.sh makes), against open_clip's ranking.
# The Flickr8k captions (the tokenizers' check) come from $JITR_FLICKR8K, else
# shared/data/flickr8k beside the repository (tests/data_folders.py).
set -euo pipefail
cd "$(dirname "$0")/.."
JITR_TORCH=$(sed -n 's/^JITR_TORCH=//p' scripts/setup_env.sh) # the torch jitr pins
VENV=${JITR_PARITY_VENV:-.venv-open-clip}
TORCHVISION=0.28.0
OPEN_CLIP=3.3.0
LOG="$VENV/pip-install.log"
START=$SECONDS

if [ ! -f "$VENV/.open-clip-installed" ]; then
  echo "==> Creating $VENV: torch==$JITR_TORCH, torchvision==$TORCHVISION, open_clip_torch==$OPEN_CLIP from PyPI" >&2
  python3 -m venv "$VENV"
  {
    "$VENV/bin/python" -m pip install --isolated --quiet "torch==$JITR_TORCH" \
      "torchvision==$TORCHVISION" "open_clip_torch==$OPEN_CLIP" &&
      "$VENV/bin/python" -m pip install --quiet "jax==0.10.2" "jaxlib==0.10.2" \
        "flax>=0.12,<0.13" chex "pytest>=8.0" ftfy regex tokenizers transformers safetensors &&
      "$VENV/bin/python" -m pip install --quiet --no-deps -e .
  } >"$LOG" 2>&1 || {
    echo "pip install failed; the end of $LOG:" >&2
    tail -n 30 "$LOG" >&2
    exit 1
  }
  touch "$VENV/.open-clip-installed"
fi
"$VENV/bin/python" - <<EOF
import importlib.metadata as m, sys
torch = m.version("torch")
if "+" in torch or not any(r.startswith("nvidia") for r in m.requires("torch") or []):
  sys.exit(f"$VENV has torch {torch}, not PyPI's torch==$JITR_TORCH (its CUDA build)")
print(f"ok    torch {torch} (PyPI), torchvision {m.version('torchvision')}, "
      f"open_clip_torch {m.version('open_clip_torch')}, timm {m.version('timm')} ($((SECONDS - START)) s)")
EOF
export JITR_MAIN_VENV=${JITR_MAIN_VENV:-$PWD/.venv}
REPORT=$(mktemp)
trap 'rm -f "$REPORT"' EXIT
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider -m open_clip tests/parity \
  -rs --junitxml="$REPORT" --durations=10
"$VENV/bin/python" - "$REPORT" <<'EOF'
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
tests, skipped = int(suite.get("tests")), int(suite.get("skipped"))
if tests == 0 or skipped:
  sys.exit(f"FAIL  the open_clip parity ran {tests} tests, {skipped} skipped: it must run them all")
print(f"ok    open_clip parity: {tests} tests passed")
EOF
