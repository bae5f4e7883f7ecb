#!/usr/bin/env bash
# The slim install: `pip install "jitr[torch]"` (not editable) into a fresh virtual
# environment brings nothing of the `train` extra, the README's jitr.torch example
# runs from outside the source tree, the losses' tests pass on the newest JAX the package
# index serves, and the apps' console scripts (installed all the same) stop with one line
# asking for the train extra. torch==2.13.0 goes in first: it
# is the CPU wheel on this disk (any other torch requirement would download a CUDA build).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
START=$SECONDS
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
LOG="$TMP/pip-install.log"

step() { printf '==> %s\n' "$*" >&2; }
pip_quiet() {
  if ! PYTHONWARNINGS=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$TMP/venv/bin/python" -m pip install --quiet "$@" >>"$LOG" 2>&1; then
    echo "pip install $* failed; the end of its log:" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

# A copy of the working tree (tracked and untracked, not ignored files): building the
# wheel writes build/ and *.egg-info next to the sources, so not into the checkout.
step "Copying the source tree"
mkdir "$TMP/src"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$TMP/src"

step "Creating a fresh virtual environment"
python3 -m venv "$TMP/venv"
step "Installing torch==2.13.0, then jitr[torch]"
pip_quiet "torch==2.13.0"
pip_quiet "$TMP/src[torch]"

step "Checking that nothing of the train extra is installed"
"$TMP/venv/bin/python" -m pip list --format=freeze 2>/dev/null >"$TMP/installed.txt"
TRAIN_ONLY='^(tensorflow|tensorflow-cpu|tensorflow-datasets|tensorboard|flax|optax|orbax-checkpoint|matplotlib|scikit-learn|ml-collections)=='
if grep -Ei "$TRAIN_ONLY" "$TMP/installed.txt"; then
  echo "the slim install brought the packages above (from the train extra)" >&2
  exit 1
fi
grep -Ei '^(jitr|jax|jaxlib|chex|numpy|torch)==' "$TMP/installed.txt" | tr '\n' ' ' >&2
echo >&2

step "Running the README's jitr.torch example outside the source tree"
# The python block under "### From PyTorch", then a check of its gradient.
awk '/^### From PyTorch/ {found = 1} found && /^```python/ {inside = 1; next}
  inside && /^```/ {exit} inside {print}' "$REPO/README.md" >"$TMP/example.py"
if [ ! -s "$TMP/example.py" ]; then
  echo "no python block under '### From PyTorch' in README.md" >&2
  exit 1
fi
cat >>"$TMP/example.py" <<'EOF'

import sys

assert "tensorflow" not in sys.modules and "flax" not in sys.modules
assert img_emb.grad is not None and bool(torch.isfinite(img_emb.grad).all())
assert float(img_emb.grad.abs().sum()) > 0
print(f"jitr.torch example: loss {loss.item():.4f}, |grad| {img_emb.grad.norm().item():.4f}")
EOF
mkdir "$TMP/elsewhere"
(cd "$TMP/elsewhere" && "$TMP/venv/bin/python" "$TMP/example.py")

step "Running the losses' tests on the newest JAX the package index serves"
# The core bounds JAX from below only (the train extra bounds it for jax._src): the losses
# run on whatever JAX a user has. The tests' own tools go in after the check above.
pip_quiet --upgrade jax jaxlib
pip_quiet pytest pytest-xdist hypothesis "rax==0.4.0"
"$TMP/venv/bin/python" -c 'import jax; print("JAX", jax.__version__)' >&2
(cd "$TMP/src" && "$TMP/venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider tests/losses \
  --ignore=tests/losses/test_normalize.py 2>&1 | tail -n 3) >&2
# (test_normalize.py checks the models' use of the normalisation: it needs Flax; the two
# tests of the run's config checks skip without the train extra's ml_collections.)

step "Checking that jitr-train without the train extra stops with one line"
# The train extra's modules in the order jitr.apps checks them, less absl and scipy:
# the core dependencies bring those (chex needs absl-py, jax needs scipy).
MISSING="ml_collections, flax, optax, orbax, tensorflow, tensorflow_datasets, sklearn, tensorboard, matplotlib"
EXPECTED="jitr-train: error: jitr's apps need the train extra, which is not installed (missing: $MISSING); install it with: pip install 'jitr[train]'"
if (cd "$TMP/elsewhere" && "$TMP/venv/bin/jitr-train" --help) >"$TMP/train.out" 2>"$TMP/train.err"; then
  STATUS=0
else
  STATUS=$?
fi
if [ "$STATUS" -ne 1 ] || [ "$(wc -l <"$TMP/train.err")" -ne 1 ] || [ "$(cat "$TMP/train.err")" != "$EXPECTED" ]; then
  echo "jitr-train --help exited $STATUS; expected 1 with this one line on stderr:" >&2
  echo "  $EXPECTED" >&2
  echo "its stderr:" >&2
  sed 's/^/  /' "$TMP/train.err" >&2
  exit 1
fi
cat "$TMP/train.err" >&2
rm -rf "$TMP"
echo "slim install checked in $((SECONDS - START)) s (removing the environment included)"
