"""Shard manifests, and the header that they determine, (re)written by any worker.

**Shard manifests** ``relevance-SSSSS-of-NNNNN.tfrecord.json``: written after their
shard is complete; ``{identity, shard}`` = the header without ``shards`` and the shard's
header entry. A shard is complete when its manifest is present and its file has the
recorded size and sha256. The header is a pure function of the manifests on disk
(:func:`collect_header`): after each of its shards a worker rewrites it, and re-reads
the manifests after writing until the two agree (:func:`publish_header`), so the last
header written lists every complete shard; concurrent writers of the same state write
the same bytes.
"""

from __future__ import annotations

import json
import os
from typing import Any

from jitr import fileio, paths
from jitr.relevance.checksums import ChecksumCache
from jitr.relevance.records.header import (
  FITTED_IDENTITY_KEYS,
  HEADER_NAME,
  check_compatible,
  json_bytes,
  read_header_file,
)
from jitr.relevance.records.shards import manifest_name


def read_manifest(out_dir: str, index: int, count: int) -> dict[str, Any] | None:
  """The manifest of shard ``index``, or ``None`` when it is missing or unreadable."""
  path = os.path.join(out_dir, manifest_name(index, count))
  try:
    with paths.open(path, encoding="utf-8") as f:
      manifest = json.load(f)
  except (FileNotFoundError, json.JSONDecodeError):
    return None
  if not isinstance(manifest, dict) or not isinstance(manifest.get("identity"), dict):
    return None
  return manifest


def write_manifest(
  out_dir: str, index: int, identity: dict[str, Any], entry: dict[str, Any]
) -> None:
  """Record shard ``index`` as complete: its manifest ``{identity, shard: entry}``."""
  path = os.path.join(out_dir, manifest_name(index, identity["num_shards"]))
  fileio.write_bytes_atomic(path, json_bytes({"identity": identity, "shard": entry}))


def shard_is_complete(out_dir: str, entry: dict[str, Any] | None, checksums: ChecksumCache) -> bool:
  """A shard is complete when its entry is recorded and the file has the recorded size
  and sha256 (so a shard with flipped bytes is rewritten by a re-run)."""
  if not entry:
    return False
  path = os.path.join(out_dir, entry["file"])
  if not paths.isfile(path) or paths.getsize(path) != entry["bytes"]:
    return False
  return checksums.sha256(path) == entry.get("sha256")


def is_complete_set(
  out_dir: str, header: dict[str, Any], contents: dict[str, Any], checksums: ChecksumCache
) -> bool:
  """Whether ``header`` stores ``contents`` (vectors / top-K; the dimension aside) and
  every one of its shards is complete: a finished set that a later run only reads,
  without the estimator's fit (minutes for the ``tokens`` estimator)."""
  have = header.get("contents") or {}
  same = all(have.get(k) == contents.get(k) for k in ("vectors", "top_k"))
  shards = header.get("shards") or []
  return same and bool(shards) and all(shard_is_complete(out_dir, e, checksums) for e in shards)


def complete_entry(
  out_dir: str, index: int, identity: dict[str, Any], checksums: ChecksumCache
) -> dict[str, Any] | None:
  """Shard ``index``'s header entry if its manifest and file are complete, else ``None``.

  Raises:
    RecordsMismatchError: the manifest was written with other settings or fit.
  """
  count = identity["num_shards"]
  manifest = read_manifest(out_dir, index, count)
  if manifest is None:
    return None
  path = os.path.join(out_dir, manifest_name(index, count))
  check_compatible(manifest["identity"], identity, path, FITTED_IDENTITY_KEYS)
  entry = manifest.get("shard")
  return entry if shard_is_complete(out_dir, entry, checksums) else None


def collect_header(
  out_dir: str, identity: dict[str, Any], checksums: ChecksumCache
) -> dict[str, Any]:
  """The header of ``out_dir`` as its manifests say: ``identity`` + complete shards."""
  count = identity["num_shards"]
  shards = [complete_entry(out_dir, s, identity, checksums) for s in range(count)]
  return {**identity, "shards": shards}


def _read_bytes(path: str) -> bytes | None:
  """The bytes of the file ``path``, or ``None`` when there is none."""
  try:
    with paths.open(path, "rb") as f:
      return f.read()
  except FileNotFoundError:
    return None


def publish_header(
  out_dir: str, identity: dict[str, Any], checksums: ChecksumCache
) -> dict[str, Any]:
  """(Re)write the header from the manifests; returns it.

  Re-reads the manifests after writing and writes again until both agree:
  manifests only appear, so the last header any worker writes lists every
  complete shard, even when a slower worker's write lands after the
  completing one.

  Raises:
    RecordsMismatchError: the header on disk was written with other settings or fit.
  """
  path = os.path.join(out_dir, HEADER_NAME)
  header = None
  while True:
    existing = read_header_file(out_dir)
    if existing is not None:  # first the set's settings, then the manifests'
      check_compatible(existing, identity, path, FITTED_IDENTITY_KEYS)
    if header is None:
      header = collect_header(out_dir, identity, checksums)
    data = json_bytes(header)
    if existing is None or _read_bytes(path) != data:
      fileio.write_bytes_atomic(path, data)
    again = collect_header(out_dir, identity, checksums)
    if again == header:
      return header
    header = again
