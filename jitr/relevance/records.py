"""Relevance TFRecords: schema (version 1) and the sharded, resumable writer.

Layout of an output directory::

    OUT/relevance.json                       header (sidecar JSON), see below
    OUT/relevance-00000-of-00008.tfrecord    shards of tf.train.Example, one per image
    ...

**Example features** (one ``tf.train.Example`` per image, images in dataset order):

=====================  =======  ==============================================================
key                    type     value
=====================  =======  ==============================================================
``image/index``        int64    index of the image in the caption set (0-based)
``image/id``           bytes    image id (precomp: ``str(index)``; Flickr8k: ``X.jpg``)
``caption/indices``    int64    ``[n_i]`` caption indices of the image's captions
``caption/ids``        bytes    ``[n_i]`` their caption ids
``caption/vectors``    float    ``[n_i * D]`` row-major unit-norm caption vectors; the image's
                                references are its captions, so these are also its reference
                                vectors (only when ``contents.vectors``)
``topk/indices``       int64    ``[K]`` caption indices of the K best captions, best first
                                (only when ``contents.top_k``)
``topk/scores``        float    ``[K]`` their raw estimator scores
=====================  =======  ==============================================================

**Header** ``relevance.json``: ``format`` (``"jitr.relevance"``), ``schema_version``,
``estimator``, ``model``, ``params`` (estimator hyper-parameters), ``dataset``
(``source``, ``fingerprint`` = sha256 of the caption list, ``num_images``,
``num_captions``, ``captions_per_image``), ``contents`` (``vectors``, ``dim``,
``top_k``), ``relevance`` (``kind`` = ``cosine`` or ``score``, ``scale``:
relevance = ``clip(score / scale, 0, 1)``), ``images_per_shard``, ``num_shards``
and ``shards``: per shard ``null`` until it is complete, then ``{file, images:
[lo, hi), records, bytes, sha256}``.

**Writing** is resumable: a shard is written to ``NAME.tmp-PID`` and renamed when
complete, then the header is rewritten (temp name + rename). A re-run with the
same inputs skips complete shards (present in the header with the right size);
a header with another schema version, fingerprint, estimator, parameters or
contents is refused with :class:`RecordsMismatchError`, so nothing written is
damaged.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.estimator import RelevanceEstimator

SCHEMA_VERSION = 1
FORMAT = "jitr.relevance"
HEADER_NAME = "relevance.json"
SHARD_PATTERN = "relevance-{index:05d}-of-{count:05d}.tfrecord"

# Keys of the header that must be equal for a re-run to resume.
_IDENTITY_KEYS = (
  "format",
  "schema_version",
  "estimator",
  "model",
  "params",
  "dataset",
  "contents",
  "relevance",
  "images_per_shard",
  "num_shards",
)


class RecordsMismatchError(ValueError):
  """An existing output directory was written for other inputs or another schema."""


class RecordsCorruptError(ValueError):
  """A shard or header on disk is incomplete or modified."""


@dataclasses.dataclass(frozen=True)
class ShardData:
  """What one shard holds, as numpy arrays (rows = images of the shard)."""

  image_indices: np.ndarray  # [n] int64
  vectors: list[np.ndarray] | None  # per image [n_i, D] float32
  topk_indices: np.ndarray | None  # [n, K] int64
  topk_scores: np.ndarray | None  # [n, K] float32


def shard_name(index: int, count: int) -> str:
  return SHARD_PATTERN.format(index=index, count=count)


def file_sha256(path: str) -> str:
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      h.update(chunk)
  return h.hexdigest()


def make_header(
  captions: CaptionSet,
  estimator: RelevanceEstimator,
  *,
  vectors: bool,
  top_k: int | None,
  dim: int | None,
  images_per_shard: int,
) -> dict[str, Any]:
  """The header of a new output directory (all shards still ``null``)."""
  num_shards = max(1, -(-captions.num_images // images_per_shard))
  return {
    "format": FORMAT,
    "schema_version": SCHEMA_VERSION,
    "estimator": estimator.name,
    "model": estimator.model,
    "params": estimator.params(),
    "dataset": {
      "source": os.path.basename(captions.source),
      "fingerprint": captions.fingerprint(),
      "num_images": captions.num_images,
      "num_captions": captions.num_captions,
      "captions_per_image": captions.captions_per_image,
    },
    "contents": {"vectors": bool(vectors), "dim": dim if vectors else None, "top_k": top_k},
    "relevance": {
      "kind": "cosine" if estimator.is_cosine else "score",
      "scale": float(estimator.relevance_scale),
    },
    "images_per_shard": images_per_shard,
    "num_shards": num_shards,
    "shards": [None] * num_shards,
  }


def read_header_file(out_dir: str) -> dict[str, Any] | None:
  """The header of ``out_dir``, or ``None`` when there is none."""
  path = os.path.join(out_dir, HEADER_NAME)
  if not os.path.exists(path):
    return None
  try:
    with open(path, encoding="utf-8") as f:
      header = json.load(f)
  except json.JSONDecodeError as err:
    raise RecordsCorruptError(
      f"{path}: not valid JSON ({err}); delete the directory and re-run"
    ) from err
  if not isinstance(header, dict) or header.get("format") != FORMAT:
    raise RecordsMismatchError(
      f"{path}: field 'format' is {header.get('format')!r}, expected {FORMAT!r}"
    )
  return header


def check_compatible(
  existing: dict[str, Any],
  wanted: dict[str, Any],
  path: str,
  keys: tuple[str, ...] = _IDENTITY_KEYS,
) -> None:
  """Raise :class:`RecordsMismatchError` naming the first field of ``keys`` that differs."""
  for key in keys:
    if key not in wanted:
      continue
    have, want = existing.get(key), wanted[key]
    if key == "dataset" and isinstance(
      have, dict
    ):  # the file name may change, the captions may not
      have = {k: v for k, v in have.items() if k != "source"}
      want = {k: v for k, v in want.items() if k != "source"}
    if have == want:
      continue
    if key == "schema_version":
      msg = f"written with schema version {have}, this jitr writes version {want}"
    elif (
      key == "dataset"
      and isinstance(have, dict)
      and have.get("fingerprint") != want.get("fingerprint")
    ):
      msg = (
        f"computed for another caption list (dataset fingerprint {str(have.get('fingerprint'))[:12]}..., "
        f"these captions have {want['fingerprint'][:12]}...)"
      )
    else:
      msg = f"field {key!r} is {have!r}, this run expects {want!r}"
    raise RecordsMismatchError(f"{path}: {msg}. Use another --out directory or delete this one.")


def write_json_atomic(path: str, obj: Any) -> None:
  """``obj`` as sorted, indented JSON, written atomically (temp name + fsync + rename)."""
  from jitr import fileio  # pylint: disable=g-import-not-at-top

  fileio.write_json_atomic(path, obj, indent=2, sort_keys=True)


def _tf():
  from jitr.tf_cpu import import_tf

  return import_tf()


def serialize_example(
  captions: CaptionSet,
  image: int,
  vectors: np.ndarray | None,
  topk_idx: np.ndarray | None,
  topk_val: np.ndarray | None,
) -> bytes:
  """One ``tf.train.Example`` (see the schema in the module docstring)."""
  tf = _tf()
  lo, hi = int(captions.image_offsets[image]), int(captions.image_offsets[image + 1])

  def ints(v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(x) for x in v]))

  def floats(v):
    return tf.train.Feature(
      float_list=tf.train.FloatList(value=np.asarray(v, np.float32).ravel().tolist())
    )

  def strs(v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[s.encode("utf-8") for s in v]))

  feature = {
    "image/index": ints([image]),
    "image/id": strs([captions.image_ids[image]]),
    "caption/indices": ints(range(lo, hi)),
    "caption/ids": strs(captions.caption_ids[lo:hi]),
  }
  if vectors is not None:
    feature["caption/vectors"] = floats(vectors)
  if topk_idx is not None:
    feature["topk/indices"] = ints(topk_idx)
    feature["topk/scores"] = floats(topk_val)
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def compute_shard(
  captions: CaptionSet,
  estimator: RelevanceEstimator,
  images: np.ndarray,
  *,
  vectors: bool,
  top_k: int | None,
) -> ShardData:
  """The estimator's data for the images of one shard."""
  vecs = None
  if vectors:
    off = captions.image_offsets
    rows = np.concatenate([np.arange(off[i], off[i + 1]) for i in images])
    flat = estimator.caption_vectors(rows).astype(np.float32)
    sizes = off[images + 1] - off[images]
    vecs = np.split(flat, np.cumsum(sizes)[:-1])
  ti = tv = None
  if top_k:
    tk = estimator.top_k(images, top_k)
    ti, tv = tk.indices, tk.scores
  return ShardData(images, vecs, ti, tv)


def _write_shard(path: str, captions: CaptionSet, data: ShardData) -> int:
  from jitr import fileio  # pylint: disable=g-import-not-at-top

  tf = _tf()
  # keep_partial: an interrupted shard stays as NAME.tmp-*, removed (and logged) on resume.
  with fileio.atomic_path(path, keep_partial=True) as tmp, tf.io.TFRecordWriter(tmp) as writer:
    for row, image in enumerate(data.image_indices):
      writer.write(
        serialize_example(
          captions,
          int(image),
          None if data.vectors is None else data.vectors[row],
          None if data.topk_indices is None else data.topk_indices[row],
          None if data.topk_scores is None else data.topk_scores[row],
        )
      )
  return len(data.image_indices)


def shard_is_complete(out_dir: str, entry: dict[str, Any] | None) -> bool:
  """A shard is complete when the header records it and the file has the recorded size."""
  if not entry:
    return False
  path = os.path.join(out_dir, entry["file"])
  return os.path.isfile(path) and os.path.getsize(path) == entry["bytes"]


def write_relevance_records(
  out_dir: str,
  captions: CaptionSet,
  estimator: RelevanceEstimator,
  *,
  vectors: bool | None = None,
  top_k: int | None = None,
  images_per_shard: int = 1024,
  fit: bool = True,
  log: Callable[[str], None] = print,
) -> dict[str, Any]:
  """Write (or finish writing) the relevance TFRecords of ``captions`` to ``out_dir``.

  Args:
    out_dir: output directory (created if missing).
    captions: the dataset's captions.
    estimator: an unfitted estimator (fitted here after the cheap checks) or,
      with ``fit=False``, one already fitted on ``captions``.
    vectors: store per-caption vectors; default: ``estimator.is_cosine``.
    top_k: store the K best captions per image (default: 100 for non-cosine estimators).
    images_per_shard: images per TFRecord shard.
    log: where progress lines go.

  Returns:
    The final header.

  Raises:
    RecordsMismatchError: ``out_dir`` holds records of other inputs or schema.
    ValueError: nothing to store (no vectors and no top-K), or vectors asked of
      an estimator that is not a cosine.
  """
  vectors = estimator.is_cosine if vectors is None else vectors
  if top_k is None and not estimator.is_cosine:
    top_k = 100
  if vectors and not estimator.is_cosine:
    raise ValueError(
      f"the {estimator.name} estimator has no per-caption vectors; pass --top_k instead"
    )
  if not vectors and not top_k:
    raise ValueError("nothing to store: ask for vectors and/or top_k")
  if top_k is not None:
    top_k = min(int(top_k), captions.num_captions)
  os.makedirs(out_dir, exist_ok=True)
  header_path = os.path.join(out_dir, HEADER_NAME)

  # 1. cheap checks before any expensive fitting
  existing = read_header_file(out_dir)
  wanted = make_header(
    captions, estimator, vectors=vectors, top_k=top_k, dim=None, images_per_shard=images_per_shard
  )
  if existing is not None:
    keys = tuple(k for k in _IDENTITY_KEYS if k != "contents")
    check_compatible(existing, wanted, header_path, keys)
  for stale in glob.glob(os.path.join(out_dir, "*.tmp-*")):
    log(f"removing unfinished file {os.path.basename(stale)}")
    os.remove(stale)

  # 2. fit, then the full header (with the vector dimension)
  if fit:
    estimator.fit(captions)
  dim = int(estimator.caption_vectors(np.arange(1)).shape[1]) if vectors else None
  wanted["contents"]["dim"] = dim
  if existing is not None:
    check_compatible(existing, wanted, header_path)
    header = existing
  else:
    header = wanted
    write_json_atomic(header_path, header)

  # 3. the shards
  n = header["num_shards"]
  for s in range(n):
    name = shard_name(s, n)
    if shard_is_complete(out_dir, header["shards"][s]):
      log(f"shard {s + 1}/{n}: complete, skipped")
      continue
    lo, hi = s * images_per_shard, min((s + 1) * images_per_shard, captions.num_images)
    images = np.arange(lo, hi, dtype=np.int64)
    data = compute_shard(captions, estimator, images, vectors=vectors, top_k=top_k)
    path = os.path.join(out_dir, name)
    records = _write_shard(path, captions, data)
    header["shards"][s] = {
      "file": name,
      "images": [lo, hi],
      "records": records,
      "bytes": os.path.getsize(path),
      "sha256": file_sha256(path),
    }
    write_json_atomic(header_path, header)
    log(f"shard {s + 1}/{n}: wrote {records} images to {name}")
  return header
