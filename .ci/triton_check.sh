#!/usr/bin/env bash
# PyTorch as PyPI ships it: its CUDA build on Linux pins a triton release, so every user who
# installs jitr[relevance] from PyPI has triton, and triton's native library crashes a process
# that loads it after TensorFlow's (jitr.tf_cpu.LOADED_BEFORE_TENSORFLOW says why). This
# check, on the .venv of scripts/test.sh (the local CPU torch with triton beside it):
#   1. the triton pinned there is the one PyPI's torch of the same version requires (read from
#      PyPI's metadata with pip's dry run: no download of the GB-sized CUDA wheel);
#   2. the default config's training, tiny (jitr_shapes tiny: TFDS, then the sentence model),
#      runs in one jitr-train process that loads both TensorFlow and triton, exit 0;
#   3. jitr-precompute --estimator=sentence runs in one process that loads both, exit 0.
# Each step prints one line; the first failure stops it with the end of the command's output.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_env.sh
jitr_install_triton
START=$SECONDS
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export HF_HUB_OFFLINE=1

ok() { printf 'ok    %s (%d s)\n' "$1" "$((SECONDS - START))"; }
fail() {
  printf 'FAIL  %s\n' "$1" >&2
  [ -s "${2:-}" ] && grep -v '^import time:' "$2" | tail -n 30 | sed 's/^/      /' >&2
  exit 1
}

if [ "$(uname -s)" != Linux ]; then
  echo "skipped: PyPI's torch pins triton on Linux only" >&2
  exit 0
fi

# 1. The pin. --isolated: PyPI alone (no local wheel folder, index or constraint).
python -m pip install --isolated --quiet --dry-run --ignore-installed --no-deps \
  --only-binary=:all: --report "$TMP/torch.json" "torch==$JITR_TORCH" >"$TMP/pip.log" 2>&1 ||
  fail "pip could not read PyPI's torch==$JITR_TORCH" "$TMP/pip.log"
REQUIRED=$(python - "$TMP/torch.json" <<'EOF'
import json, re, sys
(item,) = json.load(open(sys.argv[1]))["install"]
pins = [r for r in item["metadata"].get("requires_dist", []) if re.match(r"triton\b", r)]
print(re.match(r"triton\s*==\s*([^;\s]+)", pins[0]).group(1) if pins else "none")
EOF
)
[ "$REQUIRED" = "$JITR_TRITON" ] ||
  fail "PyPI's torch==$JITR_TORCH requires triton $REQUIRED; scripts/setup_env.sh pins $JITR_TRITON"
INSTALLED=$(python -c "import importlib.metadata as m; print(m.version('triton'))")
[ "$INSTALLED" = "$JITR_TRITON" ] || fail "the .venv has triton $INSTALLED, not $JITR_TRITON"
ok "triton==$JITR_TRITON is what PyPI's torch==$JITR_TORCH pins, and it is installed"

# One console script in one process, its imports listed (python -X importtime): both
# TensorFlow's and triton's native libraries must have been loaded, and it must exit 0.
both_loaded() { # both_loaded NAME LOG ARGS...
  local name=$1 log=$2
  shift 2
  python -X importtime "$(command -v "$name")" "$@" >"$log" 2>&1 || fail "$name $* exited $?" "$log"
  grep -q '| *tensorflow\.python\._pywrap_tensorflow_internal$' "$log" ||
    fail "$name did not load TensorFlow: the check proves nothing" "$log"
  grep -q '| *triton\._C\.libtriton$' "$log" ||
    fail "$name did not load triton: the check proves nothing" "$log"
}

# 2. The default config, tiny.
both_loaded jitr-train "$TMP/train.log" --config=configs/default.py --workdir="$TMP/run" \
  --config.data_dir="$TMP/data" --config.shapes_config=tiny --config.num_epochs=2 \
  --config.batch_size=16 --config.eval_batch_size=20 --config.model.embed_dim=32 \
  --config.model.word_dim=16 "--config.token_buckets=()" --config.compilation_cache=False
grep -q 'RSUM' "$TMP/train.log" || fail "jitr-train printed no results table" "$TMP/train.log"
ok "jitr-train on configs/default.py (jitr_shapes tiny, sentence relevance) with triton"

# 3. The sentence estimator's records of a precomp caption file (8 images x 5 captions).
python - "$TMP/caps.txt" <<'EOF'
import sys
shapes = ["circle", "square", "triangle", "star"]
colours = ["red", "blue", "green", "yellow"]
with open(sys.argv[1], "w") as f:
  for i in range(8):
    for k in range(5):
      f.write(f"a {colours[i % 4]} {shapes[(i + k) % 4]} next to a {colours[k % 4]} one\n")
EOF
both_loaded jitr-precompute "$TMP/precompute.log" --captions="$TMP/caps.txt" --format=precomp \
  --estimator=sentence --out="$TMP/rel" --noprogress
[ -f "$TMP/rel/relevance.json" ] || fail "jitr-precompute wrote no header" "$TMP/precompute.log"
ok "jitr-precompute --estimator=sentence with triton"
