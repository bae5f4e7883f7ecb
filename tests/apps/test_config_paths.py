"""`--config=configs/X.py:ARGS` loads through the jitr-train console script from any directory.

The config files load their siblings (configs/default.py, configs/shapes.py) by path, and
sys.path is left as it is. A ``--config`` path that names no file but is written
``configs/NAME.py`` or ``NAME.py`` is the shipped config file (``jitr.configs``).
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from jitr.papers import config_files as _config_files
from tests.apps.test_one_line_faults import _app

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


# ---------------------------------------------------------------- the shipped configs
@pytest.mark.parametrize("config", ["configs/default.py", "default.py"])
def test_the_shipped_config_is_found_from_a_folder_outside_the_checkout(config, tmp_path):
  """``--config=configs/default.py`` (README's form) names no file in a temporary folder: the
  shipped one loads (the run stops at the zero batch size the override sets, after it)."""
  out = _app(
    "jitr-train", f"--config={config}", "--workdir=run", "--config.batch_size=0", cwd=tmp_path
  )
  assert out.returncode == 1, out.stderr[-2000:]
  assert out.stderr == "jitr-train: error: config.batch_size: expected a whole number >= 1, got 0\n"
  assert os.listdir(tmp_path) == []


@pytest.fixture()
def shipped(tmp_path):
  """A folder of shipped configs (default.py, paper.py) and an empty working folder."""
  folder = tmp_path / "shipped"
  folder.mkdir()
  for name in ("default.py", "paper.py"):
    (folder / name).write_text('"""A config."""\n')
  (tmp_path / "cwd").mkdir()
  return folder


@pytest.mark.parametrize(
  ("value", "expected"),
  [
    ("configs/default.py", "{shipped}/default.py"),
    ("default.py", "{shipped}/default.py"),
    ("./configs//paper.py:f30k,sgr,sndcg", "{shipped}/paper.py:f30k,sgr,sndcg"),
    ("paper.py:", "{shipped}/paper.py:"),
    ("configs/shapes.py", "configs/shapes.py"),  # not shipped here: left to fail as given
    ("other/default.py", "other/default.py"),  # another folder: never the shipped file
    ("/abs/configs/default.py", "/abs/configs/default.py"),
    ("", ""),
  ],
)
def test_a_config_path_that_is_not_there_is_the_shipped_file(shipped, monkeypatch, value, expected):
  monkeypatch.chdir(shipped.parent / "cwd")
  got = _config_files.resolve_config_argument(value, str(shipped))
  assert got == expected.format(shipped=shipped)


def test_an_existing_config_path_wins_over_the_shipped_file(shipped, monkeypatch):
  cwd = shipped.parent / "cwd"
  (cwd / "configs").mkdir()
  (cwd / "configs" / "default.py").write_text("")
  monkeypatch.chdir(cwd)
  assert _config_files.resolve_config_argument("configs/default.py:x", str(shipped)) == (
    "configs/default.py:x"
  )
  assert (
    _config_files.resolve_config_argument("default.py", str(shipped)) == f"{shipped}/default.py"
  )


def test_config_arguments_are_resolved_in_both_flag_forms_and_not_after_the_end(
  shipped, monkeypatch
):
  monkeypatch.chdir(shipped.parent / "cwd")
  argv = ["jitr-train", "--config=default.py", "-config", "paper.py:a", "--other=default.py"]
  argv += ["--", "--config=default.py"]
  assert _config_files.resolve_config_arguments(argv, ["config"], str(shipped)) == [
    "jitr-train",
    f"--config={shipped}/default.py",
    "-config",
    f"{shipped}/paper.py:a",
    "--other=default.py",
    "--",
    "--config=default.py",
  ]


def test_the_shipped_configs_are_jitr_configs_or_the_checkout_s(monkeypatch):
  spec = importlib.util.find_spec("jitr.configs")  # None in a checkout not installed
  installed = list(spec.submodule_search_locations)[0] if spec else str(REPO / "configs")
  assert _config_files.shipped_configs_dir() == installed
  monkeypatch.setattr(_config_files.importlib.util, "find_spec", lambda name: None)
  assert _config_files.shipped_configs_dir() == str(REPO / "configs")
