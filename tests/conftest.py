"""Test-session setup: 8 host CPU devices (for data-parallel tests), TF on CPU, and XLA's
LLVM back end at -O0.

The suite is compile-bound on CPU (tiny arrays, many programs): ``-O0`` cut the CPU time
of the compile-heavy tests by about a third (measured: 36 s -> 24 s for
test_paper_encoders_parallel.py). XLA's own HLO passes still run; values agree with the
default level to float32 rounding, not bit for bit (a SAF step's loss moved by 2e-7
relative), and every program of a test run is compiled at the same level. Set the flag
in ``XLA_FLAGS`` to choose another level (the default is 3).
"""

import os

_XLA_FLAGS = {
  "--xla_force_host_platform_device_count": "8",
  "--xla_backend_optimization_level": "0",
}
for _name, _value in _XLA_FLAGS.items():
  if _name not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {_name}={_value}").strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_collection_modifyitems(config, items):
  """The ``slow`` tests first (stable order otherwise): pytest-xdist hands tests out in
  collection order, so a long test started last would keep one worker busy while the
  other has nothing left to do."""
  items.sort(key=lambda item: item.get_closest_marker("slow") is None)
