"""The concepts of a run whose network reads them (CVSE: the registry's ``CONCEPT_MODELS``).

``config.concepts.source`` names where they come from:

- ``""`` (default): built from the dataset's captions
  (:func:`jitr.data.build_concept_data`: the ``num_concepts`` most frequent
  content words of the training captions, their statistics over the training captions,
  and every image's labels, validation and test included, as the official label files
  hold them) with ``config.concepts.vectors`` word
  vectors, stored once under ``<data_dir>/concepts/<dataset>-<num_concepts>-<vectors>/``
  (checked against the captions' fingerprint when read again);
- a folder written by :func:`jitr.data.save_concept_data` for the same
  images (its labels are indexed train, then val, then test images).

The splits get each image's labels (:attr:`jitr.data.pairs.RetrievalSplit.concept_labels`)
and the model its :class:`jitr.models.ConceptInputs`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence

import jax
import numpy as np

from jitr.data import pairs
from jitr.data.concept_data import (
  ConceptData,
  build_concept_data,
  fingerprint_captions,
  load_concept_data,
  save_concept_data,
)
from jitr.data.datasets import dataset_info
from jitr.models import ConceptInputs
from jitr.models.registry import CONCEPT_MODELS

SPLIT_ORDER = ("train", "val", "test")
"""The order of the images in a run's concept labels."""


def needs_concepts(config) -> bool:
  """Whether ``config.model`` names a network that reads concepts."""
  return dict(config.model).get("name") in CONCEPT_MODELS


def per_image(captions: Sequence[str], caption_image: np.ndarray, num_images: int) -> list:
  """The captions of each image, ``[[str]] * num_images``, in caption order."""
  out: list[list[str]] = [[] for _ in range(num_images)]
  for caption, image in zip(captions, caption_image):
    out[int(image)].append(caption)
  return out


def stored_folder(config, data_dir: str) -> str:
  """``<data_dir>/concepts/<dataset>-<num_concepts>-<vectors>`` (``/`` of the dataset's
  name, e.g. ``jitr_shapes/tiny``, written as ``_``)."""
  name = dataset_info(config.dataset).data_name(config).replace("/", "_")
  settings = config.concepts
  return os.path.join(data_dir, "concepts", f"{name}-{settings.num_concepts}-{settings.vectors}")


def run_concepts(config, image_captions: Mapping[str, list], data_dir: str) -> ConceptData:
  """The run's :class:`ConceptData` (module docstring) for ``image_captions[split]``, the
  captions of each image of the train, val and test splits."""
  captions = [c for split in SPLIT_ORDER for c in image_captions[split]]
  source = config.concepts.get("source") or ""
  if source:
    data = load_concept_data(source)
  else:
    folder = stored_folder(config, data_dir)
    fingerprint = fingerprint_captions(captions)
    if os.path.exists(os.path.join(folder, "concepts.json")):
      data = load_concept_data(folder, captions_fingerprint=fingerprint)
    else:
      data = build_concept_data(
        captions,
        num_concepts=config.concepts.num_concepts,
        vectors=config.concepts.vectors,
        train_images=np.arange(len(image_captions["train"])),
      )
      if jax.process_index() == 0:
        save_concept_data(folder, data, captions_fingerprint=fingerprint)
  if data.num_images != len(captions):
    raise ValueError(
      f"config.concepts.source: {source} holds labels of {data.num_images} images, this "
      f"run's train, val and test splits have {len(captions)}"
    )
  return data


def with_concept_labels(
  splits: Mapping[str, pairs.RetrievalSplit], data: ConceptData
) -> dict[str, pairs.RetrievalSplit]:
  """``splits`` with each image's rows of ``data.labels`` (train, val, test in order)."""
  out, start = {}, 0
  for name in SPLIT_ORDER:
    split = splits[name]
    labels = np.asarray(data.labels[start : start + split.num_images], np.float32)
    out[name] = dataclasses.replace(split, concept_labels=labels)
    start += split.num_images
  return out


def concept_inputs(data: ConceptData | None) -> ConceptInputs | None:
  """The model's :class:`ConceptInputs` of ``data`` (``None`` without concepts)."""
  if data is None:
    return None
  return ConceptInputs(data.vectors, data.co_occurrence, data.counts)
