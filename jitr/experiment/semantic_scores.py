"""The semantic scores ``phi`` of an evaluated split, for SAM's NCS@K and Semantic Recall@K.

``jitr-eval --semantic=topk:NAME`` scores the split's ranking against ``phi[i, j]``, the
score of caption ``j`` for image ``i`` in the top-K lists of relevance records of *that*
split (0 for a caption outside image ``i``'s list; keep every caption, as both ways below
do, and nothing is cut):

* ``topk:cider`` (any estimator jitr computes) -- fitted on the split's own captions and
  written under ``<data_dir>/relevance/<dataset>-<split>/`` on first use (reused after):
  CIDEr-D of every caption against each image's reference captions, idf over the split's
  images, as SAM computes NCS on the test split;
* ``topk:NAME`` with ``records`` -- records that ``jitr-precompute`` wrote for the split's
  caption file, e.g. SPICE scores computed elsewhere (``--scores=spice=FILE``); without
  ``records``, those it wrote into ``<data_dir>/relevance/<dataset>-<split>/NAME/``
  (:func:`~jitr.experiment.stored_relevance.external_records_dir`), where training reads the
  training split's.

The split's captions are read as ``jitr-precompute --captions`` reads its caption file
(:func:`split_captions`: a precomp split's ``*_caps.txt`` itself; jitr_shapes' captions
with the same ids), so the records' fingerprint must be theirs; records of another caption
list, another estimator or without top-K lists are refused with one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from absl import logging

from jitr import paths
from jitr.data.datasets import dataset_info
from jitr.data.relevance_reader import load_header, load_relevance_table
from jitr.experiment.data_sources import source_of
from jitr.experiment.data_sources.naming import run_data_name
from jitr.experiment.stored_relevance import external_records_dir, relevance_records_dir
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.records import RecordsWriting, write_relevance_records
from jitr.relevance.registry import ESTIMATORS, make_estimator_from_settings
from jitr.training.graded import GradedSource, parse_source


@dataclasses.dataclass(frozen=True)
class SemanticSource:
  """The scores SAM's NCS@K and Semantic Recall@K are computed against (jitr-eval's
  ``--semantic`` and ``--semantic_records``)."""

  spec: str = ""
  """``topk:NAME``: the top-K scores of relevance records of the split; ``""``: none."""
  records: str = ""
  """The records' folder; ``""``: found or computed under the run's data folder."""

  def __bool__(self) -> bool:
    return bool(self.spec or self.records)


def parse_semantic(source: str) -> GradedSource:
  """``topk:NAME`` parsed as a graded source (the language of ``config.graded``); another
  source is refused in one line.

  >>> parse_semantic("topk:spice")
  GradedSource(kind='topk', estimator='spice')
  >>> parse_semantic("vectors:sentence")
  Traceback (most recent call last):
  ...
  ValueError: semantic scores 'vectors:sentence': expected topk:NAME, the top-K scores of ...
  """
  expected = (
    "expected topk:NAME, the top-K scores of relevance records (e.g. topk:cider, topk:spice)"
  )
  try:
    parsed = parse_source(source)
  except ValueError:
    parsed = None
  if not isinstance(parsed, GradedSource) or parsed.kind != "topk":
    raise ValueError(f"semantic scores {source!r}: {expected}")
  return parsed


def split_captions(config, data_dir: str, split: str) -> tuple[str, CaptionSet]:
  """``(key, captions)``: the evaluated split's captions as ``jitr-precompute`` reads its
  caption file, and the key of its records under ``data_dir`` (``f30k_precomp/test``,
  ``jitr_shapes/tiny/test``), from the dataset's source
  (:meth:`~jitr.experiment.data_sources.DataSource.split_captions`; a dataset without
  caption files is refused in one line)."""
  info = dataset_info(config.dataset)
  file_split, captions = source_of(info).split_captions(config, data_dir, split)
  return f"{run_data_name(config)}/{file_split}", captions


def records_folder(
  source: GradedSource,
  key: str,
  captions: CaptionSet,
  *,
  data_dir: str,
  settings: Mapping[str, Any],
  progress: bool = False,
) -> str:
  """The records of ``source``'s estimator for ``captions``, computed under ``data_dir`` on
  first use (every caption kept); for a name jitr does not compute, the records of scores
  computed elsewhere in ``external_records_dir(data_dir, key, NAME)``, else one line."""
  name = source.estimator
  if name not in ESTIMATORS:
    folder = external_records_dir(data_dir, key, name)
    if paths.isdir(folder):
      return folder
    raise ValueError(
      f"semantic scores 'topk:{name}': {name} is not an estimator jitr computes (one of "
      f"{', '.join(sorted(ESTIMATORS))}) and {folder} holds no records of it: give the folder "
      f"of the records that jitr-precompute --captions={captions.source} --scores={name}=FILE "
      "wrote"
    )
  estimator = make_estimator_from_settings(name, settings)
  top_k = captions.num_captions
  out = relevance_records_dir(data_dir, key, estimator, top_k=top_k)
  write_relevance_records(
    out,
    captions,
    estimator,
    vectors=False,
    writing=RecordsWriting(top_k=top_k, log=logging.info, progress=progress),
  )
  return out


def read_semantic_scores(folder: str, name: str, captions: CaptionSet) -> np.ndarray:
  """``phi [N_img, N_cap]`` float32: the raw top-K scores of the records in ``folder`` (0 for
  a caption outside an image's list); refused in one line unless they are records of the
  estimator ``name`` with top-K lists, written for ``captions``."""
  header = load_header(folder, expected_fingerprint=captions.fingerprint(), verify_checksums=False)
  if header.get("estimator") != name:
    raise ValueError(
      f"{folder}: records of the estimator {header.get('estimator')!r}, expected {name!r} "
      f"(topk:{name})"
    )
  if not header["contents"].get("top_k"):
    raise ValueError(f"{folder}: no top-K lists (contents.top_k is null); expected topk records")
  table = load_relevance_table(folder, expected_fingerprint=captions.fingerprint())
  phi = np.zeros((captions.num_images, captions.num_captions), np.float32)
  np.put_along_axis(phi, table.topk_indices, table.topk_scores, axis=1)
  return phi


def semantic_scores(
  semantic: str,
  config,
  data_dir: str,
  split: str,
  *,
  records: str | None = None,
  progress: bool = False,
) -> np.ndarray:
  """``phi [N_img, N_cap]`` of ``split`` for ``semantic`` (``topk:NAME``; see the module
  docstring): read from ``records`` when given, else computed under ``data_dir``."""
  source = parse_semantic(semantic)
  key, captions = split_captions(config, data_dir, split)
  folder = records or records_folder(
    source, key, captions, data_dir=data_dir, settings=config.estimators, progress=progress
  )
  return read_semantic_scores(folder, source.estimator, captions)
