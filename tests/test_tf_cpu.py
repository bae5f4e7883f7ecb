"""``jitr.tf_cpu.import_tf`` in a fresh process: TensorFlow's start-up lines (oneDNN's
notice, C++ INFO logs) stay off stderr unless the user set the variables, TensorFlow sees
no GPU, and the modules that crash when loaded after it (triton) were loaded before it.
(One process: importing TensorFlow takes seconds.) Where TensorFlow came first, they are
hidden instead (in this process, with a stand-in module)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# A module standing in for triton: it records, when imported, whether TensorFlow was loaded.
_STAND_IN = "import sys\nTF_BEFORE = 'tensorflow' in sys.modules\n"

PROGRAM = """
import importlib.util, os, sys
from jitr import tf_cpu
tf_cpu.LOADED_BEFORE_TENSORFLOW += ("stand_in_native", "no_such_module_here")
tf = tf_cpu.import_tf()
print(os.environ["TF_ENABLE_ONEDNN_OPTS"], os.environ["TF_CPP_MIN_LOG_LEVEL"],
      len(tf.config.get_visible_devices("GPU")))
import stand_in_native
print("stand-in loaded before TensorFlow:", not stand_in_native.TF_BEFORE)
if importlib.util.find_spec("triton") is not None:
  import triton  # crashes (SIGSEGV) if its library is loaded after TensorFlow's
  print("triton", triton.__version__)
"""


def test_tensorflow_starts_quietly_sees_no_gpu_and_comes_after_triton(tmp_path):
  (tmp_path / "stand_in_native.py").write_text(_STAND_IN)
  base = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
  # the user's own value of a variable wins (setdefault): TF_CPP_MIN_LOG_LEVEL=3 stays
  done = subprocess.run(
    [sys.executable, "-c", PROGRAM],
    env={**base, "PYTHONPATH": os.pathsep.join([REPO, str(tmp_path)]), "TF_CPP_MIN_LOG_LEVEL": "3"},
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
  lines = done.stdout.splitlines()
  assert lines[0].split() == ["0", "3", "0"]
  assert "oneDNN" not in done.stderr and "port.cc" not in done.stderr, done.stderr
  assert lines[1] == "stand-in loaded before TensorFlow: True"
  # scripts/test.sh installs triton beside torch on Linux, as PyPI's torch does
  if sys.platform.startswith("linux"):
    assert lines[2].startswith("triton "), done.stdout


def test_modules_tensorflow_breaks_are_hidden_when_tensorflow_came_first(monkeypatch, tmp_path):
  import types
  import warnings

  from jitr import tf_cpu

  (tmp_path / "stand_in_native.py").write_text(_STAND_IN)
  monkeypatch.syspath_prepend(str(tmp_path))  # installed, not loaded
  monkeypatch.setattr(tf_cpu, "LOADED_BEFORE_TENSORFLOW", ("stand_in_native", "no_such_module"))
  monkeypatch.setitem(sys.modules, "stand_in_native", None)
  monkeypatch.delitem(sys.modules, "stand_in_native")  # restored (absent) after the test
  loaded_tf = sys.modules.get("tensorflow", types.ModuleType("tensorflow"))
  monkeypatch.setitem(sys.modules, "tensorflow", loaded_tf)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert tf_cpu.hide_modules_tensorflow_breaks() == ["stand_in_native"]
    assert tf_cpu.load_before_tensorflow() == []  # too late: TensorFlow is loaded
  assert sys.modules["stand_in_native"] is None
  [warning] = caught
  assert "stand_in_native is installed but TensorFlow was imported before it" in str(
    warning.message
  )
  with pytest.raises(ImportError):
    import stand_in_native  # noqa: F401
