"""``jitr.folder_swap.atomic_folder``: the new folder appears whole, a failed block leaves
the previous one (or none) and no temporary folder."""

import os

import pytest

from jitr.folder_swap import atomic_folder
from tests.fake_bucket import fake_bucket


def _write(folder, name, text):
  with open(os.path.join(folder, name), "w") as f:
    f.write(text)


def test_a_folder_with_contents_is_replaced_whole(tmp_path):
  target = tmp_path / "report"
  target.mkdir()
  _write(target, "metrics.json", "old")
  _write(target, "plot.png", "old plot")
  with atomic_folder(target) as tmp:
    _write(tmp, "metrics.json", "new")
    assert (target / "metrics.json").read_text() == "old"  # nothing seen before the end
  assert os.listdir(target) == ["metrics.json"]  # the old plot went with the old folder
  assert (target / "metrics.json").read_text() == "new"
  assert os.listdir(tmp_path) == ["report"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_a_failed_block_leaves_the_previous_folder_and_no_temporary_one(tmp_path, error):
  target = tmp_path / "report"
  target.mkdir()
  _write(target, "metrics.json", "old")
  with pytest.raises(error), atomic_folder(target) as tmp:
    _write(tmp, "metrics.json", "half")
    raise error
  assert (target / "metrics.json").read_text() == "old"
  assert os.listdir(tmp_path) == ["report"]
  with pytest.raises(error), atomic_folder(tmp_path / "new") as tmp:
    raise error
  assert os.listdir(tmp_path) == ["report"]


def test_a_bucket_folder_is_uploaded_when_the_block_completes(tmp_path):
  with fake_bucket(tmp_path / "bucket") as bucket:
    with pytest.raises(KeyboardInterrupt), atomic_folder(f"{bucket}/run/report") as tmp:
      _write(tmp, "metrics.json", "half")
      raise KeyboardInterrupt
    assert not (tmp_path / "bucket" / "run").exists()
    with atomic_folder(f"{bucket}/run/report") as tmp:
      os.mkdir(os.path.join(tmp, "plots"))
      _write(tmp, "metrics.json", "new")
      _write(os.path.join(tmp, "plots"), "a.png", "png")
  report = tmp_path / "bucket" / "run" / "report"
  assert (report / "metrics.json").read_text() == "new"
  assert (report / "plots" / "a.png").read_text() == "png"
