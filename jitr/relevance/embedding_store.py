"""A small integrity-checked store of named float32 arrays (a teacher's embeddings).

Layout of an output directory::

    OUT/embeddings.npz     the arrays (``numpy.savez``, no pickles)
    OUT/embeddings.json    header: format, schema_version, identity, arrays, file, bytes, sha256

``identity`` is what the arrays were computed from (the caller's JSON-able dict:
e.g. a teacher workdir, its checkpoint step and the captions' fingerprint);
``arrays`` maps each name to its ``shape`` and ``dtype``; ``bytes`` / ``sha256`` are
those of ``embeddings.npz``. Both files are written atomically (temporary name, then
rename), the arrays first, so a header always describes a complete file. A reader
checks the header's identity against the one it expects (another one is refused
with :class:`EmbeddingsMismatchError`, nothing is overwritten) and the file's size
and sha256 (:class:`EmbeddingsCorruptError`: the caller recomputes and rewrites).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import fileio, paths
from jitr.relevance.checksums import file_sha256

FORMAT = "jitr.embeddings"
SCHEMA_VERSION = 1
HEADER_NAME = "embeddings.json"
ARRAYS_NAME = "embeddings.npz"


class EmbeddingsMismatchError(ValueError):
  """The directory holds embeddings computed from other inputs."""


class EmbeddingsCorruptError(ValueError):
  """The header or the arrays file is damaged, incomplete or modified."""


def write_embeddings(
  out_dir: str, arrays: Mapping[str, np.ndarray], identity: Mapping[str, Any]
) -> dict[str, Any]:
  """Writes ``arrays`` (cast to float32) and their header to ``out_dir``; returns the header.

  Raises:
    ValueError: no arrays, or a name that is not a plain identifier.
  """
  if not arrays:
    raise ValueError(f"{out_dir}: nothing to store (no arrays)")
  for name in arrays:
    if not str(name).isidentifier():
      raise ValueError(f"{out_dir}: array name {name!r} is not a plain identifier")
  arrays = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
  paths.makedirs(out_dir)
  path = os.path.join(out_dir, ARRAYS_NAME)
  with fileio.atomic_path(path) as tmp, paths.open(tmp, "wb") as f:
    np.savez(f, **arrays)
  header = {
    "format": FORMAT,
    "schema_version": SCHEMA_VERSION,
    "identity": json.loads(json.dumps(dict(identity))),
    "arrays": {k: {"shape": list(v.shape), "dtype": "float32"} for k, v in arrays.items()},
    "file": ARRAYS_NAME,
    "bytes": paths.getsize(path),
    "sha256": file_sha256(path),
  }
  fileio.write_json_atomic(os.path.join(out_dir, HEADER_NAME), header)
  return header


def _read_header(out_dir: str) -> dict[str, Any] | None:
  path = os.path.join(out_dir, HEADER_NAME)
  if not paths.exists(path):
    return None
  header = fileio.read_json_header(path, FORMAT, error=EmbeddingsCorruptError)
  if header.get("schema_version") != SCHEMA_VERSION:
    raise EmbeddingsMismatchError(
      f"{path}: written with schema version {header.get('schema_version')!r}, this jitr "
      f"reads version {SCHEMA_VERSION}; delete {out_dir} to recompute"
    )
  return header


def _check_identity(have: Mapping[str, Any], want: Mapping[str, Any], path: str) -> None:
  for key in sorted(set(have) | set(want)):
    if have.get(key) != want.get(key):
      raise EmbeddingsMismatchError(
        f"{path}: identity field {key!r} is {have.get(key)!r}, this run expects "
        f"{want.get(key)!r}; delete {os.path.dirname(path)} to recompute"
      )


def read_embeddings(out_dir: str, identity: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
  """The arrays of ``out_dir`` if it was written for ``identity``; ``None`` if it holds none.

  Raises:
    EmbeddingsMismatchError: written for another identity or schema version.
    EmbeddingsCorruptError: the header is damaged, or the arrays file is missing or has
      another size, sha256 or contents than the header records.
  """
  header = _read_header(out_dir)
  if header is None:
    return None
  header_path = os.path.join(out_dir, HEADER_NAME)
  _check_identity(header.get("identity") or {}, json.loads(json.dumps(dict(identity))), header_path)
  path = os.path.join(out_dir, str(header.get("file", ARRAYS_NAME)))
  if not paths.isfile(path):
    raise EmbeddingsCorruptError(f"{path}: missing (the header {header_path} lists it)")
  if paths.getsize(path) != header.get("bytes") or file_sha256(path) != header.get("sha256"):
    raise EmbeddingsCorruptError(
      f"{path}: size or sha256 differs from {header_path} (truncated or modified)"
    )
  with paths.open(path, "rb") as f, np.load(f, allow_pickle=False) as data:
    arrays = {name: np.asarray(data[name]) for name in data.files}
  expected = {k: v.get("shape") for k, v in (header.get("arrays") or {}).items()}
  got = {k: list(v.shape) for k, v in arrays.items()}
  if got != expected:
    raise EmbeddingsCorruptError(f"{path}: holds arrays {got}, the header lists {expected}")
  return arrays
