"""`--config=configs/X.py:ARGS` loads through the jitr-train console script from any directory.

The config files load their siblings (configs/default.py, configs/shapes.py) by path; `configs`
is a folder of the checkout, not an installed package, and sys.path is left as it is.
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _jitr_train(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
  exe = shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))
  # No PYTHONPATH: the installed console script must find the configs on its own.
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("where", ["root", "elsewhere"])
def test_paper_config_loads_through_the_console_script(where, tmp_path):
  """The paper config loads (siblings imported) and stops at its first real check: the
  missing precomp folder, named in the error."""
  cwd = REPO if where == "root" else tmp_path
  config = "configs/paper.py" if where == "root" else str(REPO / "configs" / "paper.py")
  out = _jitr_train(f"--config={config}:f30k,vsepp,sndcg", f"--workdir={tmp_path / 'run'}", cwd=cwd)
  assert out.returncode != 0
  assert "ModuleNotFoundError" not in out.stderr, out.stderr[-2000:]
  assert "precomp_root" in out.stderr, out.stderr[-2000:]


@pytest.mark.parametrize(
  ("config", "override", "stops_at"),
  [
    ("configs/paper.py:coco,sgr,lseh", "--config.seed=1", "precomp_root"),
    ("configs/paper.py:f30k,vsrn,sndcg", "--config.seed=1", "precomp_root"),
    # a zero count stops the run at the up-front checks, after the config loaded
    ("configs/shapes.py:sndcg,sgr", "--config.batch_size=0", "batch_size"),
  ],
)
def test_network_configs_load_through_the_console_script(config, override, stops_at, tmp_path):
  """The documented `NAME,MODEL` / `DATA,MODEL,LOSS` forms for SGR/SAF/VSRN parse through the
  console script from another directory (docs/training.md's commands, with a check that
  fails before any data is built)."""
  out = _jitr_train(
    f"--config={REPO / config}",
    f"--workdir={tmp_path / 'run'}",
    override,
    cwd=tmp_path,
  )
  assert out.returncode == 1, out.stderr[-2000:]
  assert out.stderr.strip().startswith("jitr-train: error:"), out.stderr[-2000:]
  assert stops_at in out.stderr, out.stderr[-2000:]
  assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["shapes", "paper"])
def test_config_files_load_by_path_without_touching_sys_path(name):
  """Loaded by path, as jitr-train does, a config file builds its default config and leaves
  sys.path as it was."""
  before = list(sys.path)
  spec = importlib.util.spec_from_file_location(f"config_{name}", REPO / "configs" / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  assert module.get_config().dataset
  assert sys.path == before
