"""Test-session setup: 8 host CPU devices (for data-parallel tests), TF on CPU, XLA's
LLVM back end at -O0, and one persistent compilation cache for the whole run.

The suite is compile-bound on CPU (tiny arrays, many programs): ``-O0`` cut the CPU time
of the compile-heavy tests by about a third (measured: 36 s -> 24 s for
test_paper_encoders_parallel.py). XLA's own HLO passes still run; values agree with the
default level to float32 rounding, not bit for bit (a SAF step's loss moved by 2e-7
relative), and every program of a test run is compiled at the same level. Set the flag
in ``XLA_FLAGS`` to choose another level (the default is 3). XLA's CPU fusion emitters
are off as well (``--xla_cpu_use_fusion_emitters=false``: fusions go through the older
elemental emitter): measured on one compile-bound test (the SAF step on 1 and 8
devices), 46 s -> 25 s of CPU time; the emitters change code, not the computation.

Many tests compile the same programs: the apps' tiny runs in their subprocesses, and
steps rebuilt from fresh closures in the workers. JAX's persistent cache, in one
temporary folder that the pytest-xdist workers and every subprocess they start inherit
through ``JAX_COMPILATION_CACHE_DIR``, compiles each of them once per run, the one-op
programs of eager code included (reading one back is cheaper than compiling it again:
a ``jitr-eval`` of an imported SGR on a warm cache took 3.2 s of CPU against 3.6 s with
only the compilations slower than 0.1 s stored). Runs of jitr-train with
``config.compilation_cache`` on use it too (the variable wins over ``<data_dir>/jax_cache``),
in a subprocess or in a worker. Set the variable yourself to
keep the cache between runs; it starts empty otherwise and is removed at the end.
"""

import os
import shutil
import tempfile

from jitr.tf_cpu import load_before_tensorflow

_XLA_FLAGS = {
  "--xla_force_host_platform_device_count": "8",
  "--xla_backend_optimization_level": "0",
  "--xla_cpu_use_fusion_emitters": "false",
}
for _name, _value in _XLA_FLAGS.items():
  if _name not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {_name}={_value}").strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

# triton (beside torch, as PyPI's torch brings it) crashes a process that loads it after
# TensorFlow; tests import TensorFlow and torch-based libraries directly too, in any order.
load_before_tensorflow()

_CACHE_OWNER = "JITR_TEST_OWNS_JAX_CACHE"


def pytest_configure(config):
  """The run's compilation cache folder, made by the process that starts the run (the
  xdist controller, or the one pytest process) before any worker starts or imports jax."""
  if hasattr(config, "workerinput") or "JAX_COMPILATION_CACHE_DIR" in os.environ:
    return
  os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitr-test-jax-cache-")
  os.environ[_CACHE_OWNER] = str(os.getpid())


def pytest_unconfigure(config):
  """Removes the folder :func:`pytest_configure` made."""
  if os.environ.get(_CACHE_OWNER) == str(os.getpid()):
    shutil.rmtree(os.environ.pop("JAX_COMPILATION_CACHE_DIR"), ignore_errors=True)
    del os.environ[_CACHE_OWNER]


def pytest_collection_modifyitems(config, items):
  """The ``slow`` tests first (stable order otherwise): pytest-xdist hands tests out in
  collection order, so a long test started last would keep one worker busy while the
  other has nothing left to do."""
  items.sort(key=lambda item: item.get_closest_marker("slow") is None)
