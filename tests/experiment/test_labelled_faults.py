"""A bad file of a labelled vector folder, or a run config that cannot train on one, ends
``train_and_evaluate`` with one line naming the file (or field) and what was expected, and
nothing is written: the workdir is not made, the folder is left as it was."""

import numpy as np
import pytest
import scipy.io

from configs import paper
from jitr import experiment
from jitr.experiment.run_config import check_train_config
from tests.file_fixtures import snapshot
from tests.labelled_folders import PASCAL, WIKI, write_labelled

EXPECTED_LABELS = "expected class labels: ids [n] or memberships [n, C] of 0 and 1"


def _save(path, array):
  np.save(path, array)


def missing(folder, config):
  (folder / "test_texts.npy").unlink()
  return f"{folder}/test_texts.npy: no such file; expected text vectors (.npy or .mat)"


def three_dims(folder, config):
  _save(folder / "train_images.npy", np.zeros((12, 2, 2048), np.float32))
  return (
    f"{folder}/train_images.npy: shape (12, 2, 2048); expected image vectors [n, D], one row each"
  )


def rows_disagree(folder, config):
  texts = np.load(folder / "train_texts.npy")
  _save(folder / "train_texts.npy", texts[:-1])
  return (
    f"split 'train': the files disagree on the number of pairs ({folder}/train_images.npy "
    f"12, {folder}/train_texts.npy 11, {folder}/train_labels.npy 12); expected one row per "
    "pair in each"
  )


def not_finite(folder, config):
  images = np.load(folder / "test_images.npy")
  images[3, 5], images[4, 0] = np.nan, np.inf
  _save(folder / "test_images.npy", images)
  return (
    f"{folder}/test_images.npy: 2 NaN or infinite values (the first in row 3); expected "
    "finite image vectors"
  )


def not_whole(folder, config):
  labels = np.load(folder / "train_labels.npy").astype(np.float64)
  labels[2] = 2.5
  _save(folder / "train_labels.npy", labels)
  return f"{folder}/train_labels.npy: a class id 2.5 that is not a whole number; {EXPECTED_LABELS}"


def beyond_the_classes(folder, config):
  labels = np.load(folder / "train_labels.npy")
  labels[0] = 10
  _save(folder / "train_labels.npy", labels)
  return (
    f"{folder}/train_labels.npy: class id 10 (counted from 0) of 10 classes; expected ids "
    "below 10 (MATLAB's 1-based ids: config.labelled.first_class = 1)"
  )


def two_classes_on_wiki(folder, config):
  labels = np.eye(10, dtype=np.uint8)[np.load(folder / "test_labels.npy")]
  labels[1] = 0
  labels[1, :2] = 1
  _save(folder / "test_labels.npy", labels)
  return f"{folder}/test_labels.npy: row 1 has 2 classes; expected exactly one per pair"


def other_widths(folder, config):
  _save(folder / "test_images.npy", np.zeros((5, 4000), np.float32))
  return (
    f"{folder}/test_images.npy: 4000-d vectors; expected 4096-d, as in "
    f"{folder}/train_images.npy (train)"
  )


def mat_without_the_variable(folder, config):
  for split in ("train", "test"):
    scipy.io.savemat(folder / f"{split}.mat", {"I": np.load(folder / f"{split}_images.npy")})
  config.labelled.images, config.labelled.image_variable = "{split}.mat", "I_{split}"
  return f"{folder}/train.mat: no variable 'I_train'; expected image vectors (it holds: I)"


def mat_without_a_variable_name(folder, config):
  scipy.io.savemat(folder / "train.mat", {"I": np.load(folder / "train_images.npy")})
  config.labelled.images = "{split}.mat"
  return (
    f"{folder}/train.mat: a .mat file holds named variables; give the one of image vectors "
    "as config.labelled.image_variable"
  )


def mat_cut_short(folder, config):
  # the variable asked for lies past the end: scipy skips I by its recorded size and stops
  arrays = {name: np.load(folder / f"train_{name}.npy") for name in ("images", "texts")}
  scipy.io.savemat(folder / "train.mat", {"I": arrays["images"], "T": arrays["texts"]})
  data = (folder / "train.mat").read_bytes()
  (folder / "train.mat").write_bytes(data[: len(data) // 3])
  config.labelled.texts, config.labelled.text_variable = "{split}.mat", "T"
  return (
    f"{folder}/train.mat: cut short or damaged (could not read bytes), so 'T' cannot be "
    "read; expected text vectors"
  )


def not_a_mat_file(folder, config):
  (folder / "train.mat").write_bytes(b"MATLAB? no")
  config.labelled.images, config.labelled.image_variable = "{split}.mat", "I"
  return f"{folder}/train.mat: not a readable .mat file of image vectors"


WIKI_FAULTS = [
  missing,
  three_dims,
  rows_disagree,
  not_finite,
  not_whole,
  beyond_the_classes,
  two_classes_on_wiki,
  other_widths,
  mat_without_the_variable,
  mat_without_a_variable_name,
  mat_cut_short,
  not_a_mat_file,
]


def memberships_not_0_1(folder, config):
  labels = np.load(folder / "train_labels.npy")
  labels[4, 7] = 2
  _save(folder / "train_labels.npy", labels)
  return f"{folder}/train_labels.npy: a membership 2 that is not 0 or 1; {EXPECTED_LABELS}"


def ids_on_pascal(folder, config):
  _save(folder / "test_labels.npy", np.arange(5) % 20)
  return (
    f"{folder}/test_labels.npy: class ids [n]; expected memberships [n, 20] of 0 and 1 "
    "(a pair may have several classes)"
  )


def _refused(tmp_path, dataset, shape, fault):
  folder = tmp_path / "data"
  write_labelled(folder, shape, {"train": 12, "test": 5})
  config = paper.get_config(f"{dataset},twobranch,cmal2r")
  config.labelled.folder = str(folder)
  config.labelled.val_pairs = 4
  message = fault(folder, config)
  before = snapshot(tmp_path)
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert str(err.value).startswith(message), str(err.value)
  assert "\n" not in str(err.value)
  assert snapshot(tmp_path) == before and not (tmp_path / "run").exists()


@pytest.mark.parametrize("fault", WIKI_FAULTS, ids=lambda f: f.__name__)
def test_a_bad_wiki_file_is_one_line_and_nothing_is_written(tmp_path, fault):
  _refused(tmp_path, "wiki", WIKI, fault)


@pytest.mark.parametrize("fault", [memberships_not_0_1, ids_on_pascal], ids=lambda f: f.__name__)
def test_a_bad_pascal_file_is_one_line_and_nothing_is_written(tmp_path, fault):
  _refused(tmp_path, "pascal", PASCAL, fault)


def _config(**changes):
  config = paper.get_config("wiki,twobranch,cmal2r")
  config.labelled.folder = "/data/wiki"
  for dotted, value in changes.items():
    group, _, field = dotted.rpartition("__")
    (config[group] if group else config)[field] = value
  return config


CONFIG_FAULTS = [
  (
    {"labelled__folder": ""},
    "config.labelled.folder: the folder of wiki's image vectors, text vectors and labels is "
    "required",
  ),
  (
    {"labelled__val_pairs": 0, "labelled__val_name": ""},
    "config.labelled.val_name: expected the name of the validation files, or "
    "config.labelled.val_pairs > 0 training pairs held out for validation",
  ),
  (
    {"labelled__positives": "classes"},
    "config.labelled.positives: expected one of 'class', 'pair' (pairs sharing a class are "
    "positives, or only a pair is), got 'classes'",
  ),
  (
    {"labelled__val_pairs": -1},
    "config.labelled.val_pairs: expected a whole number >= 0, got -1",
  ),
  (
    {"graded": {"relevance": "labels"}},
    "config.graded.relevance: 'labels' grades the pairs sharing some classes, which "
    "config.labelled.positives = 'class' makes positives (relevance 1); set it to 'pair'",
  ),
  (
    {"graded": {"relevance": "vectors:sentence"}},
    "config.graded.relevance: 'vectors:sentence' reads relevance of captions' words; wiki has "
    "text vectors: use 'labels' (with config.labelled.positives = 'pair') or no graded input",
  ),
  (
    {"vocab_file": "vocab.json"},
    "config.vocab_file: expected '' for wiki (text vectors, no words)",
  ),
  (
    {"image__region_drop": 0.2},
    "config.image.region_drop: the 'twobranch' network reads no image regions; expected 0",
  ),
]


@pytest.mark.parametrize(("changes", "message"), CONFIG_FAULTS)
def test_a_config_that_cannot_train_on_labelled_vectors_is_one_line(tmp_path, changes, message):
  config = _config(**changes)
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert str(err.value) == message
  assert not (tmp_path / "run").exists()


def test_networks_and_datasets_must_agree_on_the_captions(tmp_path):
  config = _config()
  config.model = paper.get_config("f30k,vsepp,triplet").model
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == (
    "config.model.name: wiki's captions are 'text_vectors', which the 'vse' network does not "
    "read; expected one of ['twobranch']"
  )
  config = paper.get_config("f30k,vsepp,triplet")
  config.precomp_root = "/data"
  config.model = _config().model
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == (
    "config.model.name: f30k_precomp's captions are 'tokens', which the 'twobranch' network "
    "does not read; expected one of ['clip', 'cvse', 'saf', 'sgr', 'vse', 'vseinf', 'vsrn']"
  )
  config = paper.get_config("f30k,vsepp,triplet")
  config.precomp_root = "/data"
  config.graded = {"relevance": "labels"}
  config.labelled.positives = "pair"
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == (
    "config.graded.relevance: 'labels' relevance needs a dataset with class labels (wiki, "
    "pascal, labelled), not f30k_precomp"
  )
