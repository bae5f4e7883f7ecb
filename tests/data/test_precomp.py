"""The *_precomp reader on small fake folders: values, layouts and clear errors."""

import os

import numpy as np
import pytest

from jitr.data import precomp


def _make(folder, split="train", n=2, regions=36, dim=2048, caps=None, rows=None, dtype=np.float32):
  folder.mkdir(parents=True, exist_ok=True)
  rows = n if rows is None else rows
  feats = np.arange(rows * regions * dim, dtype=np.float64).reshape(rows, regions, dim)
  np.save(folder / f"{split}_ims.npy", feats.astype(dtype))
  caps = [f"caption {i} of image {i // 5}" for i in range(5 * n)] if caps is None else caps
  (folder / f"{split}_caps.txt").write_text("\n".join(caps) + "\n")
  return feats.astype(dtype), caps


def test_reads_memmapped_features_and_captions(tmp_path):
  folder = tmp_path / "f30k_precomp"
  feats, caps = _make(folder, "test", n=3)
  split = precomp.load_precomp_split(folder, "test")
  assert isinstance(split.images, np.memmap)
  assert split.images.shape == (3, 36, 2048) and split.num_images == 3
  np.testing.assert_array_equal(split.images, feats)
  assert split.captions == tuple(caps)
  np.testing.assert_array_equal(split.caption_image_index(), np.repeat(np.arange(3), 5))
  assert split.region_mask().shape == (3, 36) and split.region_mask().all()


def test_one_row_per_caption_layout_is_deduplicated(tmp_path):
  folder = tmp_path / "coco_precomp"
  feats, _ = _make(folder, "dev", n=2, rows=10, regions=4, dim=8)
  split = precomp.load_precomp_split(folder, "dev", num_regions=4, feature_dim=8)
  assert split.images.shape == (2, 4, 8)
  np.testing.assert_array_equal(split.images, feats[[0, 5]])


def test_coco_testall_and_f30k_splits(tmp_path):
  _make(tmp_path / "coco_precomp", "testall", n=1, regions=2, dim=4)
  assert (
    precomp.load_precomp_split(
      tmp_path / "coco_precomp", "testall", num_regions=2, feature_dim=4
    ).num_images
    == 1
  )
  _make(tmp_path / "f30k_precomp", "testall", n=1, regions=2, dim=4)
  with pytest.raises(precomp.PrecompError, match="'testall' is not a f30k split"):
    precomp.load_precomp_split(tmp_path / "f30k_precomp", "testall")
  assert precomp.precomp_dir(tmp_path, "coco").endswith("coco_precomp")
  assert precomp.precomp_dir(tmp_path, "cc3m").endswith("cc3m_precomp")  # any folder name
  with pytest.raises(precomp.PrecompError, match="expected a folder name"):
    precomp.precomp_dir(tmp_path, "../cc3m")


def test_missing_files(tmp_path):
  folder = tmp_path / "f30k_precomp"
  with pytest.raises(FileNotFoundError, match="no folder"):
    precomp.load_precomp_split(folder, "train")
  _make(folder, "train", n=1, regions=2, dim=4)
  (folder / "train_caps.txt").unlink()
  with pytest.raises(FileNotFoundError, match=r"missing .*train_caps\.txt"):
    precomp.load_precomp_split(folder, "train", num_regions=2, feature_dim=4)
  with pytest.raises(FileNotFoundError, match=r"missing .*dev_ims\.npy"):
    precomp.load_precomp_split(folder, "dev")


def test_count_mismatch(tmp_path):
  folder = tmp_path / "f30k_precomp"
  _make(folder, "train", n=2, regions=2, dim=4, caps=[f"c{i}" for i in range(9)])
  with pytest.raises(
    precomp.PrecompError,
    match=r"train_caps\.txt has 9 captions but .*train_ims\.npy has 2 "
    r"images; expected 5 captions per image \(10 captions\)",
  ):
    precomp.load_precomp_split(folder, "train", num_regions=2, feature_dim=4)


def test_wrong_feature_shapes_and_dtype(tmp_path):
  folder = tmp_path / "f30k_precomp"
  _make(folder, "test", n=1, regions=36, dim=1024)
  with pytest.raises(
    precomp.PrecompError, match=r"shape \(1, 36, 1024\); expected \[N, 36, 2048\]"
  ):
    precomp.load_precomp_split(folder, "test")
  _make(folder, "dev", n=1, regions=10, dim=2048)
  with pytest.raises(precomp.PrecompError, match=r"\(1, 10, 2048\).*36 regions"):
    precomp.load_precomp_split(folder, "dev")
  np.save(folder / "dev_ims.npy", np.zeros((5, 2048), np.float32))
  with pytest.raises(precomp.PrecompError, match=r"dev_ims\.npy: features have shape \(5, 2048\)"):
    precomp.load_precomp_split(folder, "dev")
  np.save(folder / "dev_ims.npy", np.zeros((1, 36, 2048), np.int32))
  with pytest.raises(precomp.PrecompError, match="dtype int32; expected a float"):
    precomp.load_precomp_split(folder, "dev")
  (folder / "dev_ims.npy").write_bytes(b"not an npy file")
  with pytest.raises(precomp.PrecompError, match="not a readable .npy"):
    precomp.load_precomp_split(folder, "dev")


def test_blank_caption_line(tmp_path):
  folder = tmp_path / "f30k_precomp"
  caps = ["a", "b", "", "d", "e"]
  _make(folder, "train", n=1, regions=2, dim=4, caps=caps)
  with pytest.raises(precomp.PrecompError, match=r"train_caps\.txt: line 3 is empty"):
    precomp.load_precomp_split(folder, "train", num_regions=2, feature_dim=4)


def test_vocab_from_train_captions(tmp_path):
  folder = tmp_path / "f30k_precomp"
  _make(
    folder,
    "train",
    n=1,
    regions=2,
    dim=4,
    caps=["a dog runs", "a dog", "the cat", "a cat sleeps", "dog"],
  )
  vocab = precomp.build_precomp_vocab(folder, min_count=2)
  assert vocab.words[4:] == ("a", "dog", "cat")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_feature_is_refused_with_file_and_index(tmp_path, bad):
  folder = tmp_path / "f30k_precomp"
  feats, _ = _make(folder, "train", n=3, regions=4, dim=8)
  feats[2, 1, 5] = bad
  np.save(folder / "train_ims.npy", feats)
  path = str(folder / "train_ims.npy")
  with pytest.raises(precomp.PrecompError) as err:
    precomp.load_precomp_split(folder, "train", num_regions=4, feature_dim=8)
  assert str(err.value) == (
    f"{path}: feature [2, 1, 5] is {bad} (image 2); expected finite values "
    "(1 non-finite in rows 0..2)"
  )


def test_blocks_of_the_finiteness_check_name_the_global_row(tmp_path):
  feats = np.zeros((7, 2, 3), np.float32)
  feats[5, 0, 1] = np.nan
  with pytest.raises(precomp.PrecompError, match=r"^x.npy: feature \[5, 0, 1\] is nan \(image 5\)"):
    precomp.check_finite_features(feats, "x.npy", rows_per_block=2)
  precomp.check_finite_features(feats[:5], "x.npy", rows_per_block=2)  # finite: no error


def _resident_file_kib() -> int:
  """This process's resident file-backed memory (``RssFile`` of /proc/self/status), KiB."""
  with open("/proc/self/status") as f:
    return next(int(line.split()[1]) for line in f if line.startswith("RssFile:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux /proc only")
def test_the_check_of_a_memmap_reads_its_file_without_keeping_it_resident(tmp_path):
  path = tmp_path / "train_ims.npy"
  feats = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(400, 36, 512))
  feats[:] = 1.0  # 28 MiB
  feats[397, 3, 7] = np.inf
  del feats
  mapped = np.load(path, mmap_mode="r")
  before = _resident_file_kib()
  with pytest.raises(precomp.PrecompError, match=r"feature \[397, 3, 7\] is inf \(image 397\)"):
    precomp.check_finite_features(mapped, str(path), rows_per_block=64)
  assert _resident_file_kib() - before < 4096  # reading through the mapping: + 28 MiB
  # a view of the mapping (whose memmap offset is its file's, not the view's) is read through
  # the mapping: the right rows
  with pytest.raises(precomp.PrecompError, match=r"feature \[97, 3, 7\] is inf \(image 97\)"):
    precomp.check_finite_features(mapped[300:], str(path), rows_per_block=64)


def test_non_utf8_caption_file_names_file_and_line(tmp_path):
  folder = tmp_path / "f30k_precomp"
  _make(folder, "train", n=1, regions=4, dim=8)
  path = folder / "train_caps.txt"
  lines = path.read_bytes().split(b"\n")
  lines[3] = b"caf\xe9 au lait"
  path.write_bytes(b"\n".join(lines))
  with pytest.raises(precomp.PrecompError) as err:
    precomp.load_precomp_split(folder, "train", num_regions=4, feature_dim=8)
  assert str(err.value) == (
    f"{path}:4: line 4 is not UTF-8 (byte 0xe9 at column 4); expected UTF-8 text"
  )
