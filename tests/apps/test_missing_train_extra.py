"""Without the ``train`` extra, the apps' console scripts stop with one line naming the
missing modules and the install command, not a ModuleNotFoundError traceback.

The extra's modules are hidden by a ``sys.meta_path`` finder that refuses them. ``absl``
cannot be hidden this way: chex, a core dependency that ``import jitr`` loads, imports
it; ``ml_collections`` and ``optax`` are the train extra's alone.
"""

import os
import pathlib
import shutil
import subprocess
import sys

HIDDEN = ("ml_collections", "optax")  # in the order jitr.apps checks them

MESSAGE = (
  "jitr's apps need the train extra, which is not installed (missing: ml_collections, optax); "
  "install it with: pip install 'jitr[train]'"
)

_PROBE = """
import importlib.util
import sys

HIDDEN = {hidden!r}


class HideModules:
  def find_spec(self, name, path, target=None):
    if name.partition(".")[0] in HIDDEN:
      raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    return None


sys.meta_path.insert(0, HideModules())
for name in HIDDEN:
  try:
    spec = importlib.util.find_spec(name)
  except ModuleNotFoundError:
    spec = None
  assert spec is None, name
sys.argv[0] = {argv0!r}
from jitr.apps.train import run

run()
"""


def _probe(argv0: str) -> subprocess.CompletedProcess:
  """``from jitr.apps.train import run; run()`` with :data:`HIDDEN` refused and
  ``sys.argv[0] = argv0``, in a fresh interpreter."""
  code = _PROBE.format(hidden=HIDDEN, argv0=argv0)
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_console_script_without_the_extra_prints_one_line():
  out = _probe("/some/bin/jitr-train")
  assert out.returncode == 1, out.stderr[-2000:]
  assert "Traceback" not in out.stderr, out.stderr[-2000:]
  assert out.stderr == f"jitr-train: error: {MESSAGE}\n"


def test_import_without_the_extra_raises_module_not_found():
  out = _probe("-c")
  assert out.returncode == 1, out.stderr[-2000:]
  assert out.stderr.rstrip().splitlines()[-1] == f"ModuleNotFoundError: {MESSAGE}"


def test_console_script_with_the_extra_shows_its_help():
  exe = shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  out = subprocess.run([exe, "--help"], env=env, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "error:" not in out.stderr, out.stderr[-2000:]
  assert "--config" in out.stdout + out.stderr
