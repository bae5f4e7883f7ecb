"""Every config file loads as jitr-train loads it, by its path, from another folder and with
neither the checkout nor PYTHONPATH on ``sys.path`` (a console script's): a config file that
imports ``configs`` as a package fails on a user's machine, so siblings load through
``jitr.config_files.sibling_config``."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOAD = """
import importlib.util, sys
for path in sys.argv[1:]:
  spec = importlib.util.spec_from_file_location("config_under_test", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
print(len(sys.argv) - 1)
"""


def test_every_config_file_loads_by_path_outside_the_checkout(tmp_path):
  files = sorted(str(p) for p in (REPO / "configs").glob("*.py") if p.name != "__init__.py")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  done = subprocess.run(
    [sys.executable, "-P", "-c", LOAD, *files],
    cwd=tmp_path,
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert done.returncode == 0, done.stderr[-2000:]
  assert int(done.stdout) == len(files) >= 5
