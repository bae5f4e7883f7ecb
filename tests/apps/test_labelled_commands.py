"""docs/labelled.md's commands, run as written on generated folders with the real widths and
classes of Wikipedia and Pascal (small row counts): the download check prints each split's
shapes and class counts, jitr-train trains CMAL²R's paper config (one epoch of narrower
branches: the test's one change) and prints the class MAP columns, and jitr-eval reports
the same class MAP."""

import contextlib
import io
import json
import os
import re
import shlex

import pytest

from tests.apps.test_import_official import REPO, console
from tests.labelled_folders import PASCAL, WIKI, write_labelled

PAGE = REPO / "docs" / "labelled.md"
PARTS = ("images", "texts", "labels")
# The test's one change to the documented run: one epoch of narrower branches (the paper's
# 2048-wide hidden layers make checkpoints of some 100 MB to write and read back).
SMALL_RUN = (
  "--config.num_epochs=1",
  "--config.model.image_hidden=(64,)",
  "--config.model.text_hidden=(64,)",
  "--config.model.embed_dim=32",
)


def section(heading: str) -> str:
  """The text of docs/labelled.md's ``## heading`` section."""
  after = PAGE.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1]
  return re.split(r"\n## ", after, maxsplit=1)[0]


def documented_commands() -> list[list[str]]:
  """The "Train and evaluate" commands, each split as the shell would."""
  (block,) = re.findall(r"```bash\n(.*?)```", section("Train and evaluate"), re.S)
  return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines()]


@pytest.fixture
def folders(tmp_path):
  """``tmp_path/data/wiki`` (300 train pairs: 200 held out for validation, 100 trained on,
  one batch) and ``tmp_path/data/pascal``."""
  write_labelled(tmp_path / "data" / "wiki", WIKI, {"train": 300, "test": 60}, noise=3.0)
  write_labelled(tmp_path / "data" / "pascal", PASCAL, {"train": 30, "test": 20}, seed=1)
  return tmp_path


def test_the_download_check_prints_shapes_and_class_counts(folders, monkeypatch):
  (block,) = re.findall(r"```python\n(.*?)```", section("The data"), re.S)
  monkeypatch.chdir(folders)
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    exec(compile(block, str(PAGE), "exec"), {})
  lines = out.getvalue().splitlines()
  assert [line.split(" (")[0] for line in lines] == [
    "wiki train", "wiki test", "pascal train", "pascal test"
  ]  # fmt: skip
  assert lines[0].startswith("wiki train (300, 4096) (300, 100) (300,) [")
  assert lines[3].startswith("pascal test (20, 512) (20, 399) (20, 20) [")
  assert sum(json.loads(lines[0].split(") ", 3)[-1])) == 300


def test_the_documented_commands_train_and_evaluate_with_class_map(folders):
  commands = documented_commands()
  assert [c[0] for c in commands] == ["jitr-train", "jitr-eval"]
  trained = console(*commands[0], *SMALL_RUN, cwd=folders)
  assert trained.returncode == 0, trained.stderr[-3000:]
  assert "| i2t class MAP | t2i class MAP | class MAP |" in trained.stdout
  evaluated = console(*commands[1], cwd=folders)
  assert evaluated.returncode == 0, evaluated.stderr[-3000:]
  workdir = folders / "workdirs" / "wiki_cmal2r"
  test = json.loads((workdir / "metrics.json").read_text())
  report = json.loads((workdir / "eval_test" / "metrics.json").read_text())
  for key in ("class/i2t/mAP", "class/t2i/mAP", "class/mAP", "full/rsum"):
    assert report[key] == pytest.approx(test[key], abs=1e-6), key
  assert 0 < report["class/mAP"] <= 100
  assert "## class" in (workdir / "eval_test" / "metrics.md").read_text()
  config = json.loads((workdir / "config.json").read_text())
  assert config["labelled"]["folder"] == os.path.join(folders, "data", "wiki")
  pinned = json.loads((workdir / "inputs.json").read_text())["inputs"]
  files = {f"wiki/{split}_{part}.npy" for split in ("train", "test") for part in PARTS}
  assert files <= set(pinned) and "wiki/val_images.npy" not in pinned  # held out of train
