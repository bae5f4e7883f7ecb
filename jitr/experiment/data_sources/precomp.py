"""A ``*_precomp`` folder as a :class:`DataSource`: ``<precomp_root>/<name>/`` with each
split's region features (``{split}_ims.npy``) and captions (``{split}_caps.txt``), the
files a run pins; the run's validation split is ``dev``, its test split
``config.test_split``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from jitr.data import pairs, precomp
from jitr.data.caption_forms import caption_forms
from jitr.data.datasets import PRECOMP_SUFFIX, DatasetInfo, captions_per_image, dataset_info
from jitr.experiment.data_sources.loading import (
  SPLITS,
  LoadedData,
  encode_captions,
  run_vocab,
  train_relevance,
  train_source,
  train_words,
  with_concepts,
)
from jitr.experiment.data_sources.source import DataSource
from jitr.experiment.run_caption_form import caption_form
from jitr.experiment.stored_relevance import caption_set
from jitr.relevance.captions_io import CaptionSet, read_precomp_captions

# the files of one split, ``{split}_{suffix}``
SPLIT_FILES = ("ims.npy", "caps.txt")


def precomp_folder(config: Mapping[str, Any]) -> str:
  """``<precomp_root>/<dataset>``: the folder of ``config["dataset"]``."""
  return precomp.precomp_dir(config["precomp_root"], config["dataset"].removesuffix(PRECOMP_SUFFIX))


def file_split(config: Mapping[str, Any], split: str) -> str:
  """The folder's name of a run's ``split``: ``val`` is ``dev``, ``test`` is
  ``config.test_split``, another is itself."""
  return {"val": "dev", "test": config["test_split"]}.get(split, split)


class PrecompSource(DataSource):
  """A ``*_precomp`` folder under ``config.precomp_root``."""

  kind = "precomp"

  def load(self, config, data_dir, *, teachers, vocab, say) -> LoadedData:
    """The folder's train, dev (validation) and ``config.test_split`` splits; test folds
    ``config.eval_folds``."""
    folder = precomp_folder(config)
    per_image = captions_per_image(dataset_info(config.dataset), config.captions_per_image)
    say(f"loading {folder}")
    raw = {
      name: precomp.load_precomp_split(
        folder, file_split(config, name), captions_per_image=per_image
      )
      for name in SPLITS
    }
    form = caption_form(config.text)
    texts = {name: caption_forms(split.captions, form) for name, split in raw.items()}
    vocab, train_tokens = run_vocab(
      config, texts["train"], vocab, min_count=config.vocab_min_count, say=say
    )
    train = raw["train"]
    captions = caption_set(train.captions, train.captions_per_image, train_source(config))
    vectors, topk, aggregates = train_relevance(config, captions, data_dir, say)
    say("encoding the captions")
    splits = {}
    for name, split in raw.items():
      tokens, lengths = encode_captions(
        vocab, texts[name], config.max_caption_len, train_tokens if name == "train" else None
      )
      splits[name] = pairs.RetrievalSplit(
        images=split.images,
        tokens=tokens,
        lengths=lengths,
        caption_image=split.caption_image_index(),
        vectors=vectors if name == "train" else {},
        topk=topk if name == "train" else {},
      )
    if teachers is not None:
      splits = teachers(config, splits, vocab, captions, data_dir)
    words = train_words(config, vocab, list(train.captions))
    data = LoadedData(splits, vocab, None, aggregates, config.eval_folds or None, None, words)
    return with_concepts(config, data, {n: s.captions for n, s in raw.items()}, data_dir)

  def check_config(self, config, dataset: DatasetInfo) -> None:
    """``config.precomp_root`` (required), then the test split and captions per image
    (:meth:`DataSource.check_config`)."""
    if not config.precomp_root:
      raise ValueError(
        f"config.precomp_root: the folder holding {config.dataset}/ is required for "
        f"{config.dataset}"
      )
    super().check_config(config, dataset)

  def test_splits(self, dataset: DatasetInfo) -> tuple[str, ...]:
    """The dataset's splits."""
    return dataset.splits

  def pinned_files(self, config: Mapping[str, Any]) -> dict[str, str]:
    """The features and captions of the splits the run reads (train, dev, test), as
    ``<dataset>/<file>``."""
    folder = precomp_folder(config)
    names = dict.fromkeys(file_split(config, s) for s in SPLITS)
    return {
      f"{config['dataset']}/{name}": os.path.join(folder, name)
      for split in names
      for name in (f"{split}_{suffix}" for suffix in SPLIT_FILES)
    }

  def split_roles(self, config: Mapping[str, Any], split: str) -> tuple[str, ...]:
    """``<dataset>/<file split>_ims.npy`` and ``..._caps.txt``."""
    name = file_split(config, split)
    return tuple(f"{config['dataset']}/{name}_{suffix}" for suffix in SPLIT_FILES)

  def split_captions(self, config, data_dir: str, split: str) -> tuple[str, CaptionSet]:
    """``(file split, captions)``: the split's ``*_caps.txt`` itself."""
    del data_dir
    name = file_split(config, split)
    per_image = captions_per_image(dataset_info(config.dataset), config.captions_per_image)
    path = os.path.join(precomp_folder(config), f"{name}_caps.txt")
    return name, read_precomp_captions(path, per_image)
