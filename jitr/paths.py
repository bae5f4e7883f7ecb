"""Paths every host can see: local paths and storage URLs (``gs://``, ``s3://``) alike.

A pod slice has no shared POSIX file system; its hosts share a bucket. Every jitr module
reads, lists and writes files through these functions, so a workdir, ``data_dir``,
``precomp_root`` or an imported checkpoint may be a local path or a URL:

- a **local path** goes to :mod:`os` and the built-in :func:`open`, unchanged (memory
  maps, fsync and atomic renames keep working);
- a **URL** (``gs://BUCKET/...``, ``s3://``, ``az://``; :data:`URL_PREFIXES`) goes to
  ``etils.epath``, the path layer orbax and TFDS use (TensorFlow's file systems when
  TensorFlow is installed, fsspec otherwise). TensorFlow's readers and writers, orbax and
  TFDS take the same strings themselves.

Paths stay strings: :func:`os.path.join`, :func:`os.path.dirname` and
:func:`os.path.basename` are right for URLs too; :func:`os.path.abspath` and
:func:`os.path.normpath` are not (``gs://b`` would become ``CWD/gs:/b``), hence
:func:`absolute`.

A shared utility (like ``jitr.fileio``): any jitr subpackage may import it.
"""

from __future__ import annotations

import builtins
import glob as _glob
import os
import shutil
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from jitr.tf_cpu import load_before_tensorflow

if TYPE_CHECKING:
  from etils import epath

__all__ = [
  "URL_PREFIXES",
  "absolute",
  "exists",
  "getsize",
  "glob",
  "isdir",
  "isfile",
  "is_url",
  "listdir",
  "makedirs",
  "open",
  "remove",
  "replace",
  "rmtree",
  "walk",
]

URL_PREFIXES = ("gs://", "s3://", "az://")
"""The URL schemes ``etils.epath`` reads and writes (Cloud Storage, S3, Azure Blob)."""

PathLike = str | os.PathLike


def is_url(path: PathLike) -> bool:
  """Whether ``path`` is a storage URL (``gs://...``) rather than a local path."""
  return os.fspath(path).startswith(URL_PREFIXES)


def _epath(path: PathLike) -> epath.Path:
  """``epath.Path(path)``; epath is imported on the first URL (``jitr[train]`` installs it:
  the core install reads local paths only). epath's Cloud Storage backend imports
  TensorFlow when it is installed: the modules that must load before it load first."""
  load_before_tensorflow()
  try:
    from etils import epath
  except ModuleNotFoundError:
    raise ModuleNotFoundError(
      f"{os.fspath(path)}: reading or writing a storage URL needs etils[epath], which is not "
      "installed; install it with: pip install 'jitr[train]'"
    ) from None
  return epath.Path(os.fspath(path))


def absolute(path: PathLike) -> str:
  """``os.path.abspath(path)`` for a local path; a URL as it is (it is absolute already)."""
  path = os.fspath(path)
  return path.rstrip("/") if is_url(path) else os.path.abspath(path)


def exists(path: PathLike) -> bool:
  """Whether a file or folder is at ``path``."""
  return _epath(path).exists() if is_url(path) else os.path.exists(path)


def isdir(path: PathLike) -> bool:
  """Whether ``path`` is a folder (on a bucket: a prefix with objects below it)."""
  return _epath(path).is_dir() if is_url(path) else os.path.isdir(path)


def isfile(path: PathLike) -> bool:
  """Whether ``path`` is a file (an object, on a bucket)."""
  return _epath(path).is_file() if is_url(path) else os.path.isfile(path)


def getsize(path: PathLike) -> int:
  """The size of the file at ``path`` in bytes."""
  return _epath(path).stat().length if is_url(path) else os.path.getsize(path)


def listdir(path: PathLike) -> list[str]:
  """The names in the folder ``path`` (unsorted, as :func:`os.listdir`)."""
  if is_url(path):
    return [p.name for p in _epath(path).iterdir()]
  return os.listdir(path)


def makedirs(path: PathLike) -> None:
  """Creates the folder ``path`` and its parents; an existing folder is fine."""
  if is_url(path):
    _epath(path).mkdir(parents=True, exist_ok=True)
  else:
    os.makedirs(path, exist_ok=True)


def remove(path: PathLike) -> None:
  """Deletes the file at ``path`` (``FileNotFoundError`` when there is none)."""
  if is_url(path):
    _epath(path).unlink()
  else:
    os.remove(path)


def rmtree(path: PathLike) -> None:
  """Deletes the folder ``path`` and everything below it."""
  if is_url(path):
    _epath(path).rmtree()
  else:
    shutil.rmtree(path)


def replace(src: PathLike, dst: PathLike) -> None:
  """Moves ``src`` onto ``dst``, replacing it (atomic for local paths on one file system;
  a copy then a delete on a bucket)."""
  if is_url(src) or is_url(dst):
    _epath(src).replace(os.fspath(dst))
  else:
    os.replace(src, dst)


def glob(folder: PathLike, pattern: str) -> list[str]:
  """The sorted paths in ``folder`` whose names match ``pattern`` (``*``, ``?``, ``[...]``
  wildcards; the folder's own name is taken literally)."""
  if is_url(folder):
    return sorted(str(p) for p in _epath(folder).glob(pattern))
  return sorted(_glob.glob(os.path.join(_glob.escape(os.fspath(folder)), pattern)))


def walk(top: PathLike) -> Iterator[tuple[str, list[str], list[str]]]:
  """``(folder, subfolder names, file names)`` for ``top`` and every folder below it, top
  down (as :func:`os.walk`)."""
  if is_url(top):
    for root, dirs, files in _epath(top).walk():
      yield str(root), list(dirs), list(files)
  else:
    yield from os.walk(top)


def open(path: PathLike, mode: str = "r", *, encoding: str | None = None) -> IO[Any]:  # noqa: A001
  """Opens the file at ``path`` (modes ``r``, ``w``, ``a``, each with ``b``). Text is UTF-8
  on a bucket; a local file is read in ``encoding`` (the locale's when ``None``, as the
  built-in :func:`open`). A bucket's object appears whole when a file opened for writing
  is closed."""
  if is_url(path):
    return _epath(path).open(mode, encoding=encoding if "b" not in mode else None)
  return builtins.open(path, mode, encoding=encoding if "b" not in mode else None)
