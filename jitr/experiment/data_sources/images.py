"""An image folder with Karpathy's split file as a :class:`DataSource`:
``config.karpathy.json`` (``dataset_flickr30k.json``, ``dataset_coco.json``) and the folder
of its images ``config.karpathy.images``. The images are decoded per batch as the run's
towers take them (:class:`!jitr.data.image_files.ImageFiles`: size and preprocessing of
``config.model``); the captions are the text tower's ids, the first
``captions_per_image`` (5) of each image. The run's splits are the file's images of
``config.karpathy.train_splits`` (``train`` and COCO's ``restval``), ``val`` and ``test``;
the file is what a run pins."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import paths
from jitr.data import pairs
from jitr.data.datasets import DatasetInfo, captions_per_image, dataset_info
from jitr.data.image_files import ImageFiles
from jitr.experiment.data_sources.loading import (
  SPLITS,
  LoadedData,
  encode_captions,
  run_vocab,
  train_relevance,
  train_source,
)
from jitr.experiment.data_sources.source import DataSource
from jitr.experiment.run_tower import tower_inputs
from jitr.experiment.stored_relevance import caption_set
from jitr.relevance.captions_io import CaptionSet, precomp_caption_set
from jitr.relevance.karpathy_json import (
  CaptionFileError,
  KarpathyImage,
  kept_captions,
  read_karpathy,
  split_images,
)


def file_splits(config, split: str) -> tuple[str, ...]:
  """The split file's splits of a run's ``split``."""
  return tuple(config.karpathy.train_splits) if split == "train" else (split,)


def read_splits(config, splits) -> dict[str, tuple[list[KarpathyImage], list[str]]]:
  """``{split: (images, captions)}`` of the run's ``splits``, the split file read once: the
  file's images of :func:`file_splits` and the first ``captions_per_image`` captions of
  each, flat."""
  path = config.karpathy.json
  per_image = captions_per_image(dataset_info(config.dataset), config.captions_per_image)
  try:
    every = read_karpathy(path)
    out = {}
    for split in splits:
      images = split_images(every, file_splits(config, split), path)
      out[split] = images, kept_captions(images, per_image, path)
  except CaptionFileError as err:
    raise ValueError(f"config.karpathy.json: {err}") from None
  return out


class ImagesSource(DataSource):
  """An image folder with Karpathy's split file (``config.karpathy``)."""

  kind = "images"

  def load(self, config, data_dir, *, teachers, vocab, say) -> LoadedData:
    """The file's train (``config.karpathy.train_splits``), val and test splits."""
    say(f"reading {config.karpathy.json}")
    per_image = captions_per_image(dataset_info(config.dataset), config.captions_per_image)
    inputs = tower_inputs(config)
    raw = read_splits(config, SPLITS)
    vocab, _ = run_vocab(config, raw["train"][1], vocab, say=say)
    captions = caption_set(raw["train"][1], per_image, train_source(config))
    vectors, topk, aggregates = train_relevance(config, captions, data_dir, say)
    say("encoding the captions")
    splits = {}
    for name, (images, texts) in raw.items():
      tokens, lengths = encode_captions(vocab, texts, config.max_caption_len)
      files = tuple(os.path.join(config.karpathy.images, image.file) for image in images)
      splits[name] = pairs.RetrievalSplit(
        images=ImageFiles(files, inputs.image_size, inputs.preprocessing),
        tokens=tokens,
        lengths=lengths,
        caption_image=np.repeat(np.arange(len(images)), per_image),
        vectors=vectors if name == "train" else {},
        topk=topk if name == "train" else {},
      )
    if teachers is not None:
      splits = teachers(config, splits, vocab, captions, data_dir)
    return LoadedData(splits, vocab, None, aggregates, config.eval_folds or None)

  def check_config(self, config, dataset: DatasetInfo) -> None:
    """``config.karpathy.json`` a file and ``config.karpathy.images`` a folder (both
    required), then the test split and captions per image."""
    json_path, folder = config.karpathy.json, config.karpathy.images
    if not json_path or not paths.isfile(json_path):
      raise ValueError(
        f"config.karpathy.json: {config.dataset} needs Karpathy's split file "
        f"(dataset_flickr30k.json, dataset_coco.json); got {json_path!r}"
      )
    if not folder or not paths.isdir(folder):
      raise ValueError(
        f"config.karpathy.images: {config.dataset} needs the folder of its images; got {folder!r}"
      )
    super().check_config(config, dataset)

  def pinned_files(self, config: Mapping[str, Any]) -> dict[str, str]:
    """The split file, as ``<dataset>/<file name>``."""
    path = config["karpathy"]["json"]
    return {f"{config['dataset']}/{os.path.basename(path)}": path}

  def split_roles(self, config: Mapping[str, Any], split: str) -> tuple[str, ...]:
    """The split file holds every split."""
    del split
    return tuple(self.pinned_files(config))

  def split_captions(self, config, data_dir: str, split: str) -> tuple[str, CaptionSet]:
    """``(split, captions)``: the split's captions, numbered as a precomp caption file."""
    del data_dir
    per_image = captions_per_image(dataset_info(config.dataset), config.captions_per_image)
    _, texts = read_splits(config, (split,))[split]
    return split, precomp_caption_set(texts, per_image, f"{config.karpathy.json}:{split}")
