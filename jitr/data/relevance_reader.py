"""Read relevance TFRecords (schema: :mod:`jitr.relevance.records.schema`) into numpy.

* :func:`load_header` (:mod:`jitr.data.relevance_header`) -- the checked header;
* :func:`relevance_dataset` -- a ``tf.data.Dataset`` of one dict per image
  (TensorFlow on the CPU only, imported on first use);
* :func:`load_relevance_table` -- every record gathered into a
  :class:`RelevanceTable` indexed by image / caption index: what the training
  split stores (``RetrievalSplit.vectors`` / ``topk``) and
  :mod:`jitr.training.graded` turns into in-batch matrices with
  :mod:`jitr.losses.relevance`, using the table's :attr:`~RelevanceTable.aggregate`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr.data.relevance_header import (
  SUPPORTED_SCHEMA_VERSIONS,
  RelevanceRecordsError,
  load_header,
  shard_paths,
)
from jitr.tf_cpu import import_tf

__all__ = [
  "SUPPORTED_SCHEMA_VERSIONS",
  "RelevanceRecordsError",
  "RelevanceTable",
  "load_header",
  "load_relevance_table",
  "relevance_dataset",
]


def _feature_spec(tf, contents: Mapping[str, Any]) -> dict[str, Any]:
  spec = {
    "image/index": tf.io.FixedLenFeature([], tf.int64),
    "image/id": tf.io.FixedLenFeature([], tf.string),
    "caption/indices": tf.io.VarLenFeature(tf.int64),
    "caption/ids": tf.io.VarLenFeature(tf.string),
  }
  if contents["vectors"]:
    spec["caption/vectors"] = tf.io.VarLenFeature(tf.float32)
  if contents["top_k"]:
    k = contents["top_k"]
    spec["topk/indices"] = tf.io.FixedLenFeature([k], tf.int64)
    spec["topk/scores"] = tf.io.FixedLenFeature([k], tf.float32)
  return spec


def _dataset(directory: str, header: Mapping[str, Any]):
  tf = import_tf()
  contents = header["contents"]
  n_cap = header["dataset"]["captions_per_image"]
  spec = _feature_spec(tf, contents)

  def parse(serialized):
    ex = tf.io.parse_single_example(serialized, spec)
    out = {
      "image_index": ex["image/index"],
      "image_id": ex["image/id"],
      "caption_indices": tf.sparse.to_dense(ex["caption/indices"]),
      "caption_ids": tf.sparse.to_dense(ex["caption/ids"]),
    }
    if n_cap:
      out["caption_indices"] = tf.ensure_shape(out["caption_indices"], [n_cap])
      out["caption_ids"] = tf.ensure_shape(out["caption_ids"], [n_cap])
    if contents["vectors"]:
      vec = tf.reshape(tf.sparse.to_dense(ex["caption/vectors"]), [-1, contents["dim"]])
      out["caption_vectors"] = tf.ensure_shape(vec, [n_cap, contents["dim"]]) if n_cap else vec
    if contents["top_k"]:
      out["topk_indices"] = ex["topk/indices"]
      out["topk_scores"] = ex["topk/scores"]
    return out

  return tf.data.TFRecordDataset(shard_paths(directory, header)).map(
    parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
  )


def relevance_dataset(
  directory: str, *, expected_fingerprint: str | None = None, verify_checksums: bool = True
):
  """A ``tf.data.Dataset`` with one element per image, in image order.

  Elements are dicts: ``image_index`` (int64 ``[]``), ``image_id`` (string
  ``[]``), ``caption_indices`` (int64 ``[n]``), ``caption_ids`` (string
  ``[n]``), and when stored ``caption_vectors`` (float32 ``[n, D]``),
  ``topk_indices`` (int64 ``[K]``), ``topk_scores`` (float32 ``[K]``). ``n`` is
  static when every image has the same number of captions.
  """
  header = load_header(
    directory, expected_fingerprint=expected_fingerprint, verify_checksums=verify_checksums
  )
  return _dataset(directory, header)


@dataclasses.dataclass(frozen=True)
class RelevanceTable:
  """All stored relevance data in numpy, indexed by image / caption index.

  Attributes:
    header: the records' header.
    image_ids: ``[N_img]`` str.
    caption_ids: ``[N_cap]`` str.
    image_offsets: ``[N_img + 1]`` int64; image ``i`` has captions ``offsets[i]:offsets[i+1]``.
    caption_vectors: ``[N_cap, D]`` float32 or ``None``.
    topk_indices: ``[N_img, K]`` int64 or ``None``.
    topk_scores: ``[N_img, K]`` float32 or ``None``.
  """

  header: dict[str, Any]
  image_ids: np.ndarray
  caption_ids: np.ndarray
  image_offsets: np.ndarray
  caption_vectors: np.ndarray | None
  topk_indices: np.ndarray | None
  topk_scores: np.ndarray | None

  @property
  def relevance_scale(self) -> float:
    """relevance = ``clip(score / scale, 0, 1)`` (header ``relevance.scale``)."""
    return float(self.header["relevance"]["scale"])

  @property
  def aggregate(self) -> str:
    """How the vectors' cosines combine over an image's references (header
    ``params.aggregate``: ``max`` or ``mean``; ``max`` for estimators without one)."""
    return str(self.header["params"].get("aggregate", "max"))


def _check_finite(
  directory: str,
  header: Mapping[str, Any],
  name: str,
  values: np.ndarray,
  row_image: np.ndarray | None,
) -> None:
  """Raises :class:`RelevanceRecordsError` naming the shard file and image of the first
  NaN/Inf in ``values`` (rows: captions when ``row_image`` maps them to images, else images)."""
  bad = ~np.isfinite(values)
  if not bad.any():
    return
  row = int(np.argwhere(bad)[0][0])
  image = int(row_image[row]) if row_image is not None else row
  shard = next(
    (e["file"] for e in header["shards"] if e["images"][0] <= image < e["images"][1]), "?"
  )
  where = f"caption {row} of image {image}" if row_image is not None else f"image {image}"
  raise RelevanceRecordsError(
    f"{os.path.join(directory, shard)}: {name} of {where} is not finite "
    f"({int(bad.sum())} non-finite values in {directory}); expected finite values: "
    "delete the folder and re-run jitr-precompute to recompute it"
  )


def load_relevance_table(
  directory: str, *, expected_fingerprint: str | None = None, verify_checksums: bool = True
) -> RelevanceTable:
  """Read every record of ``directory`` into a :class:`RelevanceTable`.

  Raises:
    RelevanceRecordsError: see :func:`!load_header`; also an image without a record.
  """
  header = load_header(
    directory, expected_fingerprint=expected_fingerprint, verify_checksums=verify_checksums
  )
  n_img, n_cap = header["dataset"]["num_images"], header["dataset"]["num_captions"]
  contents, k = header["contents"], header["contents"]["top_k"]
  image_ids = np.empty(n_img, dtype=object)
  caption_ids = np.empty(n_cap, dtype=object)
  sizes = np.zeros(n_img, np.int64)
  vectors = np.zeros((n_cap, contents["dim"]), np.float32) if contents["vectors"] else None
  topk_i = np.zeros((n_img, k), np.int64) if k else None
  topk_s = np.zeros((n_img, k), np.float32) if k else None
  seen = np.zeros(n_img, bool)
  caption_image = np.zeros(n_cap, np.int64)
  for ex in _dataset(directory, header).as_numpy_iterator():
    i = int(ex["image_index"])
    seen[i] = True
    image_ids[i] = ex["image_id"].decode("utf-8")
    caps = ex["caption_indices"]
    caption_image[caps] = i
    sizes[i] = caps.size
    caption_ids[caps] = [c.decode("utf-8") for c in ex["caption_ids"]]
    if vectors is not None:
      vectors[caps] = ex["caption_vectors"]
    if k:
      topk_i[i], topk_s[i] = ex["topk_indices"], ex["topk_scores"]
  if not seen.all():
    raise RelevanceRecordsError(
      f"{directory}: {int((~seen).sum())} of {n_img} images have no record "
      f"(first: index {int(np.argmin(seen))})"
    )
  for name, values in (("caption/vectors", vectors), ("topk/scores", topk_s)):
    if values is not None:
      _check_finite(directory, header, name, values, caption_image if name[0] == "c" else None)
  offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
  return RelevanceTable(header, image_ids, caption_ids, offsets, vectors, topk_i, topk_s)
