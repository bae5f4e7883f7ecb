#!/usr/bin/env bash
# jitr from its wheel alone: build the wheel of the working tree, install it with the extras
# the apps need (jitr[train,relevance]) into a fresh virtual environment, and check, from a
# directory outside the repository, that
#   - `import jitr` comes from the environment's site-packages (nothing from the checkout),
#     with the configs as jitr.configs (no top-level `configs` package);
#   - the package data is installed (jitr/losses/calibration_tables/*.json) and every
#     shipped table loads (`isotonic:crowdflower-sentence` among them);
#   - the README's functional API example runs (the first ```python block under the
#     heading "## The functional API"; the README's first ```python block if that heading
#     is gone);
#   - configs/shapes.py:calibrated as the wheel installed it (jitr/configs), loaded by path
#     as `jitr-train --config=` loads it, passes the train-config checks and its calibrated
#     objective gives a finite loss;
#   - every console script of [project.scripts] answers --help (exit 0, its flags listed);
#   - `jitr-train --config=configs/pod_check.py --help` reads the config the wheel installed.
# One line per check; the first failure stops it with a message (exit 1). torch==2.13.0 goes
# in first: it is the CPU wheel on this disk (any other torch requirement would download a
# CUDA build). PYTHON names the interpreter that builds the environments (default python3).
# Everything lives in a temporary directory, removed at the end.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
START=$SECONDS
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
LOG="$TMP/pip.log"
unset PYTHONPATH PYTHONHOME
export PYTHONWARNINGS=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2} TF_ENABLE_ONEDNN_OPTS=${TF_ENABLE_ONEDNN_OPTS:-0}

ok() { printf 'ok    %s (%d s)\n' "$1" "$((SECONDS - START))"; }
fail() {
  printf 'FAIL  %s\n' "$1" >&2
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    echo "      the end of its output ($2):" >&2
    tail -n 40 "$2" | sed 's/^/      /' >&2
  fi
  exit 1
}
pip_in() { # pip_in VENV ARGS...: pip install into VENV, its output appended to $LOG
  local venv=$1
  shift
  "$venv/bin/python" -m pip install --quiet "$@" >>"$LOG" 2>&1 ||
    fail "pip install $* failed" "$LOG"
}

# A copy of the working tree (tracked and untracked, not ignored files): building the wheel
# writes build/ and *.egg-info next to the sources, so not into the checkout.
mkdir "$TMP/src" "$TMP/dist" "$TMP/elsewhere"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$TMP/src"
[ -f "$TMP/src/pyproject.toml" ] || fail "could not copy the working tree of $REPO (git ls-files)"

# `python -m build` from PYTHON if it has it, else from a small environment of its own.
BUILD_PY=$PYTHON
if ! "$PYTHON" -m build --version >/dev/null 2>&1; then
  "$PYTHON" -m venv "$TMP/tools" || fail "$PYTHON -m venv failed"
  pip_in "$TMP/tools" build
  BUILD_PY="$TMP/tools/bin/python"
fi
"$BUILD_PY" -m build --wheel --outdir "$TMP/dist" "$TMP/src" >"$TMP/build.log" 2>&1 ||
  fail "python -m build --wheel failed" "$TMP/build.log"
WHEELS=("$TMP"/dist/jitr-*.whl)
[ "${#WHEELS[@]}" = 1 ] && [ -f "${WHEELS[0]}" ] || fail "expected one jitr wheel in $TMP/dist"
WHEEL=${WHEELS[0]}
ok "built $(basename "$WHEEL")"

"$PYTHON" -m venv "$TMP/venv" || fail "$PYTHON -m venv failed"
PY="$TMP/venv/bin/python"
# --no-compile: no .pyc for the whole of torch and TensorFlow (the few modules the checks
# import are compiled when imported), half the files to write and to remove.
pip_in "$TMP/venv" --no-compile "torch==2.13.0"
pip_in "$TMP/venv" --no-compile "jitr[train,relevance] @ file://$WHEEL"
ok "installed torch==2.13.0, then jitr[train,relevance] from the wheel into a fresh venv"

cd "$TMP/elsewhere"
# run_check NAME PYTHON-SOURCE [ARGS...]: the source runs in the fresh venv, from here
run_check() {
  local name=$1 source=$2
  shift 2
  "$PY" -c "$source" "$@" >"$TMP/check.log" 2>&1 || fail "$name" "$TMP/check.log"
  ok "$name: $(tail -n 1 "$TMP/check.log")"
}

run_check "import jitr from the venv's site-packages" '
import pathlib, sys, sysconfig
import jitr
site = pathlib.Path(sysconfig.get_paths()["purelib"]).resolve()
where = pathlib.Path(jitr.__file__).resolve()
assert site in where.parents, f"jitr imported from {where}, not from {site}"
top = site / "configs"
assert not top.exists(), f"{top}: the configs belong in jitr/configs"
shipped = sorted(p.name for p in (where.parent / "configs").glob("*.py"))
assert {"default.py", "paper.py", "shapes.py", "pod_check.py"} <= set(shipped), shipped
names = " ".join(shipped)
print(f"{where} (jitr {jitr.__version__}; configs {names})")
'

run_check "package data: the calibration tables" '
import pathlib
from jitr.losses import calibration
tables = sorted(pathlib.Path(calibration.TABLES_DIR).glob("*.json"))
assert tables, f"no calibration table in {calibration.TABLES_DIR}"
names = calibration.shipped_tables()
assert "crowdflower-sentence" in names, names
for name in names:
  calibration.load_table(name)
chain = calibration.parse_calibration("isotonic:crowdflower-sentence")
print(f"{len(tables)} table(s) in {calibration.TABLES_DIR} load; chain {chain.spec!r} parsed")
'

# The README's example: the python block under "## The functional API" (the first python
# block of the README if that heading is missing); fenced as ```python ... ```.
"$PY" - "$REPO/README.md" "$TMP/example.py" <<'EOF' >"$TMP/extract.log" 2>&1 ||
import pathlib, re, sys

text = pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
heading = re.search(r"^## The functional API\s*$", text, flags=re.M)
blocks = re.findall(r"^```python[ \t]*\n(.*?)^```", text[heading.end() if heading else 0 :], flags=re.M | re.S)
if not blocks:
  sys.exit("README.md has no ```python block" + (" under '## The functional API'" if heading else ""))
pathlib.Path(sys.argv[2]).write_text(blocks[0], encoding="utf-8")
print(f"{len(blocks[0].splitlines())} lines" + ("" if heading else " (no '## The functional API' heading: the first block)"))
EOF
  fail "extracting README.md's functional API example" "$TMP/extract.log"
"$PY" "$TMP/example.py" >"$TMP/check.log" 2>&1 ||
  fail "README.md's functional API example ($(cat "$TMP/extract.log")) failed" "$TMP/check.log"
ok "README.md's functional API example runs ($(cat "$TMP/extract.log")): $(tail -n 1 "$TMP/check.log")"

run_check "configs/shapes.py:calibrated as the wheel installed it" '
import pathlib
import jax.numpy as jnp
from absl import flags
from ml_collections import config_flags
from jitr.losses import objective
from jitr.experiment.run_config import check_train_config
import jitr.configs
holder = config_flags.DEFINE_config_file("config")
shapes = pathlib.Path(jitr.configs.__file__).parent / "shapes.py"
flags.FLAGS(["jitr-train", f"--config={shapes}:calibrated"])
config = holder.value
check_train_config(config)
loss_fn = objective(config.loss, steps_per_epoch=1, calibration=config.calibration)
positives = jnp.eye(4, dtype=bool)
sim = jnp.linspace(-1.0, 1.0, 16).reshape(4, 4)
graded = {name: jnp.where(positives, 1.0, jnp.linspace(0.3, 0.8, 16).reshape(4, 4)) for name in config.graded}
total, parts = loss_fn(sim, positives=positives, graded=graded, step=jnp.asarray(1))
assert bool(jnp.isfinite(total)), parts
plain, _ = objective(config.loss, steps_per_epoch=1)(sim, positives=positives, graded=graded, step=jnp.asarray(1))
assert float(plain) != float(total), "the calibration changed nothing"
print(f"calibration {dict(config.calibration)}: loss {float(total):.4f} (uncalibrated {float(plain):.4f})")
'

# Every console script of [project.scripts].
SCRIPTS=$("$PY" -c '
import sys, tomllib
print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["scripts"]))
' "$REPO/pyproject.toml") || fail "reading [project.scripts] of $REPO/pyproject.toml"
[ -n "$SCRIPTS" ] || fail "no console script in [project.scripts]"
for script in $SCRIPTS; do
  [ -x "$TMP/venv/bin/$script" ] || fail "console script $script is not installed in the venv"
  "$TMP/venv/bin/$script" --help >"$TMP/help.log" 2>&1 || fail "$script --help exited $?" "$TMP/help.log"
  grep -q -- '^ *--' "$TMP/help.log" || fail "$script --help lists no flags" "$TMP/help.log"
  ok "$script --help ($(grep -c -- '^ *--' "$TMP/help.log") flags listed)"
done

# A shipped config by its documented name, from outside the checkout: --help lists the
# fields of the file the wheel installed.
"$TMP/venv/bin/jitr-train" --config=configs/pod_check.py --help >"$TMP/help.log" 2>&1 ||
  fail "jitr-train --config=configs/pod_check.py --help exited $?" "$TMP/help.log"
grep -q -- "^--config fields of .*/site-packages/jitr/configs/pod_check.py " "$TMP/help.log" ||
  fail "jitr-train did not read configs/pod_check.py from the wheel" "$TMP/help.log"
grep -q "^  shapes_config: 'tiny'" "$TMP/help.log" ||
  fail "jitr-train --help did not list pod_check.py's fields" "$TMP/help.log"
ok "jitr-train --config=configs/pod_check.py finds the config the wheel installed"

CHECKED=$((SECONDS - START))
cd "$REPO"
rm -rf "$TMP"
echo "the wheel checked in $CHECKED s, the environment removed after $((SECONDS - START)) s"
