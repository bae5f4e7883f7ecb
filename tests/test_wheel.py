"""The wheel's file list: every file of the jitr package (package data included) is in it,
the configs are in it as jitr/configs, tests and scripts are not, pyproject's package list
names every package folder, its console scripts are those of [project.scripts] and its
metadata carries the version, the extras and the license files.

The wheel is built from a copy of the working tree without build isolation (seconds, no
download); scripts/check_wheel.sh installs it into a fresh environment and runs it."""

import configparser
import pathlib
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")


def _copy_tree(dest: pathlib.Path) -> None:
  """The working tree's tracked and untracked, not ignored files (git), else its files."""
  try:
    listed = subprocess.run(
      ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
      cwd=REPO,
      capture_output=True,
      check=True,
    ).stdout.decode()
  except (OSError, subprocess.CalledProcessError):
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
      if (REPO / name).is_file():
        shutil.copy2(REPO / name, dest / name)
    for name in ("jitr", "configs"):
      shutil.copytree(REPO / name, dest / name, ignore=IGNORED)
    return
  for name in filter(None, listed.split("\0")):
    source = REPO / name
    if source.is_file():  # listed files deleted in the working tree are skipped
      (dest / name).parent.mkdir(parents=True, exist_ok=True)
      shutil.copy2(source, dest / name)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[zipfile.ZipFile, pathlib.Path]:
  """``(the built wheel, the source copy it was built from)``."""
  root = tmp_path_factory.mktemp("wheel")
  src, out = root / "src", root / "dist"
  src.mkdir()
  _copy_tree(src)
  cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
  result = subprocess.run(
    [*cmd, "--quiet", "--wheel-dir", str(out), str(src)], capture_output=True, text=True
  )
  assert result.returncode == 0, f"building the wheel failed:\n{result.stdout}\n{result.stderr}"
  (path,) = out.glob("jitr-*.whl")
  with zipfile.ZipFile(path) as archive:
    yield archive, src


def _dist_info(archive: zipfile.ZipFile) -> str:
  (name,) = {n.split("/")[0] for n in archive.namelist() if n.split("/")[0].endswith(".dist-info")}
  return name


@pytest.mark.slow
def test_every_package_file_is_in_the_wheel(wheel):
  archive, src = wheel
  names = set(archive.namelist())
  package = {
    p.relative_to(src).as_posix()
    for p in (src / "jitr").rglob("*")
    if p.is_file() and "__pycache__" not in p.parts
  }
  assert not package - names, f"files of jitr/ missing from the wheel: {sorted(package - names)}"
  tables = [n for n in names if n.startswith("jitr/losses/calibration_tables/")]
  assert "jitr/losses/calibration_tables/crowdflower-sentence.json" in tables, tables


@pytest.mark.slow
def test_configs_ship_as_jitr_configs_and_tests_and_scripts_stay_out(wheel):
  archive, src = wheel
  names = set(archive.namelist())
  tops = {n.split("/")[0] for n in names}
  assert tops == {"jitr", _dist_info(archive)}, f"top-level entries of the wheel: {sorted(tops)}"
  configs = {f"jitr/configs/{p.name}" for p in (src / "configs").glob("*.py")}
  assert {"jitr/configs/default.py", "jitr/configs/pod_check.py"} <= configs <= names


def test_the_package_list_names_every_package_folder():
  listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
  folders = {
    ".".join(p.parent.relative_to(REPO).parts)
    for p in (REPO / "jitr").rglob("*")
    if p.is_file() and p.suffix in (".py", ".json") and "__pycache__" not in p.parts
  }
  assert listed == folders | {"jitr.configs"}, listed ^ (folders | {"jitr.configs"})
  assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"jitr.configs": "configs"}


@pytest.mark.slow
def test_console_scripts_are_project_scripts(wheel):
  archive, _ = wheel
  entry_points = configparser.ConfigParser(delimiters=["="])
  entry_points.optionxform = str  # keep the scripts' names as written
  entry_points.read_string(archive.read(f"{_dist_info(archive)}/entry_points.txt").decode())
  assert dict(entry_points["console_scripts"]) == PYPROJECT["project"]["scripts"]


@pytest.mark.slow
def test_metadata_version_extras_and_license_files(wheel):
  archive, _ = wheel
  info = _dist_info(archive)
  metadata = archive.read(f"{info}/METADATA").decode()
  headers = [line.split(": ", 1) for line in metadata.split("\n\n", 1)[0].splitlines()]
  values = {}
  for key, value in (h for h in headers if len(h) == 2):
    values.setdefault(key, []).append(value)
  assert values["Version"] == [PYPROJECT["project"]["version"]]
  assert set(values["Provides-Extra"]) == set(PYPROJECT["project"]["optional-dependencies"])
  assert values["License-Expression"] == [PYPROJECT["project"]["license"]]
  for name in ("LICENSE", "NOTICE"):
    assert f"{info}/licenses/{name}" in archive.namelist(), f"{name} is not in the wheel"
