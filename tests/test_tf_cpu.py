"""``jitr.tf_cpu.import_tf`` in a fresh process: TensorFlow's start-up lines (oneDNN's
notice, C++ INFO logs) stay off stderr unless the user set the variables, and TensorFlow
sees no GPU. (One process: importing TensorFlow takes seconds.)"""

import os
import subprocess
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROGRAM = (
  "import os; from jitr.tf_cpu import import_tf; tf = import_tf(); "
  "print(os.environ['TF_ENABLE_ONEDNN_OPTS'], os.environ['TF_CPP_MIN_LOG_LEVEL'], "
  "len(tf.config.get_visible_devices('GPU')))"
)


def _run(**env: str) -> subprocess.CompletedProcess:
  base = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
  return subprocess.run(
    [sys.executable, "-c", PROGRAM],
    env={**base, "PYTHONPATH": REPO, **env},
    capture_output=True,
    text=True,
    timeout=120,
  )


def test_tensorflow_starts_quietly_and_sees_no_gpu():
  # the user's own value of a variable wins (setdefault): TF_CPP_MIN_LOG_LEVEL=3 stays
  done = _run(TF_CPP_MIN_LOG_LEVEL="3")
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ["0", "3", "0"]
  assert "oneDNN" not in done.stderr and "port.cc" not in done.stderr, done.stderr
