"""The relevance records a run's graded sources read, computed once per dataset and settings.

:func:`stored_relevance` fits every estimator that a run's ``config.graded`` names on the
training captions, writes its TFRecords under :func:`relevance_records_dir` (or reuses
complete ones) and reads them back as the training split's ``vectors`` / ``topk``. A
``topk:NAME`` source whose NAME is no estimator jitr computes reads the records of scores
computed elsewhere from :func:`external_records_dir` instead, which
``jitr-precompute --captions=<the training caption file> --scores=NAME=FILE`` writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from absl import logging

from jitr import paths
from jitr.data.relevance_reader import load_header, load_relevance_table
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.records import RecordsWriting, write_relevance_records
from jitr.relevance.registry import ESTIMATORS, make_estimator_from_settings
from jitr.training.graded import check_vectors_kind, parse_source


def dataset_slug(dataset: str) -> str:
  """``dataset`` as one folder name of ``[A-Za-z0-9._-]`` (``jitr_shapes/tiny/train`` ->
  ``jitr_shapes-tiny-train``)."""
  return re.sub(r"[^A-Za-z0-9._-]+", "-", dataset).strip("-.") or "dataset"


def settings_digest(settings: dict) -> str:
  """The first 10 hex digits of the sha256 of ``settings`` as sorted-key JSON."""
  return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()[:10]


def relevance_records_dir(
  data_dir: str, dataset: str, estimator: RelevanceEstimator, *, top_k: int | None
) -> str:
  """``<data_dir>/relevance/<dataset slug>/<estimator>-<vectors|topK>-<sha>``: one folder per
  dataset and estimator settings (``sha``: :func:`settings_digest` of the estimator's name,
  ``params()`` and what is stored)."""
  contents = "vectors" if top_k is None else f"top{int(top_k)}"
  settings = {"estimator": estimator.name, "params": estimator.params(), "contents": contents}
  return os.path.join(
    data_dir,
    "relevance",
    dataset_slug(dataset),
    f"{estimator.name}-{contents}-{settings_digest(settings)}",
  )


def external_records_dir(data_dir: str, dataset: str, name: str) -> str:
  """``<data_dir>/relevance/<dataset slug>/<name>``: the records of the scores ``name``
  computed elsewhere for the captions of ``dataset`` (e.g. ``f30k_precomp/train``)."""
  return os.path.join(data_dir, "relevance", dataset_slug(dataset), name)


def read_external_topk(folder: str, name: str, captions: CaptionSet) -> tuple:
  """``(indices, scores)`` ``[N_img, K]`` of the records in ``folder`` of the scores ``name``,
  written by ``jitr-precompute --scores`` for the caption file of ``captions`` (their
  fingerprint is that file's: :meth:`~jitr.relevance.captions_io.CaptionSet.numbered`);
  records of another estimator, caption list or without top-K lists are refused."""
  if not paths.isdir(folder):
    raise ValueError(
      f"graded source 'topk:{name}': {name} is not an estimator jitr computes (one of "
      f"{', '.join(sorted(ESTIMATORS))}) and {folder} holds no records of it: write them there "
      f"with jitr-precompute --captions=<the {captions.source} caption file> "
      f"--scores={name}=FILE --out={folder}"
    )
  fingerprint = captions.numbered().fingerprint()
  header = load_header(folder, expected_fingerprint=fingerprint, verify_checksums=False)
  if header.get("estimator") != name or not header["contents"].get("top_k"):
    raise ValueError(
      f"{folder}: records of estimator {header.get('estimator')!r} with top_k "
      f"{header['contents'].get('top_k')!r}; expected the top-K records of {name!r}"
    )
  table = load_relevance_table(folder, expected_fingerprint=fingerprint)
  return table.topk_indices, table.topk_scores


def caption_set(caption_list, per_image: int, dataset: str) -> CaptionSet:
  """A :class:`CaptionSet` of ``per_image`` consecutive captions per image (ids ``i``, ``i#k``)."""
  n_img = len(caption_list) // per_image
  return CaptionSet(
    source=dataset,
    image_ids=tuple(str(i) for i in range(n_img)),
    caption_ids=tuple(f"{i}#{k}" for i in range(n_img) for k in range(per_image)),
    captions=tuple(caption_list),
    image_offsets=np.arange(n_img + 1) * per_image,
  )


def stored_relevance(
  captions: CaptionSet,
  graded: Mapping[str, str],
  data_dir: str,
  *,
  estimators: Mapping[str, Any],
  top_k: int,
  say: Callable[[str], None] | None = None,
) -> tuple[dict, dict, dict]:
  """``(vectors, topk, aggregates)`` of every estimator the ``graded`` sources name (the
  run's ``config.graded``), read from relevance TFRecords under
  :func:`relevance_records_dir` (computed on first use) with the settings ``estimators``
  (``config.estimators``) and ``top_k`` lists (``config.top_k``) for a ``topk:`` source.
  ``say(text)``: one line per estimator read (records computed then draw their progress
  line); None says nothing.

  ``vectors[NAME]`` ``[N_cap, D]``, ``topk[NAME]`` ``(indices, scores)`` ``[N_img, K]``,
  ``aggregates[NAME]`` the vectors' aggregate from the records header (for ``make_graded_fn``).
  """
  vectors, topk, aggregates = {}, {}, {}
  leaves = [leaf for spec in dict(graded).values() for leaf in parse_source(spec).leaves()]
  for source in leaves:
    stored = {"vectors": vectors, "topk": topk}.get(source.stored)
    if stored is None or source.estimator in stored:
      continue
    if source.stored == "topk" and source.estimator not in ESTIMATORS:
      folder = external_records_dir(data_dir, captions.source, source.estimator)
      topk[source.estimator] = read_external_topk(folder, source.estimator, captions)
      continue
    estimator = make_estimator_from_settings(source.estimator, estimators)
    check_vectors_kind(source, estimator.relevance_kind)
    k = top_k if source.stored == "topk" else None
    out = relevance_records_dir(data_dir, captions.source, estimator, top_k=k)
    if say is not None:
      say(f"reading the {source.estimator} relevance records")
    write_relevance_records(
      out,
      captions,
      estimator,
      vectors=k is None,
      writing=RecordsWriting(top_k=k, log=logging.info, progress=say is not None),
    )
    table = load_relevance_table(out, expected_fingerprint=captions.fingerprint())
    if k is None:
      vectors[source.estimator] = table.caption_vectors
      aggregates[source.estimator] = table.aggregate
    else:
      topk[source.estimator] = (table.topk_indices, table.topk_scores)
  return vectors, topk, aggregates
