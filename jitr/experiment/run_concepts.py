"""The concepts of a run whose network reads them (one whose registry entry names the
``"concepts"`` dataset constant: CVSE).

``config.concepts.source`` names where they come from:

- ``""`` (default): built from the dataset's captions
  (:func:`jitr.data.build_concept_data`: the ``num_concepts`` most frequent content
  words of the training captions, their statistics over the training captions, and every
  image's labels) with ``config.concepts.vectors`` word vectors, stored once under
  ``<data_dir>/concepts/<dataset>-<num_concepts>-<vectors>/`` (checked against the
  captions' fingerprint when read again);
- a folder written by :func:`jitr.data.save_concept_data` for the same
  images (its labels are indexed train, then val, then test images);
- a folder of CVSE's official concept files (``f30k_adj_concepts.pkl``, ... for
  ``f30k_precomp``; :func:`jitr.data.read_official_concepts`): their words, GloVe
  vectors and statistics; each image's labels are the concepts its captions mention
  (the official training labels come from its label file by Flickr image id, which a
  precomp folder does not hold).

``config.concepts.labels`` says how a caption's concepts are found (:func:`resolved_labels`):

- ``"jitr"``: jitr's content words with plurals folded (:func:`jitr.data.caption_labels`);
- ``"official"``: the official ``data.py``'s labels
  (:func:`jitr.data.cvse_caption_labels.official_caption_labels`: nltk's words of the
  caption's Python 3 ``str(bytes)``, WordNet noun lemmas, the first concept of each
  lemma), with the WordNet of ``config.concepts.wordnet``; only with official concept
  files (their concept words);
- ``""`` (default): ``"official"`` when the source holds official concept files and
  ``config.concepts.wordnet`` names a WordNet, else ``"jitr"``.

The splits get each image's labels (:attr:`jitr.data.pairs.RetrievalSplit.concept_labels`,
what training batches carry) and each caption's own concepts (``caption_concept_labels``,
what the evaluation encodes captions with, as the official ``data.py`` labels the
validation and test captions), and the model its :class:`jitr.models.ConceptInputs`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from absl import logging

from jitr import paths
from jitr.data import pairs, read_official_concepts
from jitr.data.concept_data import (
  ConceptData,
  build_concept_data,
  caption_labels,
  fingerprint_captions,
  load_concept_data,
  official_with_labels,
  save_concept_data,
)
from jitr.data.cvse_caption_labels import official_caption_labels
from jitr.data.wordnet_nouns import NounLemmatizer, read_noun_lemmatizer
from jitr.experiment.data_sources.naming import run_data_name
from jitr.models import MODELS, ConceptInputs
from jitr.models.cvse import CONCEPTS
from jitr.models.registry import network_name

SPLIT_ORDER = ("train", "val", "test")
"""The order of the images in a run's concept labels."""
JITR_LABELS, OFFICIAL_LABELS = "jitr", "official"
LABEL_CHOICES = ("", JITR_LABELS, OFFICIAL_LABELS)
"""``config.concepts.labels``'s values: ``""`` (resolved by :func:`resolved_labels`) and the
two labellings."""


def needs_concepts(config) -> bool:
  """Whether ``config.model`` names a network that reads concepts."""
  network = MODELS.get(network_name(dict(config.model)))
  return network is not None and CONCEPTS in network.constants


def per_image(captions: Sequence[str], caption_image: np.ndarray, num_images: int) -> list:
  """The captions of each image, ``[[str]] * num_images``, in caption order."""
  out: list[list[str]] = [[] for _ in range(num_images)]
  for caption, image in zip(captions, caption_image):
    out[int(image)].append(caption)
  return out


def stored_folder(config, data_dir: str) -> str:
  """``<data_dir>/concepts/<dataset>-<num_concepts>-<vectors>`` (``/`` of the dataset's
  name, e.g. ``jitr_shapes/tiny``, written as ``_``)."""
  name = run_data_name(config).replace("/", "_")
  settings = config.concepts
  return os.path.join(data_dir, "concepts", f"{name}-{settings.num_concepts}-{settings.vectors}")


def official_prefix(config, source: str) -> str | None:
  """``f30k`` / ``coco`` when ``source`` holds CVSE's official concept files of the run's
  dataset (its ``<prefix>_adj_concepts.pkl``), else ``None``."""
  prefix = str(config.dataset).removesuffix("_precomp")
  found = paths.isfile(os.path.join(source, f"{prefix}_adj_concepts.pkl"))
  return prefix if found else None


def resolved_labels(config) -> str:
  """How the run labels captions with concepts (module docstring): ``config.concepts.labels``
  when set, else ``"official"`` when ``config.concepts.source`` holds official concept files
  of the dataset and ``config.concepts.wordnet`` is set, else ``"jitr"``."""
  concepts = config.concepts
  if concepts.labels:
    return concepts.labels
  official = bool(concepts.source) and official_prefix(config, concepts.source) is not None
  return OFFICIAL_LABELS if official and concepts.wordnet else JITR_LABELS


def wordnet_lemmatizer(config) -> NounLemmatizer:
  """The noun lemmatiser of ``config.concepts.wordnet``'s WordNet; its errors are one line
  starting with ``config.concepts.wordnet``."""
  try:
    return read_noun_lemmatizer(config.concepts.wordnet)
  except (OSError, ValueError) as err:
    raise ValueError(f"config.concepts.wordnet: {err}") from None


def official_concept_data(
  source: str, prefix: str, captions: list, train_images, lemmatizer: NounLemmatizer | None = None
) -> tuple[ConceptData, np.ndarray]:
  """``(concepts, caption labels)``: the official files' words, vectors and statistics
  (``adj_all``, ``nums``), each caption's own concepts and, as image labels, their union
  over each image's captions. A caption's concepts are the official ``data.py``'s with a
  ``lemmatizer`` (:func:`jitr.data.cvse_caption_labels.official_caption_labels`), else
  jitr's (:func:`jitr.data.caption_labels`, plurals folded onto the ``train_images``'
  words)."""
  official = read_official_concepts(source, prefix)
  if lemmatizer is None:
    own = caption_labels(captions, official.words, train_images=train_images)
  else:
    flat = [caption for image in captions for caption in image]
    own = official_caption_labels(flat, official.words, lemmatizer)
  sizes = np.array([len(c) for c in captions])
  starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
  labels = np.maximum.reduceat(own, starts, axis=0) if len(own) else own
  return official_with_labels(official, labels, source, prefix), own


def run_concepts(
  config, image_captions: Mapping[str, list], data_dir: str
) -> tuple[ConceptData, np.ndarray]:
  """``(concepts, caption labels)``: the run's :class:`ConceptData` (module docstring) for
  ``image_captions[split]``, the captions of each image of the train, val and test
  splits, and each of those captions' own concepts (uint8 ``[captions, C]``, in that
  order), labelled as :func:`resolved_labels` says.

  Raises:
    ValueError: official labels without official concept files, or a WordNet folder
      that cannot be read (one line naming the field).
  """
  captions = [c for split in SPLIT_ORDER for c in image_captions[split]]
  train = np.arange(len(image_captions["train"]))
  source = config.concepts.source
  prefix = official_prefix(config, source) if source else None
  labelling = resolved_labels(config)
  if labelling == OFFICIAL_LABELS and prefix is None:
    raise ValueError(
      f"config.concepts.labels: {OFFICIAL_LABELS!r} labels captions with the words of CVSE's "
      f"official concept files, but config.concepts.source ({source or 'empty'}) holds none "
      f"for {config.dataset}; give their folder or use {JITR_LABELS!r}"
    )
  if prefix is not None:
    lemmatizer = wordnet_lemmatizer(config) if labelling == OFFICIAL_LABELS else None
    if not config.concepts.labels and lemmatizer is None:
      logging.warning(
        "config.concepts.wordnet is unset: the captions get jitr's concept labels, not the "
        "official ones (they lemmatise with WordNet: --config.concepts.wordnet=FOLDER)"
      )
    return official_concept_data(source, prefix, captions, train, lemmatizer)
  if source:
    data = load_concept_data(source)
  else:
    folder = stored_folder(config, data_dir)
    fingerprint = fingerprint_captions(captions)
    if paths.exists(os.path.join(folder, "concepts.json")):
      data = load_concept_data(folder, captions_fingerprint=fingerprint)
    else:
      data = build_concept_data(
        captions,
        num_concepts=config.concepts.num_concepts,
        vectors=config.concepts.vectors,
        train_images=train,
      )
      if jax.process_index() == 0:
        save_concept_data(folder, data, captions_fingerprint=fingerprint)
  if data.num_images != len(captions):
    raise ValueError(
      f"config.concepts.source: {source} holds labels of {data.num_images} images, this "
      f"run's train, val and test splits have {len(captions)}"
    )
  return data, caption_labels(captions, data.words, train_images=train)


def with_concept_labels(
  splits: Mapping[str, pairs.RetrievalSplit], data: ConceptData, own: np.ndarray
) -> dict[str, pairs.RetrievalSplit]:
  """``splits`` with each image's rows of ``data.labels`` and each caption's rows of
  ``own`` (:func:`run_concepts`' caption labels; both train, val, test in order, the
  captions image by image)."""
  out, start, first_caption = {}, 0, 0
  for name in SPLIT_ORDER:
    split = splits[name]
    labels = np.asarray(data.labels[start : start + split.num_images], np.float32)
    order = np.argsort(np.argsort(split.caption_image, kind="stable"), kind="stable")
    rows = own[first_caption : first_caption + split.num_captions][order]
    out[name] = dataclasses.replace(
      split, concept_labels=labels, caption_concept_labels=rows.astype(np.float32)
    )
    start += split.num_images
    first_caption += split.num_captions
  return out


def concept_inputs(data: ConceptData | None) -> ConceptInputs | None:
  """The model's :class:`ConceptInputs` of ``data`` (``None`` without concepts)."""
  if data is None:
    return None
  return ConceptInputs(data.vectors, data.co_occurrence, data.counts)


def constant_origins(config) -> dict[str, str]:
  """Where each dataset constant of a run comes from, as its refusals name it: the
  concepts' ``config.concepts.source`` (``""``: built from the captions)."""
  return {CONCEPTS: config.concepts.source}


def dataset_constants(data: ConceptData | None) -> dict[str, Any]:
  """The dataset constants ``make_model`` passes to a network (``{}`` without concepts;
  ``{"concepts": ConceptInputs}`` with them)."""
  concepts = concept_inputs(data)
  return {} if concepts is None else {CONCEPTS: concepts}
