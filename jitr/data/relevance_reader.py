"""Read relevance TFRecords and turn a batch's stored data into in-batch relevance.

The records are written by :mod:`jitr.relevance.records` (schema documented
there). Three layers:

* :func:`load_header` -- the sidecar header, checked: known schema version, every
  shard complete and of the recorded size (a truncated shard is refused), and
  optionally the caption-list fingerprint and the shards' sha256;
* :func:`relevance_dataset` -- a ``tf.data.Dataset`` of one dict per image
  (TensorFlow runs on the CPU only); :func:`load_relevance_table` gathers it into
  numpy arrays indexed by image / caption index, and
  :meth:`RelevanceTable.batch` cuts out what a training batch needs;
* pure JAX functions building the ``[N_img, N_txt]`` in-batch relevance
  (positives = 1): :func:`relevance_from_topk` for top-K lists and
  ``jitr.losses.relevance_from_embeddings`` for vectors, both behind
  :func:`inbatch_relevance`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

SUPPORTED_SCHEMA_VERSIONS = (1,)
HEADER_NAME = "relevance.json"
FORMAT = "jitr.relevance"


class RelevanceRecordsError(ValueError):
  """Relevance records that cannot be read as they are (missing, truncated, mismatched)."""


# --------------------------------------------------------------------------- header
def load_header(
  directory: str, *, expected_fingerprint: str | None = None, verify_checksums: bool = False
) -> dict[str, Any]:
  """The checked header of a relevance-records directory.

  Raises:
    RelevanceRecordsError: no header, another format or schema version, an
      incomplete or truncated shard, a checksum or fingerprint mismatch.
  """
  path = os.path.join(directory, HEADER_NAME)
  if not os.path.isfile(path):
    raise RelevanceRecordsError(
      f"{path}: no relevance header (expected the output of jitr-precompute)"
    )
  try:
    with open(path, encoding="utf-8") as f:
      header = json.load(f)
  except json.JSONDecodeError as err:
    raise RelevanceRecordsError(f"{path}: not valid JSON ({err})") from err
  if header.get("format") != FORMAT:
    raise RelevanceRecordsError(
      f"{path}: field 'format' is {header.get('format')!r}, expected {FORMAT!r}"
    )
  version = header.get("schema_version")
  if version not in SUPPORTED_SCHEMA_VERSIONS:
    raise RelevanceRecordsError(
      f"{path}: field 'schema_version' is {version!r}, this reader supports {list(SUPPORTED_SCHEMA_VERSIONS)}"
    )
  if expected_fingerprint is not None and header["dataset"]["fingerprint"] != expected_fingerprint:
    raise RelevanceRecordsError(
      f"{path}: field 'dataset.fingerprint' is {header['dataset']['fingerprint'][:12]}..., expected "
      f"{expected_fingerprint[:12]}... (the records were computed for another caption list)"
    )
  n = header["num_shards"]
  for s, entry in enumerate(header["shards"]):
    if not entry:
      raise RelevanceRecordsError(
        f"{path}: shard {s + 1} of {n} is not complete (the write was interrupted); "
        "re-run jitr-precompute with the same arguments to finish it"
      )
    shard = os.path.join(directory, entry["file"])
    if not os.path.isfile(shard):
      raise RelevanceRecordsError(f"{shard}: shard file missing (expected {entry['bytes']} bytes)")
    size = os.path.getsize(shard)
    if size != entry["bytes"]:
      raise RelevanceRecordsError(
        f"{shard}: {size} bytes, the header records {entry['bytes']} (truncated or modified); "
        "delete it and re-run jitr-precompute to rewrite it"
      )
    if verify_checksums:
      from jitr.relevance.records import file_sha256

      if file_sha256(shard) != entry["sha256"]:
        raise RelevanceRecordsError(
          f"{shard}: sha256 differs from the header's (modified); re-run jitr-precompute"
        )
  return header


def shard_paths(directory: str, header: Mapping[str, Any]) -> list[str]:
  """The shard files in image order."""
  return [os.path.join(directory, e["file"]) for e in header["shards"]]


# -------------------------------------------------------------------------- tf.data
def _tf():
  from jitr.tf_cpu import import_tf

  return import_tf()


def relevance_dataset(
  directory: str, *, expected_fingerprint: str | None = None, verify_checksums: bool = False
):
  """A ``tf.data.Dataset`` with one element per image, in image order.

  Elements are dicts: ``image_index`` (int64 ``[]``), ``image_id`` (string
  ``[]``), ``caption_indices`` (int64 ``[n]``), ``caption_ids`` (string
  ``[n]``), and when stored ``caption_vectors`` (float32 ``[n, D]``),
  ``topk_indices`` (int64 ``[K]``), ``topk_scores`` (float32 ``[K]``). ``n`` is
  static when every image has the same number of captions.
  """
  tf = _tf()
  header = load_header(
    directory, expected_fingerprint=expected_fingerprint, verify_checksums=verify_checksums
  )
  contents = header["contents"]
  n_cap = header["dataset"]["captions_per_image"]
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

  files = shard_paths(directory, header)
  return tf.data.TFRecordDataset(files).map(
    parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
  )


# ------------------------------------------------------------------ in-memory table
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
  def caption_image(self) -> np.ndarray:
    """``[N_cap]`` int64 image index of every caption."""
    return np.repeat(np.arange(len(self.image_ids), dtype=np.int64), np.diff(self.image_offsets))

  @property
  def relevance_scale(self) -> float:
    return float(self.header["relevance"]["scale"])

  @property
  def aggregate(self) -> str:
    """How the vectors' cosines combine over an image's references (``max`` or ``mean``)."""
    return str(self.header["params"].get("aggregate", "max"))

  def batch(
    self, image_indices: Sequence[int], caption_indices: Sequence[int]
  ) -> dict[str, np.ndarray]:
    """What the in-batch relevance of these images x captions needs.

    Returns a dict with ``image_indices`` ``[N_img]``, ``caption_indices``
    ``[N_txt]``, ``positives`` (bool ``[N_img, N_txt]``: caption of the image),
    and ``reference_vectors`` ``[N_img, R, D]`` + ``reference_mask`` ``[N_img, R]``
    + ``caption_vectors`` ``[N_txt, D]`` when vectors are stored, and
    ``topk_indices`` / ``topk_scores`` ``[N_img, K]`` when top-K lists are.
    """
    img = np.asarray(image_indices, np.int64)
    cap = np.asarray(caption_indices, np.int64)
    out: dict[str, np.ndarray] = {
      "image_indices": img,
      "caption_indices": cap,
      "positives": self.caption_image[cap][None, :] == img[:, None],
    }
    if self.caption_vectors is not None:
      sizes = np.diff(self.image_offsets)[img]
      r = int(sizes.max()) if img.size else 0
      ref_rows = self.image_offsets[img][:, None] + np.arange(r)[None, :]
      mask = np.arange(r)[None, :] < sizes[:, None]
      ref_rows = np.where(mask, ref_rows, 0)
      out["reference_vectors"] = self.caption_vectors[ref_rows] * mask[..., None]
      out["reference_mask"] = mask
      out["caption_vectors"] = self.caption_vectors[cap]
    if self.topk_indices is not None:
      out["topk_indices"] = self.topk_indices[img]
      out["topk_scores"] = self.topk_scores[img]
    return out


def load_relevance_table(
  directory: str, *, expected_fingerprint: str | None = None, verify_checksums: bool = False
) -> RelevanceTable:
  """Read every record of ``directory`` into a :class:`RelevanceTable`."""
  header = load_header(
    directory, expected_fingerprint=expected_fingerprint, verify_checksums=verify_checksums
  )
  ds = relevance_dataset(directory, expected_fingerprint=expected_fingerprint)
  n_img, n_cap = header["dataset"]["num_images"], header["dataset"]["num_captions"]
  contents = header["contents"]
  image_ids = np.empty(n_img, dtype=object)
  caption_ids = np.empty(n_cap, dtype=object)
  sizes = np.zeros(n_img, np.int64)
  vectors = np.zeros((n_cap, contents["dim"]), np.float32) if contents["vectors"] else None
  k = contents["top_k"]
  topk_i = np.zeros((n_img, k), np.int64) if k else None
  topk_s = np.zeros((n_img, k), np.float32) if k else None
  seen = np.zeros(n_img, bool)
  for ex in ds.as_numpy_iterator():
    i = int(ex["image_index"])
    seen[i] = True
    image_ids[i] = ex["image_id"].decode("utf-8")
    caps = ex["caption_indices"]
    sizes[i] = caps.size
    caption_ids[caps] = [c.decode("utf-8") for c in ex["caption_ids"]]
    if vectors is not None:
      vectors[caps] = ex["caption_vectors"]
    if k:
      topk_i[i], topk_s[i] = ex["topk_indices"], ex["topk_scores"]
  if not seen.all():
    raise RelevanceRecordsError(
      f"{directory}: {int((~seen).sum())} of {n_img} images have no record (first: index {int(np.argmin(seen))})"
    )
  offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
  return RelevanceTable(header, image_ids, caption_ids, offsets, vectors, topk_i, topk_s)


# ------------------------------------------------------------------- JAX relevance
def positives_from_indices(image_indices: jax.Array, caption_image: jax.Array) -> jax.Array:
  """``[N_img, N_txt]`` bool: caption ``j`` belongs to image ``i`` (``caption_image[j] == image_indices[i]``)."""
  chex.assert_rank([image_indices, caption_image], 1)
  return caption_image[None, :] == image_indices[:, None]


def relevance_from_topk(
  topk_indices: jax.Array,
  topk_scores: jax.Array,
  caption_indices: jax.Array,
  *,
  scale: float = 1.0,
  positives: jax.Array | None = None,
) -> jax.Array:
  """In-batch relevance from top-K lists.

  ``r_ij = clip(s_ik / scale, 0, 1)`` where ``topk_indices[i, k] == caption_indices[j]``,
  0 when caption ``j`` is not in image ``i``'s list (entries with a negative index
  are padding), and 1 where ``positives``.

  Args:
    topk_indices: ``[N_img, K]`` int caption indices.
    topk_scores: ``[N_img, K]`` raw scores.
    caption_indices: ``[N_txt]`` int caption indices of the batch's captions.
    scale: relevance = score / scale (10 for CIDEr-D; 1 for the cosine estimators).
    positives: optional bool ``[N_img, N_txt]``.

  Returns:
    ``[N_img, N_txt]`` float32 relevance in ``[0, 1]``.

  >>> relevance_from_topk(jnp.array([[3, 1]]), jnp.array([[5.0, 2.0]]), jnp.array([1, 2, 3]), scale=10.0).tolist()
  [[0.20000000298023224, 0.0, 0.5]]
  """
  chex.assert_rank([topk_indices, topk_scores, caption_indices], [2, 2, 1])
  chex.assert_equal_shape([topk_indices, topk_scores])
  match = (topk_indices[:, :, None] == caption_indices[None, None, :]) & (
    topk_indices[:, :, None] >= 0
  )
  rel = jnp.clip(topk_scores.astype(jnp.float32) / scale, 0.0, 1.0)
  relevance = jnp.max(jnp.where(match, rel[:, :, None], 0.0), axis=1)
  if positives is not None:
    chex.assert_shape(positives, relevance.shape)
    relevance = jnp.where(positives, 1.0, relevance)
  return relevance


def relevance_from_vectors(
  reference_vectors: jax.Array,
  caption_vectors: jax.Array,
  *,
  positives: jax.Array | None = None,
  reference_mask: jax.Array | None = None,
  aggregate: str = "max",
) -> jax.Array:
  """``(1 + agg_k cos(ref_ik, cap_j)) / 2``, positives 1.

  ``aggregate="max"`` (RSC) is ``jitr.losses.relevance_from_embeddings``;
  ``"mean"`` averages the cosines over the valid references.
  """
  if aggregate == "max":
    from jitr.losses import relevance_from_embeddings

    return relevance_from_embeddings(
      reference_vectors, caption_vectors, positives=positives, reference_mask=reference_mask
    )
  if aggregate != "mean":
    raise ValueError(f"aggregate must be 'max' or 'mean', got {aggregate!r}")
  chex.assert_rank([reference_vectors, caption_vectors], [3, 2])
  unit = lambda x: x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)  # noqa: E731
  cos = jnp.einsum("ikd,jd->ijk", unit(reference_vectors), unit(caption_vectors))
  mask = jnp.ones(reference_vectors.shape[:2], bool) if reference_mask is None else reference_mask
  weights = mask[:, None, :].astype(cos.dtype)
  mean = jnp.sum(cos * weights, -1) / jnp.maximum(jnp.sum(weights, -1), 1.0)
  relevance = jnp.where(jnp.any(mask, -1)[:, None], jnp.clip((1.0 + mean) / 2.0, 0.0, 1.0), 0.0)
  if positives is not None:
    chex.assert_shape(positives, relevance.shape)
    relevance = jnp.where(positives, 1.0, relevance)
  return relevance


def inbatch_relevance(
  batch: Mapping[str, Any], *, scale: float = 1.0, aggregate: str = "max", prefer: str = "vectors"
) -> jax.Array:
  """``[N_img, N_txt]`` relevance of a batch from :meth:`RelevanceTable.batch` (positives = 1).

  Uses the vectors when stored (``prefer="vectors"``, combined over references
  with ``aggregate``: :attr:`RelevanceTable.aggregate`) and the top-K lists
  otherwise (or with ``prefer="topk"``; ``scale``: :attr:`RelevanceTable.relevance_scale`).
  """
  positives = jnp.asarray(batch["positives"])
  has_vec, has_topk = "reference_vectors" in batch, "topk_indices" in batch
  if has_vec and (prefer == "vectors" or not has_topk):
    return relevance_from_vectors(
      jnp.asarray(batch["reference_vectors"]),
      jnp.asarray(batch["caption_vectors"]),
      positives=positives,
      reference_mask=jnp.asarray(batch["reference_mask"]),
      aggregate=aggregate,
    )
  if has_topk:
    return relevance_from_topk(
      jnp.asarray(batch["topk_indices"]),
      jnp.asarray(batch["topk_scores"]),
      jnp.asarray(batch["caption_indices"]),
      scale=scale,
      positives=positives,
    )
  raise KeyError("inbatch_relevance: the batch has neither 'reference_vectors' nor 'topk_indices'")
