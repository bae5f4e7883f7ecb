"""Image files decoded per batch: evaluation inputs equal to eval_image of the decoded file,
training crops drawn as torchvision's RandomResizedCrop draws them (its ranges; seeded per
row), an unreadable file one line; the folder check (jitr.data.image_folder_check)."""

import os

import numpy as np
import pytest
from PIL import Image

from jitr.data import pairs
from jitr.data.image_files import ImageFiles, open_image
from jitr.data.image_folder_check import check_image_folder, format_folder_check
from jitr.data.image_transforms import eval_image, random_crop_box, train_image
from jitr.models.clip.open_clip_configs import OPENAI, SIGLIP
from tests.data.karpathy_folder import write_karpathy_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
  root = tmp_path_factory.mktemp("karpathy")
  return write_karpathy_folder(str(root))


def _files(folder, n=6):
  return tuple(os.path.join(folder[1], f"{k:04d}.jpg") for k in range(n))


def test_indexing_gives_eval_image_of_each_decoded_file(folder):
  files = ImageFiles(_files(folder), 24, OPENAI)
  assert files.shape == (6, 24, 24, 3) and files.dtype == np.float32 and len(files) == 6
  want = np.stack([eval_image(Image.open(f), 24, OPENAI) for f in files.files])
  np.testing.assert_array_equal(files[np.array([0, 1, 2, 3, 4, 5])], want)
  np.testing.assert_array_equal(files[2:4], want[2:4])
  np.testing.assert_array_equal(files[5], want[5])
  squash = ImageFiles(files.files, 24, SIGLIP)[[1]]
  np.testing.assert_array_equal(squash[0], eval_image(Image.open(files.files[1]), 24, SIGLIP))


def test_training_crops_follow_each_rows_seed_whatever_the_rows_around_it(folder):
  files = ImageFiles(_files(folder), 16, OPENAI)
  both = files.take([3, 1], seeds=[7, 8])  # image 1: 48 × 48
  np.testing.assert_array_equal(files.take([1], seeds=[8])[0], both[1])
  image = Image.open(files.files[1])
  want = train_image(image, 16, OPENAI, np.random.default_rng(8))
  np.testing.assert_array_equal(both[1], want)
  assert not np.array_equal(files.take([1], seeds=[9])[0], both[1])


def test_crop_boxes_lie_in_torchvisions_ranges():
  rng = np.random.default_rng(0)
  for width, height in ((64, 48), (48, 60), (100, 100)):
    for _ in range(200):
      left, top, right, bottom = random_crop_box(width, height, rng)
      w, h = right - left, bottom - top
      assert 0 <= left and right <= width and 0 <= top and bottom <= height
      # the area drawn in [0.9, 1] of the image's, the ratio in [3/4, 4/3], before rounding
      assert 0.9 * width * height - (w + h) <= w * h <= width * height
      assert 3 / 4 - 0.05 < w / h < 4 / 3 + 0.05
  # an image far from the ratios falls back to its centre, clamped to 3/4 or 4/3
  assert random_crop_box(400, 10, np.random.default_rng(1)) == (193, 0, 206, 10)
  assert random_crop_box(40, 90, np.random.default_rng(1)) == (0, 18, 40, 71)


def test_an_unreadable_or_missing_file_is_one_line(tmp_path, folder):
  cut = tmp_path / "cut.jpg"
  data = open(_files(folder)[0], "rb").read()
  cut.write_bytes(data[: len(data) // 2])
  with pytest.raises(ValueError, match=r"cut.jpg: not a readable image \(image file is trunc"):
    open_image(str(cut))
  with pytest.raises(ValueError, match=r"nope.jpg: no such image file$"):
    ImageFiles((str(tmp_path / "nope.jpg"),), 8, OPENAI)[0]


def test_epoch_batches_decode_only_this_hosts_rows_as_one_host_does(folder):
  files = ImageFiles(_files(folder, 4), 16, OPENAI)
  split = pairs.RetrievalSplit(
    images=files,
    tokens=np.ones((8, 3), np.int32),
    lengths=np.full(8, 3, np.int32),
    caption_image=np.repeat(np.arange(4), 2),
  )
  whole = next(pairs.epoch_batches(split, batch_size=4, seed=0, epoch=0))
  half = next(pairs.epoch_batches(split, batch_size=4, seed=0, epoch=0, rows=slice(2, 4)))
  assert whole["images"].shape == (4, 16, 16, 3)
  np.testing.assert_array_equal(half["images"], whole["images"][2:])
  first = files[whole["image_ids"][:1]]  # a training crop, not the evaluation image
  assert not np.array_equal(first[0], whole["images"][0])


def test_the_folder_check_counts_splits_and_names_each_bad_image(tmp_path):
  json_path, images = write_karpathy_folder(str(tmp_path))
  check = check_image_folder(json_path, images)
  assert check.problems == ()
  assert [(s.split, s.images, s.captions, s.fewest, s.most) for s in check.splits] == [
    ("train", 24, 121, 5, 6),
    ("val", 8, 40, 5, 5),
    ("test", 8, 40, 5, 5),
  ]
  assert "| train | 24 | 121 | 5–6 |" in format_folder_check(check)
  os.remove(os.path.join(images, "0003.jpg"))
  data = open(os.path.join(images, "0007.jpg"), "rb").read()
  open(os.path.join(images, "0007.jpg"), "wb").write(data[:200])
  problems = check_image_folder(json_path, images, captions_per_image=6).problems
  assert problems[0] == f"{images}/0003.jpg: no such image file"
  assert problems[1].startswith(f"{images}/0007.jpg: not a readable image")
  assert problems[2] == f"{json_path}: 0000.jpg has 5 captions, a run keeps 6"
  assert len(problems) == 2 + 39  # every image but the sixth has 5 captions
