"""The sharded, resumable writer of relevance TFRecords (the layout of its output directory:
:mod:`jitr.relevance.records`).

**Writing** is resumable and can be split over processes or hosts: worker ``i``
of ``N`` writes the shards ``s`` with ``s % N == i``. Every file is written to
``NAME.tmp-HOST-PID-RANDOM`` and renamed when complete (a rename is atomic, so a
reader sees the old or the new file, never a mix). Serialisation is
deterministic, so the files do not depend on how the work was split. A re-run
with the same inputs skips complete shards (manifest present, file of the
recorded size and sha256) and rewrites the others, a corrupt one included; a
header or manifest of another schema version, fingerprint, estimator,
parameters, contents or fit is refused, so nothing written is damaged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from jitr import paths
from jitr.progress import Progress, on_terminal, say
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.checksums import ChecksumCache, file_sha256
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.records.header import (
  FIT_KEY,
  HEADER_NAME,
  IDENTITY_KEYS,
  check_compatible,
  fit_digest,
  make_header,
  read_header_file,
)
from jitr.relevance.records.manifests import (
  complete_entry,
  is_complete_set,
  publish_header,
  read_manifest,
  write_manifest,
)
from jitr.relevance.records.schema import ShardData, write_shard
from jitr.relevance.records.shards import (
  check_images_per_shard,
  check_worker,
  shard_bounds,
  shard_name,
  worker_shards,
)
from jitr.relevance.records.writing import RecordsWriting
from jitr.relevance.temp_files import remove_stale_tmp_files


def progress_label(estimator: str, worker_index: int, num_workers: int) -> str:
  """What the progress line of a worker's shards starts with: ``ESTIMATOR relevance``, and
  ``, worker I of N`` when several workers share the shards (``sentence relevance``,
  ``cider relevance, worker 2 of 4``)."""
  worker = f", worker {worker_index} of {num_workers}" if num_workers > 1 else ""
  return f"{estimator} relevance{worker}"


def preparing(estimator: RelevanceEstimator, fit: bool) -> str:
  """What is done before the first shard: ``fitting the estimator`` (when ``fit``) and
  ``loading its model`` (an estimator with one), e.g. ``fitting the estimator and loading
  its model``."""
  parts = (["fitting the estimator"] if fit else []) + (
    ["loading its model"] if estimator.model else []
  )
  return " and ".join(parts) if parts else "preparing the estimator"


def shard_share(shown: Progress, before: int, images: int) -> Callable[[int, int], None]:
  """The estimator's progress callback within one shard of ``images`` images: ``done`` of
  ``total`` of its work moves ``shown`` to ``before + images * done // total`` (the line
  moves per batch, not per shard)."""

  def report(done: int, total: int) -> None:
    if total > 0:
      shown.update(before + images * min(done, total) // total)

  return report


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


def _write_one_shard(
  out_dir: str,
  index: int,
  captions: CaptionSet,
  estimator: RelevanceEstimator,
  identity: dict[str, Any],
  *,
  vectors: bool,
  top_k: int | None,
) -> dict[str, Any]:
  """Compute and write shard ``index`` and its manifest; returns its header entry."""
  n, per_shard = identity["num_shards"], identity["images_per_shard"]
  name = shard_name(index, n)
  lo, hi = shard_bounds(index, per_shard, captions.num_images)
  images = np.arange(lo, hi, dtype=np.int64)
  data = compute_shard(captions, estimator, images, vectors=vectors, top_k=top_k)
  path = os.path.join(out_dir, name)
  records = write_shard(path, captions, data)
  entry = {
    "file": name,
    "images": [lo, hi],
    "records": records,
    "bytes": paths.getsize(path),
    "sha256": file_sha256(path),
  }
  write_manifest(out_dir, index, identity, entry)
  return entry


def write_relevance_records(
  out_dir: str,
  captions: CaptionSet,
  estimator: RelevanceEstimator,
  *,
  vectors: bool | None = None,
  fit: bool = True,
  writing: RecordsWriting | None = None,
) -> dict[str, Any]:
  """Write (or finish writing) the relevance TFRecords of ``captions`` to ``out_dir``.

  Several processes or hosts may share the work: start worker ``i`` of ``N``
  (``RecordsWriting(num_workers=N, worker_index=i)``) for every ``i``; each writes the shards
  ``s % N == i`` and the header; the one finishing last leaves it complete. The
  files are byte-identical to a single process's, whatever ``N``.

  Args:
    out_dir: output directory (created if missing).
    captions: the dataset's captions.
    estimator: an unfitted estimator (fitted here after the cheap checks) or,
      with ``fit=False``, one already fitted on ``captions``.
    vectors: store per-caption vectors; default: ``estimator.stores_vectors``.
    fit: fit ``estimator`` on ``captions`` (``False``: it is fitted already).
    writing: the K best captions kept per image, the shard size, the workers sharing the
      shards and where the writer reports (:class:`RecordsWriting`; ``None``: its defaults).

  Returns:
    The header as this worker leaves it (complete when every shard is).

  Raises:
    RecordsMismatchError: ``out_dir`` holds records of other inputs, schema or fit.
    ValueError: bad ``num_workers`` / ``worker_index`` / ``images_per_shard``,
      nothing to store (no vectors and no top-K), or vectors asked of an
      estimator that is not a cosine.
  """
  writing = RecordsWriting() if writing is None else writing
  top_k, images_per_shard, log, progress = (
    writing.top_k,
    writing.images_per_shard,
    writing.log,
    writing.progress,
  )
  worker_index, num_workers = writing.workers
  check_worker(num_workers, worker_index)
  check_images_per_shard(images_per_shard)
  vectors = estimator.stores_vectors if vectors is None else vectors
  if top_k is None and not estimator.stores_vectors:
    top_k = 100
  if vectors and not estimator.stores_vectors:
    raise ValueError(
      f"the {estimator.name} estimator has no per-caption vectors; pass --top_k instead"
    )
  if not vectors and not top_k:
    raise ValueError("nothing to store: ask for vectors and/or top_k")
  if top_k is not None:
    top_k = min(int(top_k), captions.num_captions)
  paths.makedirs(out_dir)
  header_path = os.path.join(out_dir, HEADER_NAME)
  checksums = ChecksumCache()

  # 1. cheap checks before any expensive fitting
  existing = read_header_file(out_dir)
  wanted = make_header(
    captions, estimator, vectors=vectors, top_k=top_k, dim=None, images_per_shard=images_per_shard
  )
  if existing is not None:
    keys = tuple(k for k in IDENTITY_KEYS if k != "contents")
    check_compatible(existing, wanted, header_path, keys)
    if is_complete_set(out_dir, existing, wanted["contents"], checksums):
      log(f"{out_dir}: every shard complete, reused without fitting the estimator")
      return existing
  remove_stale_tmp_files(out_dir, log)

  # 2. fit, then the full identity (vector dimension, fit digest) and the header
  label = progress_label(estimator.name, worker_index, num_workers)
  say(f"{label}: {preparing(estimator, fit)}", enabled=progress and on_terminal())
  if fit:
    estimator.fit(captions)
  dim = int(estimator.caption_vectors(np.arange(1)).shape[1]) if vectors else None
  wanted["contents"]["dim"] = dim
  wanted[FIT_KEY] = fit_digest(estimator, captions)
  identity = {k: v for k, v in wanted.items() if k != "shards"}
  header = publish_header(out_dir, identity, checksums)

  # 3. this worker's shards still to write, the header after each
  n = header["num_shards"]
  mine = worker_shards(n, num_workers, worker_index)
  if num_workers > 1:
    log(f"worker {worker_index} of {num_workers}: {len(mine)} of {n} shards")
  complete = {s for s in mine if complete_entry(out_dir, s, identity, checksums) is not None}
  bounds = [shard_bounds(s, images_per_shard, captions.num_images) for s in mine]
  images = sum(hi - lo for s, (lo, hi) in zip(mine, bounds) if s not in complete)
  with Progress(images, "images", label=label, enabled=progress) as shown:
    log_step = shown.wrap_log(log)
    for s in mine:
      if s in complete:
        log_step(f"shard {s + 1}/{n}: complete, skipped")
        continue
      name = shard_name(s, n)
      if read_manifest(out_dir, s, n) is not None:
        log_step(
          f"shard {s + 1}/{n}: {name} is missing, truncated or corrupt (sha256); rewriting it"
        )
      before = shown.done
      lo, hi = shard_bounds(s, images_per_shard, captions.num_images)
      with estimator.reporting_to(shard_share(shown, before, hi - lo)):
        entry = _write_one_shard(
          out_dir, s, captions, estimator, identity, vectors=vectors, top_k=top_k
        )
      header = publish_header(out_dir, identity, checksums)
      shown.update(before + entry["records"])
      log_step(f"shard {s + 1}/{n}: wrote {entry['records']} images to {name}")
  header = publish_header(out_dir, identity, checksums)
  done = sum(entry is not None for entry in header["shards"])
  if done < n:
    log(f"{done} of {n} shards complete: the worker that finishes last completes {header_path}")
  return header
