"""The checked header of a relevance-records directory (written by :mod:`jitr.relevance.records`).

:func:`load_header` refuses what cannot be read as it is: no header, another
format or schema version, an incomplete or truncated shard, and optionally a
caption-list fingerprint or shard sha256 that differs from the header's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from jitr import fileio, paths
from jitr.relevance.checksums import file_sha256
from jitr.relevance.records.header import FORMAT, HEADER_NAME
from jitr.relevance.records.schema import SCHEMA_VERSION

SUPPORTED_SCHEMA_VERSIONS = (SCHEMA_VERSION,)


class RelevanceRecordsError(ValueError):
  """Relevance records that cannot be read as they are (missing, truncated, mismatched)."""


# JSON's name of each value type a header file may hold instead of an object
_JSON_KINDS = {list: "an array", str: "a string", bool: "true/false", type(None): "null"}


def _read_json(path: str) -> dict[str, Any]:
  """The header object of ``path``; a missing file, text that is not JSON, or JSON that is
  not an object (e.g. a list) is a :class:`RelevanceRecordsError` naming the file."""
  if not paths.isfile(path):
    raise RelevanceRecordsError(
      f"{path}: no relevance header (expected the output of jitr-precompute)"
    )
  header = fileio.read_json(path, error=RelevanceRecordsError)
  if not isinstance(header, dict):
    kind = _JSON_KINDS.get(type(header), "a number")
    raise RelevanceRecordsError(
      f"{path}: the header is {kind}, expected a JSON object (a damaged header: delete the "
      "folder and re-run jitr-precompute)"
    )
  return header


def _check_format(header: Mapping[str, Any], path: str) -> None:
  if header.get("format") != FORMAT:
    raise RelevanceRecordsError(
      f"{path}: field 'format' is {header.get('format')!r}, expected {FORMAT!r}"
    )
  version = header.get("schema_version")
  if version not in SUPPORTED_SCHEMA_VERSIONS:
    raise RelevanceRecordsError(
      f"{path}: field 'schema_version' is {version!r}, "
      f"this reader supports {list(SUPPORTED_SCHEMA_VERSIONS)}"
    )


# field path -> (expected types, what to say); checked before any field is used
_FIELDS = {
  ("dataset",): (dict, "an object"),
  ("dataset", "fingerprint"): (str, "a string"),
  ("dataset", "num_images"): (int, "an integer"),
  ("dataset", "num_captions"): (int, "an integer"),
  ("dataset", "captions_per_image"): (int, "an integer"),
  ("contents",): (dict, "an object"),
  ("num_shards",): (int, "an integer"),
  ("shards",): (list, "a list"),
}
_SHARD_FIELDS = {
  "file": (str, "a string"),
  "bytes": (int, "an integer"),
  "sha256": (str, "a string"),
}


def _is(value: Any, kind: type) -> bool:
  return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _check_fields(header: Mapping[str, Any], path: str) -> None:
  """Every field the readers use exists with its type: one error naming the field."""
  for keys, (kind, what) in _FIELDS.items():
    value = header
    for key in keys:
      value = value.get(key) if isinstance(value, dict) else None
    if not _is(value, kind):
      raise RelevanceRecordsError(
        f"{path}: field {'.'.join(keys)!r} is {value!r}, expected {what} (a damaged header: "
        "delete the folder and re-run jitr-precompute)"
      )
  _check_scale(header, path)
  _check_contents(header["contents"], path)
  if len(header["shards"]) != header["num_shards"]:
    raise RelevanceRecordsError(
      f"{path}: field 'shards' has {len(header['shards'])} entries, 'num_shards' is "
      f"{header['num_shards']}"
    )
  for s, entry in enumerate(header["shards"]):
    if not entry:
      continue  # an incomplete shard: _check_shards says so
    for key, (kind, what) in _SHARD_FIELDS.items():
      value = entry.get(key) if isinstance(entry, dict) else None
      if not _is(value, kind):
        raise RelevanceRecordsError(
          f"{path}: field 'shards[{s}].{key}' is {value!r}, expected {what} (a damaged "
          "header: delete the folder and re-run jitr-precompute)"
        )


def _is_count(value: Any, minimum: int) -> bool:
  """Whether ``value`` is a whole number (not a bool) at least ``minimum``."""
  return _is(value, int) and value >= minimum


def contents_problem(contents: Mapping[str, Any]) -> tuple[str, Any, str] | None:
  """``(field, value, what was expected)`` of the first field of a header's ``contents``
  that its readers cannot use (``vectors`` true or false; ``dim`` a whole number >= 1 when
  vectors are stored; ``top_k`` null or a whole number >= 0, 0 and null storing no top-k
  lists), else ``None``."""
  vectors = contents.get("vectors")
  if not isinstance(vectors, bool):
    return "contents.vectors", vectors, "true or false"
  if vectors and not _is_count(contents.get("dim"), 1):
    return "contents.dim", contents.get("dim"), "a whole number >= 1 (the vectors' size)"
  top_k = contents.get("top_k")
  if top_k is not None and not _is_count(top_k, 0):
    return "contents.top_k", top_k, "a whole number >= 0 or null (the length of the top-k lists)"
  return None


def _check_contents(contents: Mapping[str, Any], path: str) -> None:
  """Refuses a ``contents`` field of the wrong type or range (:func:`contents_problem`)
  with one line naming the file and the field."""
  problem = contents_problem(contents)
  if problem is not None:
    field, value, what = problem
    raise RelevanceRecordsError(
      f"{path}: field {field!r} is {value!r}, expected {what} (a damaged header: delete the "
      "folder and re-run jitr-precompute)"
    )


def _check_scale(header: Mapping[str, Any], path: str) -> None:
  """``relevance.scale`` (relevance = ``clip(score / scale, 0, 1)``) is a finite number > 0."""
  relevance = header.get("relevance")
  scale = relevance.get("scale") if isinstance(relevance, dict) else None
  number = isinstance(scale, (int, float)) and not isinstance(scale, bool)
  if not (number and math.isfinite(scale) and scale > 0):
    raise RelevanceRecordsError(
      f"{path}: field 'relevance.scale' is {scale!r}, expected a finite number > 0 (a damaged "
      "header: delete the folder and re-run jitr-precompute)"
    )


def _check_fingerprint(header: Mapping[str, Any], path: str, expected: str) -> None:
  have = header["dataset"]["fingerprint"]
  if have != expected:
    raise RelevanceRecordsError(
      f"{path}: field 'dataset.fingerprint' is {have[:12]}..., expected {expected[:12]}... "
      "(the records were computed for another caption list)"
    )


def _check_shards(header: Mapping[str, Any], directory: str, path: str, checksums: bool) -> None:
  n = header["num_shards"]
  for s, entry in enumerate(header["shards"]):
    if not entry:
      raise RelevanceRecordsError(
        f"{path}: shard {s + 1} of {n} is not complete (the write was interrupted); "
        "re-run jitr-precompute with the same arguments to finish it"
      )
    shard = os.path.join(directory, entry["file"])
    if not paths.isfile(shard):
      raise RelevanceRecordsError(f"{shard}: shard file missing (expected {entry['bytes']} bytes)")
    size = paths.getsize(shard)
    if size != entry["bytes"]:
      raise RelevanceRecordsError(
        f"{shard}: {size} bytes, the header records {entry['bytes']} (truncated or modified); "
        "delete it and re-run jitr-precompute to rewrite it"
      )
    if checksums and file_sha256(shard) != entry["sha256"]:
      raise RelevanceRecordsError(
        f"{shard}: sha256 differs from the header's (corrupt or modified); "
        "re-run jitr-precompute (or jitr-train) with the same arguments to rewrite it"
      )


def load_header(
  directory: str, *, expected_fingerprint: str | None = None, verify_checksums: bool = True
) -> dict[str, Any]:
  """The checked header of a relevance-records directory.

  With ``verify_checksums`` (the default) every shard's sha256 is compared with
  the header's (each shard file is read once per call).

  Raises:
    RelevanceRecordsError: no header, another format or schema version, an
      incomplete or truncated shard, a checksum or fingerprint mismatch.
  """
  path = os.path.join(directory, HEADER_NAME)
  header = _read_json(path)
  _check_format(header, path)
  _check_fields(header, path)
  if expected_fingerprint is not None:
    _check_fingerprint(header, path, expected_fingerprint)
  _check_shards(header, directory, path, verify_checksums)
  return header


def shard_paths(directory: str, header: Mapping[str, Any]) -> list[str]:
  """The shard files in image order."""
  return [os.path.join(directory, e["file"]) for e in header["shards"]]
