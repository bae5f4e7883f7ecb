"""Labelled vector folders: .npy files and MATLAB .mat files (every split in one file, 1-based
ids, a sparse matrix) read equal to the arrays written; the validation pairs held out of the
training ones; the splits a run gets (one text per image, text vectors, class labels)."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from configs import default
from jitr.data import LabelledSettings, labelled_splits, make_batch, read_labelled_folder
from jitr.data.datasets import ANY_CLASSES, PASCAL, WIKI
from jitr.data.labelled_splits import held_out
from tests.labelled_folders import PASCAL as PASCAL_SHAPE
from tests.labelled_folders import WIKI as WIKI_SHAPE
from tests.labelled_folders import labelled_data, write_labelled


def settings(folder, **fields) -> LabelledSettings:
  group = default.get_config().labelled.to_dict()
  return LabelledSettings.of({**group, "folder": str(folder), **fields})


def test_a_mat_file_of_every_split_reads_equal_to_its_arrays(tmp_path):
  data = labelled_data(WIKI_SHAPE, {"tr": 12, "te": 5}, seed=3)
  variables = {}
  for name, (images, texts, labels) in data.items():
    variables[f"I_{name}"] = images.astype(np.float64)  # MATLAB's doubles
    variables[f"T_{name}"] = scipy.sparse.csr_matrix(texts)  # a sparse matrix
    variables[f"L_{name}"] = (np.argmax(labels, axis=1) + 1.0)[:, None]  # 1-based [n, 1]
  scipy.io.savemat(tmp_path / "wiki.mat", variables)
  read = read_labelled_folder(
    settings(
      tmp_path,
      images="wiki.mat",
      texts="wiki.mat",
      labels="wiki.mat",
      image_variable="I_{split}",
      text_variable="T_{split}",
      label_variable="L_{split}",
      train_name="tr",
      test_name="te",
      first_class=1,
      val_pairs=4,
    ),
    WIKI,
  )
  assert list(read) == ["train", "test"]
  for split, name in (("train", "tr"), ("test", "te")):
    images, texts, labels = data[name]
    np.testing.assert_allclose(read[split].images, images, rtol=1e-6)
    np.testing.assert_allclose(read[split].texts, texts, rtol=1e-6)
    np.testing.assert_array_equal(read[split].labels, labels)
    assert read[split].images.dtype == read[split].texts.dtype == np.float32


def test_npy_memberships_and_a_val_split_read_equal(tmp_path):
  data = write_labelled(tmp_path, PASCAL_SHAPE, {"train": 9, "val": 3, "test": 4}, seed=1)
  read = read_labelled_folder(settings(tmp_path), PASCAL)
  assert list(read) == ["train", "test", "val"]
  for split, (images, texts, labels) in data.items():
    np.testing.assert_array_equal(read[split].images, images)
    np.testing.assert_array_equal(read[split].texts, texts)
    np.testing.assert_array_equal(read[split].labels, labels)
  assert read["train"].labels.shape == (9, 20) and read["train"].labels.sum(axis=1).max() > 1


def test_any_labelled_folder_takes_its_classes_from_every_split(tmp_path):
  """The generic ``labelled`` dataset: ids up to the largest of any split, or the columns."""
  write_labelled(tmp_path, WIKI_SHAPE, {"train": 6, "test": 3}, seed=4)
  np.save(tmp_path / "train_labels.npy", np.array([0, 1, 2, 1, 0, 2]))
  np.save(tmp_path / "test_labels.npy", np.array([4, 0, 1]))
  read = read_labelled_folder(settings(tmp_path, val_pairs=2), ANY_CLASSES)
  assert read["train"].labels.shape == (6, 5) and read["test"].labels.shape == (3, 5)
  np.testing.assert_array_equal(read["test"].labels, np.eye(5, dtype=bool)[[4, 0, 1]])


def test_held_out_pairs_are_spread_over_the_training_file():
  assert held_out(2000, 200).tolist() == list(range(0, 2000, 10))
  assert held_out(10, 3).tolist() == [0, 3, 6]
  assert len(set(held_out(4500, 500).tolist())) == 500


def test_the_run_splits_hold_one_text_per_image_and_class_positives(tmp_path):
  data = write_labelled(tmp_path, WIKI_SHAPE, {"train": 10, "test": 4}, seed=2)
  splits = labelled_splits(settings(tmp_path, val_pairs=3, val_name=""), WIKI)
  val = held_out(10, 3)
  rest = np.setdiff1d(np.arange(10), val)
  np.testing.assert_array_equal(splits["val"].images, data["train"][0][val])
  np.testing.assert_array_equal(splits["train"].text_vectors, data["train"][1][rest])
  np.testing.assert_array_equal(splits["test"].class_labels, data["test"][2])
  train = splits["train"]
  assert (train.num_images, train.num_captions, train.tokens) == (7, 7, None)
  np.testing.assert_array_equal(train.caption_image, np.arange(7))
  batch = make_batch(train, np.array([4, 1]))
  assert sorted(batch) == [
    "caption_indices", "class_labels", "image_ids", "images", "positive_classes",
    "text_vectors", "valid",
  ]  # fmt: skip
  np.testing.assert_array_equal(batch["text_vectors"], data["train"][1][rest[[4, 1]]])
  np.testing.assert_array_equal(batch["positive_classes"], data["train"][2][rest[[4, 1]]])
  pairs_only = labelled_splits(settings(tmp_path, val_pairs=3, positives="pair"), WIKI)
  assert "positive_classes" not in make_batch(pairs_only["train"], np.array([0, 1]))


def test_too_many_validation_pairs_is_one_line(tmp_path):
  write_labelled(tmp_path, WIKI_SHAPE, {"train": 10, "test": 4})
  with pytest.raises(ValueError) as err:
    labelled_splits(settings(tmp_path, val_pairs=10), WIKI)
  assert str(err.value) == (
    "config.labelled.val_pairs: 10 validation pairs, but the training files hold 10; expected fewer"
  )
