"""jitr-check-data: the table of a usable ``*_precomp`` folder, one line naming the file
for an unusable one, features read memory-mapped (jitr.data.precomp_check)."""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from jitr.data import precomp
from jitr.data.precomp_check import (
  SplitCheck,
  check_precomp_folder,
  format_check_table,
  official_loader_notes,
)
from tests.fake_bucket import serve_in_subprocesses
from tests.file_fixtures import write_precomp

REPO = pathlib.Path(__file__).resolve().parents[2]
HEADER = (
  "| split | images | feature rows | rows per image | regions × dims | dtype | captions "
  "| captions per image | standard images | matches | non-finite |"
)
ROWS = [
  "| train | 20 | 20 | 1 | 36 × 2048 | float32 | 100 | 5 | unknown | unknown | 0 |",
  "| dev | 4 | 4 | 1 | 36 × 2048 | float32 | 20 | 5 | unknown | unknown | 0 |",
  "| test | 4 | 4 | 1 | 36 × 2048 | float32 | 20 | 5 | unknown | unknown | 0 |",
]
SHORT_DEV = (
  "- dev: 20 captions; the official loaders set the dev length to 5,000 captions and would "
  "read past its end"
)


def _check_data(root, cwd, *, hook: str | None = None) -> subprocess.CompletedProcess:
  """``jitr-check-data --precomp_root=ROOT --dataset=f30k_precomp`` run from ``cwd`` (with
  the folder ``hook`` first on ``PYTHONPATH``, when given)."""
  exe = shutil.which("jitr-check-data") or str(
    pathlib.Path(sys.executable).with_name("jitr-check-data")
  )
  path = os.pathsep.join([*([hook] if hook else []), str(REPO)])
  env = {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "3"}
  args = [exe, f"--precomp_root={root}", "--dataset=f30k_precomp"]
  return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _refused(root, cwd, message: str) -> None:
  out = _check_data(root, cwd)
  assert out.returncode == 1, out.stderr[-2000:]
  assert "Traceback" not in out.stderr, out.stderr[-2000:]
  assert out.stdout == ""
  assert out.stderr == f"jitr-check-data: error: {message}\n"


@pytest.fixture
def folder(tmp_path) -> pathlib.Path:
  """A usable ``tmp_path/data/f30k_precomp``: 20 train, 4 dev and 4 test images."""
  (tmp_path / "elsewhere").mkdir()
  return write_precomp(tmp_path / "data")


def test_a_usable_folder_prints_one_row_per_split(folder, tmp_path):
  out = _check_data(tmp_path / "data", tmp_path / "elsewhere")
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.splitlines() == [
    HEADER,
    "|---|---|---|---|---|---|---|---|---|---|---|",
    *ROWS,
    "",
    "The official loaders (VSE++, SCAN, SGRAF, VSRN, VSE∞):",
    SHORT_DEV,
  ]


def test_a_folder_in_a_bucket_prints_the_rows_of_the_local_folder(folder, tmp_path):
  hook = serve_in_subprocesses(tmp_path / "hook", tmp_path)  # gs://bucket is tmp_path
  out = _check_data("gs://bucket/data", tmp_path / "elsewhere", hook=hook)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.splitlines()[:5] == [
    HEADER,
    "|---|---|---|---|---|---|---|---|---|---|---|",
    *ROWS,
  ]
  assert os.listdir(tmp_path / "elsewhere") == []  # no URL was handed to os


def test_one_feature_row_per_caption_is_usable(folder, tmp_path):
  feats = np.load(folder / "train_ims.npy")
  np.save(folder / "train_ims.npy", np.repeat(feats, 5, axis=0))
  out = _check_data(tmp_path / "data", tmp_path / "elsewhere")
  assert out.returncode == 0, out.stderr[-2000:]
  lines = out.stdout.splitlines()
  assert (
    lines[2] == "| train | 20 | 100 | 5 | 36 × 2048 | float32 | 100 | 5 | unknown | unknown | 0 |"
  )
  assert lines[3:5] == ROWS[1:]
  assert lines[-2:] == [
    "- train: one feature row per caption; the official loaders read row j for caption j "
    "(`im_div = 1`), jitr keeps every 5th row",
    SHORT_DEV,
  ]


def test_a_missing_split_file_is_one_line(folder, tmp_path):
  (folder / "test_caps.txt").unlink()
  _refused(
    tmp_path / "data",
    tmp_path / "elsewhere",
    f"{folder}/test_caps.txt: no such file; expected the 'test' split's 5 captions per "
    "image, one per line",
  )


def test_four_captions_per_image_is_one_line(folder, tmp_path):
  lines = (folder / "dev_caps.txt").read_text().splitlines()
  (folder / "dev_caps.txt").write_text("\n".join(lines[:16]) + "\n")
  _refused(
    tmp_path / "data",
    tmp_path / "elsewhere",
    f"{folder}/dev_caps.txt: 16 captions for the 4 feature rows of {folder}/dev_ims.npy; "
    "expected 5 captions per image (20 captions), or one per row when the features store "
    "one row per caption",
  )


def test_a_wrong_feature_size_is_one_line(folder, tmp_path):
  np.save(folder / "train_ims.npy", np.zeros((20, 36, 1024), np.float32))
  _refused(
    tmp_path / "data",
    tmp_path / "elsewhere",
    f"{folder}/train_ims.npy: features have shape (20, 36, 1024); expected [N, 36, 2048] "
    "(feature dim 2048)",
  )


def test_a_nan_is_one_line_naming_the_file_and_its_index(folder, tmp_path):
  feats = np.load(folder / "train_ims.npy")
  feats[7, 3, 11] = np.nan
  np.save(folder / "train_ims.npy", feats)
  _refused(
    tmp_path / "data",
    tmp_path / "elsewhere",
    f"{folder}/train_ims.npy: feature [7, 3, 11] is nan (image 7); expected finite values "
    "(1 non-finite in rows 0..19)",
  )


def test_the_library_returns_one_check_per_split_with_the_standard_count(tmp_path):
  f30k = write_precomp(tmp_path)
  coco = tmp_path / "coco_precomp"
  shutil.copytree(f30k, coco)
  for suffix in ("ims.npy", "caps.txt"):
    shutil.copy(coco / f"test_{suffix}", coco / f"testall_{suffix}")
  checks = check_precomp_folder(tmp_path, "coco_precomp")
  assert [c.split for c in checks] == ["train", "dev", "test", "testall"]
  assert checks[0] == SplitCheck(
    dataset="coco",
    split="train",
    images=20,
    feature_rows=20,
    rows_per_image=1,
    num_regions=36,
    feature_dim=2048,
    dtype="float32",
    captions=100,
    standard_images=None,
  )
  assert (checks[3].standard_images, checks[3].matches_standard) == (5000, False)
  assert format_check_table(checks).splitlines()[-1] == (
    "| testall | 4 | 4 | 1 | 36 × 2048 | float32 | 20 | 5 | 5,000 (COCO) | no | 0 |"
  )


def test_the_official_dev_cut_is_noted_for_a_dev_split_over_5000_captions():
  dev = SplitCheck("f30k", "dev", 1014, 1014, 1, 36, 2048, "float32", 5070, None)
  assert official_loader_notes([dev]) == [
    "dev: the official loaders validate on its first 5,000 captions only "
    "(`self.length = 5000`): the first 1,000 of its 1,014 images"
  ]
  exact = SplitCheck("f30k", "dev", 1000, 1000, 1, 36, 2048, "float32", 5000, None)
  assert official_loader_notes([exact]) == []


def test_features_are_memory_mapped_and_checked_as_a_memmap(tmp_path, monkeypatch):
  write_precomp(tmp_path)
  opened, checked = [], []
  load, check_finite = np.load, precomp.check_finite_features

  def spy_load(path, *args, **kwargs):
    opened.append((os.path.basename(path), kwargs.get("mmap_mode")))
    return load(path, *args, **kwargs)

  def spy_check_finite(feats, path, **kwargs):
    checked.append(type(feats))
    return check_finite(feats, path, **kwargs)

  monkeypatch.setattr(precomp.np, "load", spy_load)
  monkeypatch.setattr(precomp, "check_finite_features", spy_check_finite)
  check_precomp_folder(tmp_path, "f30k_precomp")
  assert opened == [("train_ims.npy", "r"), ("dev_ims.npy", "r"), ("test_ims.npy", "r")]
  assert checked == [np.memmap] * 3


def test_one_caption_per_image_and_folders_of_any_name(tmp_path):
  write_precomp(tmp_path, 6, 3, dataset="iaprtc12_precomp", captions_per_image=1)
  checks = check_precomp_folder(tmp_path, "iaprtc12_precomp")
  assert format_check_table(checks).splitlines()[2:] == [
    "| train | 6 | 6 | 1 | 36 × 2048 | float32 | 6 | 1 | unknown | unknown | 0 |",
    "| dev | 3 | 3 | 1 | 36 × 2048 | float32 | 3 | 1 | unknown | unknown | 0 |",
    "| test | 3 | 3 | 1 | 36 × 2048 | float32 | 3 | 1 | unknown | unknown | 0 |",
  ]
  assert official_loader_notes(checks) == []  # the dev cut is the F30K / COCO loaders'
  write_precomp(tmp_path, 4, 2, dataset="mine_precomp", captions_per_image=2)
  with pytest.raises(precomp.PrecompError) as err:
    check_precomp_folder(tmp_path, "mine_precomp")
  assert str(err.value) == (
    "mine_precomp: not a dataset jitr knows; give its captions per image (5 for "
    "Flickr30K / COCO-style folders, 1 for IAPR TC-12-style)"
  )
  checks = check_precomp_folder(tmp_path, "mine_precomp", captions_per_image=2)
  assert [(c.split, c.images, c.captions_per_image) for c in checks] == [
    ("train", 4, 2),
    ("dev", 2, 2),
    ("test", 2, 2),
  ]
  with pytest.raises(precomp.PrecompError, match="expected 5 captions per image"):
    check_precomp_folder(tmp_path, "mine_precomp", captions_per_image=5)


def test_an_image_folder_prints_its_splits_and_each_bad_image_on_stderr(tmp_path):
  from tests.data.karpathy_folder import write_karpathy_folder

  json_path, images = write_karpathy_folder(str(tmp_path))
  exe = shutil.which("jitr-check-data") or str(
    pathlib.Path(sys.executable).with_name("jitr-check-data")
  )
  args = [exe, "--dataset=mini_images", f"--karpathy_json={json_path}", f"--images={images}"]
  env = {**os.environ, "PYTHONPATH": str(REPO)}
  out = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "| val | 8 | 40 | 5 |" in out.stdout and "every image reads" in out.stdout
  os.remove(os.path.join(images, "0009.jpg"))
  out = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
  assert out.returncode == 1 and "1 problem (stderr)" in out.stdout
  assert out.stderr == f"jitr-check-data: {images}/0009.jpg: no such image file\n"
  out = subprocess.run(args[:3], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
  assert (
    out.stderr == "jitr-check-data: error: --images: required for the image folder mini_images\n"
  )
