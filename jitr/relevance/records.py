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
``top_k``), ``relevance`` (``kind`` = ``cosine``, ``coverage`` or ``score``, ``scale``:
relevance = ``clip(score / scale, 0, 1)``), ``fit_sha256`` (digest of the fitted
estimator, :func:`fit_digest`), ``images_per_shard``, ``num_shards`` and
``shards``: per shard ``null`` until it is complete, then ``{file, images:
[lo, hi), records, bytes, sha256}``.

**Shard manifests** ``relevance-SSSSS-of-NNNNN.tfrecord.json``: written after
their shard is complete; ``{identity, shard}`` = the header without ``shards``
and the shard's header entry. The header is a pure function of the manifests
on disk (:func:`collect_header`), so any process can (re)write it.

**Writing** is resumable and can be split over processes or hosts: worker ``i``
of ``N`` writes the shards ``s`` with ``s % N == i`` (:func:`worker_shards`).
Every file is written to ``NAME.tmp-HOST-PID-RANDOM`` and renamed when
complete (a rename is atomic, so a reader sees the old or the new file, never
a mix). After each of its shards a worker rewrites the header from the
manifests, and re-reads them after writing until the two agree, so the last
header written lists every shard that is complete; concurrent writers of the
same state write the same bytes. Serialisation is deterministic
(``SerializeToString(deterministic=True)``, sorted JSON), so the files do not
depend on how the work was split. A re-run with the same inputs skips complete
shards (manifest present, file of the recorded size and sha256) and rewrites
the others, a corrupt one included; a header or manifest of
another schema version, fingerprint, estimator, parameters, contents or fit is
refused with :class:`RecordsMismatchError`, so nothing written is damaged.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from jitr import fileio
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.estimator import RelevanceEstimator
from jitr.tf_cpu import import_tf

SCHEMA_VERSION = 1
FORMAT = "jitr.relevance"
HEADER_NAME = "relevance.json"
SHARD_PATTERN = "relevance-{index:05d}-of-{count:05d}.tfrecord"
MANIFEST_SUFFIX = ".json"
FIT_KEY = "fit_sha256"

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
# ... and, once the estimator is fitted, its digest.
_FITTED_IDENTITY_KEYS = (*_IDENTITY_KEYS, FIT_KEY)


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


def manifest_name(index: int, count: int) -> str:
  """The completion record of shard ``index``: ``relevance-SSSSS-of-NNNNN.tfrecord.json``."""
  return shard_name(index, count) + MANIFEST_SUFFIX


def check_worker(num_workers: int, worker_index: int) -> None:
  """Raise ``ValueError`` naming the setting unless ``0 <= worker_index < num_workers``."""
  if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
    raise ValueError(f"num_workers={num_workers!r}: expected a whole number of workers >= 1")
  if isinstance(worker_index, bool) or not isinstance(worker_index, int):
    raise ValueError(f"worker_index={worker_index!r}: expected a whole number")
  if not 0 <= worker_index < num_workers:
    raise ValueError(
      f"worker_index={worker_index} is outside [0, num_workers={num_workers}): "
      f"expected one of 0..{num_workers - 1}"
    )


def worker_shards(num_shards: int, num_workers: int = 1, worker_index: int = 0) -> list[int]:
  """The shards worker ``i`` of ``N`` writes: ``s`` in ``[0, num_shards)`` with ``s % N == i``.

  Round robin, so neighbouring shards (similar cost) go to different workers and
  every worker count splits the same shards (a run may resume with another ``N``).
  """
  check_worker(num_workers, worker_index)
  return list(range(worker_index, num_shards, num_workers))


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


def read_header_file(out_dir: str) -> dict[str, Any] | None:
  """The header of ``out_dir``, or ``None`` when there is none."""
  path = os.path.join(out_dir, HEADER_NAME)
  if not os.path.exists(path):
    return None
  return fileio.read_json_header(
    path,
    FORMAT,
    error=RecordsCorruptError,
    mismatch_error=RecordsMismatchError,
    hint="; delete the directory and re-run",
  )


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
        "computed for another caption list (dataset fingerprint "
        f"{str(have.get('fingerprint'))[:12]}..., "
        f"these captions have {want['fingerprint'][:12]}...)"
      )
    elif key == FIT_KEY and have is None:
      msg = f"written by an earlier jitr, without the field {FIT_KEY!r}"
    elif key == FIT_KEY:
      msg = (
        f"written by an estimator fitted differently (fit digest {str(have)[:12]}..., this "
        f"worker's fit has {str(want)[:12]}...): run every worker with the same jitr, libraries "
        "and device"
      )
    else:
      msg = f"field {key!r} is {have!r}, this run expects {want!r}"
    raise RecordsMismatchError(f"{path}: {msg}. Use another --out directory or delete this one.")


def serialize_example(
  captions: CaptionSet,
  image: int,
  vectors: np.ndarray | None,
  topk_idx: np.ndarray | None,
  topk_val: np.ndarray | None,
) -> bytes:
  """One ``tf.train.Example`` (see the schema in the module docstring)."""
  tf = import_tf()
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
  example = tf.train.Example(features=tf.train.Features(feature=feature))
  return example.SerializeToString(deterministic=True)


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


_TMP_RE = re.compile(r"\.tmp-(?:(?P<host>.+)-)?(?P<pid>\d+)(?:-[0-9a-f]+)?$")


def json_bytes(obj: Any) -> bytes:
  """The file bytes of ``obj``: indented, sorted keys, trailing newline (deterministic)."""
  return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _process_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def remove_stale_tmp_files(out_dir: str, log: Callable[[str], None]) -> None:
  """Remove temporary files left by dead processes of this host (or earlier calls of this one).

  Files of live processes, and of other hosts (whose processes cannot be
  checked), are left alone: they may be another worker's write in flight.
  """
  host = fileio.host_tag()
  for stale in sorted(glob.glob(os.path.join(out_dir, "*.tmp-*"))):
    match = _TMP_RE.search(stale)
    if match is None or (match["host"] is not None and match["host"] != host):
      continue
    pid = int(match["pid"])
    if pid == os.getpid() or not _process_alive(pid):
      log(f"removing unfinished file {os.path.basename(stale)}")
      try:
        os.remove(stale)
      except FileNotFoundError:  # another worker removed it first
        pass


def _write_shard(path: str, captions: CaptionSet, data: ShardData) -> int:
  tf = import_tf()
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


def read_manifest(out_dir: str, index: int, count: int) -> dict[str, Any] | None:
  """The manifest of shard ``index``, or ``None`` when it is missing or unreadable."""
  path = os.path.join(out_dir, manifest_name(index, count))
  try:
    with open(path, encoding="utf-8") as f:
      manifest = json.load(f)
  except (FileNotFoundError, json.JSONDecodeError):
    return None
  if not isinstance(manifest, dict) or not isinstance(manifest.get("identity"), dict):
    return None
  return manifest


_SHA256_CACHE: dict[tuple[str, int, int, int], str] = {}


def cached_file_sha256(path: str) -> str:
  """:func:`file_sha256`, computed once per file version (path, inode, size, mtime)."""
  st = os.stat(path)
  key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns)
  if key not in _SHA256_CACHE:
    _SHA256_CACHE[key] = file_sha256(path)
  return _SHA256_CACHE[key]


def shard_is_complete(out_dir: str, entry: dict[str, Any] | None) -> bool:
  """A shard is complete when its entry is recorded and the file has the recorded size
  and sha256 (so a shard with flipped bytes is rewritten by a re-run)."""
  if not entry:
    return False
  path = os.path.join(out_dir, entry["file"])
  if not os.path.isfile(path) or os.path.getsize(path) != entry["bytes"]:
    return False
  return cached_file_sha256(path) == entry.get("sha256")


def is_complete_set(out_dir: str, header: dict[str, Any], contents: dict[str, Any]) -> bool:
  """Whether ``header`` stores ``contents`` (vectors / top-K; the dimension aside) and
  every one of its shards is complete: a finished set that a later run only reads,
  without the estimator's fit (minutes for the ``tokens`` estimator)."""
  have = header.get("contents") or {}
  same = all(have.get(k) == contents.get(k) for k in ("vectors", "top_k"))
  shards = header.get("shards") or []
  return same and bool(shards) and all(shard_is_complete(out_dir, e) for e in shards)


def complete_entry(out_dir: str, index: int, identity: dict[str, Any]) -> dict[str, Any] | None:
  """Shard ``index``'s header entry if its manifest and file are complete, else ``None``.

  Raises:
    RecordsMismatchError: the manifest was written with other settings or fit.
  """
  count = identity["num_shards"]
  manifest = read_manifest(out_dir, index, count)
  if manifest is None:
    return None
  path = os.path.join(out_dir, manifest_name(index, count))
  check_compatible(manifest["identity"], identity, path, _FITTED_IDENTITY_KEYS)
  entry = manifest.get("shard")
  return entry if shard_is_complete(out_dir, entry) else None


def collect_header(out_dir: str, identity: dict[str, Any]) -> dict[str, Any]:
  """The header of ``out_dir`` as its manifests say: ``identity`` + complete shards."""
  shards = [complete_entry(out_dir, s, identity) for s in range(identity["num_shards"])]
  return {**identity, "shards": shards}


def _read_bytes(path: str) -> bytes | None:
  try:
    with open(path, "rb") as f:
      return f.read()
  except FileNotFoundError:
    return None


def publish_header(out_dir: str, identity: dict[str, Any]) -> dict[str, Any]:
  """(Re)write the header from the manifests; returns it.

  Re-reads the manifests after writing and writes again until both agree:
  manifests only appear, so the last header any worker writes lists every
  complete shard, even when a slower worker's write lands after the
  completing one.
  """
  path = os.path.join(out_dir, HEADER_NAME)
  header = None
  while True:
    existing = read_header_file(out_dir)
    if existing is not None:  # first the set's settings, then the manifests'
      check_compatible(existing, identity, path, _FITTED_IDENTITY_KEYS)
    if header is None:
      header = collect_header(out_dir, identity)
    data = json_bytes(header)
    if existing is None or _read_bytes(path) != data:
      fileio.write_bytes_atomic(path, data)
    again = collect_header(out_dir, identity)
    if again == header:
      return header
    header = again


def write_relevance_records(
  out_dir: str,
  captions: CaptionSet,
  estimator: RelevanceEstimator,
  *,
  vectors: bool | None = None,
  top_k: int | None = None,
  images_per_shard: int = 1024,
  fit: bool = True,
  num_workers: int = 1,
  worker_index: int = 0,
  log: Callable[[str], None] = print,
) -> dict[str, Any]:
  """Write (or finish writing) the relevance TFRecords of ``captions`` to ``out_dir``.

  Several processes or hosts may share the work: start worker ``i`` of ``N``
  (``num_workers=N, worker_index=i``) for every ``i``; each writes the shards
  ``s % N == i`` and the header; the one finishing last leaves it complete. The
  files are byte-identical to a single process's, whatever ``N``.

  Args:
    out_dir: output directory (created if missing).
    captions: the dataset's captions.
    estimator: an unfitted estimator (fitted here after the cheap checks) or,
      with ``fit=False``, one already fitted on ``captions``.
    vectors: store per-caption vectors; default: ``estimator.stores_vectors``.
    top_k: store the K best captions per image (default: 100 for estimators without vectors).
    images_per_shard: images per TFRecord shard.
    num_workers: how many workers share the shards (``N >= 1``).
    worker_index: this worker's index in ``[0, N)``.
    log: where progress lines go.

  Returns:
    The header as this worker leaves it (complete when every shard is).

  Raises:
    RecordsMismatchError: ``out_dir`` holds records of other inputs, schema or fit.
    ValueError: bad ``num_workers`` / ``worker_index`` / ``images_per_shard``,
      nothing to store (no vectors and no top-K), or vectors asked of an
      estimator that is not a cosine.
  """
  check_worker(num_workers, worker_index)
  if isinstance(images_per_shard, bool) or not isinstance(images_per_shard, int):
    raise ValueError(f"images_per_shard={images_per_shard!r}: expected a whole number >= 1")
  if images_per_shard < 1:
    raise ValueError(f"images_per_shard={images_per_shard}: expected a whole number >= 1")
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
    if is_complete_set(out_dir, existing, wanted["contents"]):
      log(f"{out_dir}: every shard complete, reused without fitting the estimator")
      return existing
  remove_stale_tmp_files(out_dir, log)

  # 2. fit, then the full identity (vector dimension, fit digest) and the header
  if fit:
    estimator.fit(captions)
  dim = int(estimator.caption_vectors(np.arange(1)).shape[1]) if vectors else None
  wanted["contents"]["dim"] = dim
  wanted[FIT_KEY] = fit_digest(estimator, captions)
  identity = {k: v for k, v in wanted.items() if k != "shards"}
  header = publish_header(out_dir, identity)

  # 3. this worker's shards, the header after each
  n = header["num_shards"]
  mine = worker_shards(n, num_workers, worker_index)
  if num_workers > 1:
    log(f"worker {worker_index} of {num_workers}: {len(mine)} of {n} shards")
  for s in mine:
    name = shard_name(s, n)
    if complete_entry(out_dir, s, identity) is not None:
      log(f"shard {s + 1}/{n}: complete, skipped")
      continue
    if read_manifest(out_dir, s, n) is not None:
      log(f"shard {s + 1}/{n}: {name} is missing, truncated or corrupt (sha256); rewriting it")
    lo, hi = s * images_per_shard, min((s + 1) * images_per_shard, captions.num_images)
    images = np.arange(lo, hi, dtype=np.int64)
    data = compute_shard(captions, estimator, images, vectors=vectors, top_k=top_k)
    path = os.path.join(out_dir, name)
    records = _write_shard(path, captions, data)
    entry = {
      "file": name,
      "images": [lo, hi],
      "records": records,
      "bytes": os.path.getsize(path),
      "sha256": file_sha256(path),
    }
    manifest = {"identity": identity, "shard": entry}
    fileio.write_bytes_atomic(os.path.join(out_dir, manifest_name(s, n)), json_bytes(manifest))
    header = publish_header(out_dir, identity)
    log(f"shard {s + 1}/{n}: wrote {records} images to {name}")
  header = publish_header(out_dir, identity)
  done = sum(entry is not None for entry in header["shards"])
  if done < n:
    log(f"{done} of {n} shards complete: the worker that finishes last completes {header_path}")
  return header
