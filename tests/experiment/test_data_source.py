"""A kind of dataset is one DataSource: a toy kind, defined in a package of its own and
registered with one entry (its source in DATA_SOURCES, its dataset in DATASETS), trains
through train_and_evaluate with no other change to jitr."""

from __future__ import annotations

import importlib
import json
import math
import sys
import textwrap

import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment
from jitr.data.datasets import DATASETS
from jitr.experiment.data_sources import DATA_SOURCES, data_source
from jitr.experiment.pinned_inputs import pinned_split_difference
from jitr.experiment.semantic_scores import split_captions

TOY_PACKAGE = "toy_kinds"
TOY_SOURCE = '''
"""A toy kind of dataset: ``<precomp_root>/toy.npz`` holds each split's region features
(``<split>_images`` [N, R, D]) and captions (``<split>_captions``), one caption per image."""

import os

import numpy as np

from jitr.data import pairs
from jitr.data.datasets import DatasetInfo
from jitr.experiment.data_sources import DataSource, LoadedData
from jitr.experiment.loaded_data import encode_captions, run_vocab


def toy_file(config) -> str:
  return os.path.join(config["precomp_root"], "toy.npz")


class ToySource(DataSource):
  kind = "toy"

  def __init__(self):
    self.read = []  # the file splits the loader read, in order

  def check_config(self, config, dataset):
    if not os.path.isfile(toy_file(config)):
      raise ValueError(f"config.precomp_root: {config.precomp_root} holds no toy.npz")
    super().check_config(config, dataset)

  def test_splits(self, dataset):
    return dataset.splits[2:]

  def load(self, config, data_dir, *, teachers, vocab, say):
    arrays = np.load(toy_file(config))
    names = {"train": "train", "val": "dev", "test": config.test_split}
    self.read += list(names.values())
    texts = {s: [str(c) for c in arrays[f"{n}_captions"]] for s, n in names.items()}
    vocab, _ = run_vocab(config, texts["train"], vocab, say=say)
    splits = {}
    for split, name in names.items():
      tokens, lengths = encode_captions(vocab, texts[split], config.max_caption_len)
      images = arrays[f"{name}_images"]
      splits[split] = pairs.RetrievalSplit(images, tokens, lengths, np.arange(len(images)))
    return LoadedData(splits, vocab, None, {}, None)

  def pinned_files(self, config):
    return {f"{config['dataset']}/toy.npz": toy_file(config)}


SOURCE = ToySource()
DATASET = DatasetInfo(
  "toy_set", "toy", exact_relevance=False, captions_per_image=1,
  splits=("train", "dev", "test", "holdout"),
)
'''
WORDS = ("red", "blue", "circle", "square", "small", "large", "left", "right")


@pytest.fixture
def toy(tmp_path, monkeypatch):
  """The toy kind's module, imported from a package written under ``tmp_path`` and
  registered: its source in DATA_SOURCES, its dataset in DATASETS."""
  package = tmp_path / "packages" / TOY_PACKAGE
  package.mkdir(parents=True)
  (package / "__init__.py").write_text("")
  (package / "source.py").write_text(textwrap.dedent(TOY_SOURCE))
  monkeypatch.syspath_prepend(str(tmp_path / "packages"))
  for name in (TOY_PACKAGE, f"{TOY_PACKAGE}.source"):
    monkeypatch.delitem(sys.modules, name, raising=False)
  module = importlib.import_module(f"{TOY_PACKAGE}.source")
  monkeypatch.setitem(DATA_SOURCES, module.SOURCE.kind, module.SOURCE)
  monkeypatch.setitem(DATASETS, module.DATASET.name, module.DATASET)
  return module


def write_toy(folder, sizes=(("train", 32), ("dev", 8), ("test", 8), ("holdout", 8))):
  """``folder/toy.npz``: random region features [N, 4, 16] and a caption of 3 words per
  image for each split."""
  rng = np.random.default_rng(0)
  arrays = {}
  for split, n in sizes:
    arrays[f"{split}_images"] = rng.normal(size=(n, 4, 16)).astype(np.float32)
    arrays[f"{split}_captions"] = np.array([" ".join(rng.choice(WORDS, 3)) for _ in range(n)])
  folder.mkdir(parents=True, exist_ok=True)
  np.savez(folder / "toy.npz", **arrays)


def toy_config(root) -> ml_collections.ConfigDict:
  """Two steps of a tiny VSE with the triplet loss on the toy dataset in ``root``."""
  config = default.get_config()
  config.dataset = "toy_set"
  config.precomp_root = str(root)
  config.test_split = "holdout"
  config.data_dir = str(root / "cache")
  config.graded = ml_collections.ConfigDict({})
  config.loss = ml_collections.ConfigDict({"triplet": {"weight": 1.0, "margin": 0.2}})
  config.num_epochs = 1
  config.batch_size = 16  # 32 pairs: two steps (on 8 devices)
  config.eval_batch_size = 16
  config.log_every_steps = 1
  config.compilation_cache = False
  config.model.embed_dim = 16
  config.model.word_dim = 8
  return config


def test_the_kind_of_a_dataset_is_its_source(toy):
  assert data_source("toy_set") is toy.SOURCE
  assert data_source("f30k_precomp").kind == "precomp"
  assert data_source("jitr_shapes").kind == "shapes"
  assert data_source("wiki").kind == "labelled"


@pytest.mark.slow
def test_a_toy_kind_trains_through_train_and_evaluate(toy, tmp_path):
  write_toy(tmp_path / "data")
  result = experiment.train_and_evaluate(toy_config(tmp_path / "data"), str(tmp_path / "run"))
  assert result.finished
  assert result.metrics and all(math.isfinite(v) for v in result.metrics.values())
  assert 0.0 <= result.metrics["full/rsum"] <= 600.0
  # the loader read the training, validation (dev) and given test split, once
  assert toy.SOURCE.read == ["train", "dev", "holdout"]
  pins = json.loads((tmp_path / "run" / "inputs.json").read_text())["inputs"]
  assert pins["toy_set/toy.npz"]["path"] == str(tmp_path / "data" / "toy.npz")
  assert json.loads((tmp_path / "run" / "metrics.json").read_text()) == pytest.approx(
    result.metrics
  )


def test_a_folder_without_the_toy_file_is_the_sources_one_line(toy, tmp_path):
  (tmp_path / "empty").mkdir()
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(toy_config(tmp_path / "empty"), str(tmp_path / "run"))
  assert str(err.value) == f"config.precomp_root: {tmp_path / 'empty'} holds no toy.npz"
  assert toy.SOURCE.read == []
  assert not (tmp_path / "run").exists()


def test_a_test_split_the_toy_kind_does_not_offer_is_refused(toy, tmp_path):
  write_toy(tmp_path / "data")
  config = toy_config(tmp_path / "data")
  config.test_split = "dev"
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert str(err.value) == (
    "config.test_split: expected one of 'test', 'holdout' (the splits of toy_set), got 'dev'"
  )


def test_a_precomp_folder_pins_each_split_it_reads_once(tmp_path):
  config = {"dataset": "coco_precomp", "precomp_root": str(tmp_path), "test_split": "testall"}
  source = data_source("coco_precomp")
  folder = tmp_path / "coco_precomp"
  names = ["train_ims.npy", "train_caps.txt", "dev_ims.npy", "dev_caps.txt"]
  names += ["testall_ims.npy", "testall_caps.txt"]
  assert source.pinned_files(config) == {f"coco_precomp/{n}": str(folder / n) for n in names}
  assert source.split_roles(config, "val") == (
    "coco_precomp/dev_ims.npy",
    "coco_precomp/dev_caps.txt",
  )
  assert source.split_roles(config, "test")[0] == "coco_precomp/testall_ims.npy"
  same = dict(config, test_split="train")
  assert len(source.pinned_files(same)) == 4  # train read twice, pinned once


def _pins(workdir, sha256s: dict[str, str]) -> None:
  pins = {
    role: {"path": f"/data/{role}", "size": 1, "mtime_ns": 0, "sha256": sha}
    for role, sha in sha256s.items()
  }
  workdir.mkdir()
  (workdir / "inputs.json").write_text(json.dumps({"inputs": pins}))


def test_workdirs_whose_split_file_differs_are_told_apart_by_the_sources_roles(tmp_path):
  config = {"dataset": "f30k_precomp", "precomp_root": "/data", "test_split": "test"}
  _pins(
    tmp_path / "a", {"f30k_precomp/test_ims.npy": "a" * 64, "f30k_precomp/dev_ims.npy": "c" * 64}
  )
  _pins(
    tmp_path / "b", {"f30k_precomp/test_ims.npy": "b" * 64, "f30k_precomp/dev_ims.npy": "c" * 64}
  )
  a, b = str(tmp_path / "a"), str(tmp_path / "b")
  assert pinned_split_difference(a, b, config, "val") is None
  assert pinned_split_difference(a, b, config, "test") == (
    f"its test split's test_ims.npy is another file (SHA-256 {'b' * 16}… != {'a' * 16}…)"
  )
  labelled = {"dataset": "wiki", "labelled": {}}
  assert pinned_split_difference(a, b, labelled, "test") is None  # its splits pin no role


def test_a_dataset_without_caption_files_has_no_semantic_captions(tmp_path):
  config = default.get_config()
  config.dataset = "wiki"
  with pytest.raises(ValueError, match=r"^semantic scores: wiki has no caption files to score$"):
    split_captions(config, str(tmp_path), "test")
