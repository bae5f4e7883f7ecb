"""The header of a relevance-records directory: its fields, reading it, and refusing a
directory written for other inputs.

**Header** ``relevance.json``: ``format`` (``"jitr.relevance"``), ``schema_version``,
``estimator``, ``model``, ``params`` (estimator hyper-parameters), ``dataset``
(``source``, ``fingerprint`` = sha256 of the caption list, ``num_images``,
``num_captions``, ``captions_per_image``), ``contents`` (``vectors``, ``dim``,
``top_k``), ``relevance`` (``kind`` = ``cosine``, ``coverage`` or ``score``, ``scale``:
relevance = ``clip(score / scale, 0, 1)``), ``fit_sha256`` (digest of the fitted
estimator, :func:`fit_digest`), ``images_per_shard``, ``num_shards`` and
``shards``: per shard ``null`` until it is complete, then ``{file, images:
[lo, hi), records, bytes, sha256}``.

The header without ``shards`` is the set's *identity*: a re-run, or another worker,
goes on only with an equal identity (:func:`check_compatible`), else it is refused
with :class:`RecordsMismatchError` and nothing written is touched. JSON files are
written with sorted keys (:func:`json_bytes`), so equal contents are equal bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import numpy as np

from jitr import fileio, paths
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.records.schema import SCHEMA_VERSION
from jitr.relevance.records.shards import shard_count

FORMAT = "jitr.relevance"
HEADER_NAME = "relevance.json"
FIT_KEY = "fit_sha256"

# Keys of the header that must be equal for a re-run to resume.
IDENTITY_KEYS = (
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
# ... and, once the estimator is fitted, its digest.
FITTED_IDENTITY_KEYS = (*IDENTITY_KEYS, FIT_KEY)


class RecordsMismatchError(ValueError):
  """An existing output directory was written for other inputs or another schema."""


class RecordsCorruptError(ValueError):
  """A shard or header on disk is incomplete or modified."""


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
  num_shards = shard_count(captions.num_images, images_per_shard)
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
      "kind": estimator.relevance_kind,
      "scale": float(estimator.relevance_scale),
    },
    "images_per_shard": images_per_shard,
    "num_shards": num_shards,
    "shards": [None] * num_shards,
  }


def fit_digest(estimator: RelevanceEstimator, captions: CaptionSet) -> str:
  """sha256 of the fitted estimator's float32 output on a fixed probe.

  Cosine estimators: ``caption_vectors`` of up to 16 evenly spaced captions;
  the others: ``image_scores`` of the first, middle and last image. Workers
  whose fits differ (another library version, BLAS or device, a
  non-deterministic fit) get different digests and are refused, since their
  shards would not match.
  """
  if estimator.stores_vectors:
    n = captions.num_captions
    probe = estimator.caption_vectors(np.unique(np.linspace(0, n - 1, min(16, n)).astype(np.int64)))
  else:
    n = captions.num_images
    probe = estimator.image_scores(np.unique(np.array([0, n // 2, n - 1], np.int64)))
  return hashlib.sha256(np.ascontiguousarray(probe, dtype=np.float32).tobytes()).hexdigest()


def json_bytes(obj: Any) -> bytes:
  """The file bytes of ``obj``: indented, sorted keys, trailing newline (deterministic)."""
  return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode("utf-8")


def read_header_file(out_dir: str) -> dict[str, Any] | None:
  """The header of ``out_dir``, or ``None`` when there is none."""
  path = os.path.join(out_dir, HEADER_NAME)
  if not paths.exists(path):
    return None
  return fileio.read_json_header(
    path,
    FORMAT,
    error=RecordsCorruptError,
    mismatch_error=RecordsMismatchError,
    hint="; delete the directory and re-run",
  )


def _mismatch_message(key: str, have: Any, want: Any) -> str:
  """Why the field ``key`` of a header (``have``) refuses this run's (``want``)."""
  if key == "schema_version":
    return f"written with schema version {have}, this jitr writes version {want}"
  if (
    key == "dataset"
    and isinstance(have, dict)
    and have.get("fingerprint") != want.get("fingerprint")
  ):
    return (
      "computed for another caption list (dataset fingerprint "
      f"{str(have.get('fingerprint'))[:12]}..., "
      f"these captions have {want['fingerprint'][:12]}...)"
    )
  if key == FIT_KEY and have is None:
    return f"written without the field {FIT_KEY!r}"
  if key == FIT_KEY:
    return (
      f"written by an estimator fitted differently (fit digest {str(have)[:12]}..., this "
      f"worker's fit has {str(want)[:12]}...): run every worker with the same jitr, libraries "
      "and device"
    )
  return f"field {key!r} is {have!r}, this run expects {want!r}"


def check_compatible(
  existing: dict[str, Any],
  wanted: dict[str, Any],
  path: str,
  keys: tuple[str, ...] = IDENTITY_KEYS,
) -> None:
  """Raise :class:`RecordsMismatchError` naming the first field of ``keys`` that differs.

  The dataset's ``source`` (the caption file's name) may differ; its captions may not.
  """
  for key in keys:
    if key not in wanted:
      continue
    have, want = existing.get(key), wanted[key]
    if key == "dataset" and isinstance(have, dict):
      have = {k: v for k, v in have.items() if k != "source"}
      want = {k: v for k, v in want.items() if k != "source"}
    if have != want:
      msg = _mismatch_message(key, have, want)
      raise RecordsMismatchError(f"{path}: {msg}. Use another --out directory or delete this one.")
