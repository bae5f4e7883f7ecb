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

A URL that cannot be reached is one :class:`StorageError` line (an ``OSError``, which
the apps print as ``NAME: error: ...``), raised by the first function here that touches
it: a scheme the file systems in use do not serve (``s3://`` and ``az://`` with
TensorFlow's, which serve ``gs://`` only; with fsspec's, the package that provides it:
gcsfs, s3fs, adlfs) and a failure of the storage library itself (no credentials, no
network: its first line, and how to authenticate). A URL that is not there is
``FileNotFoundError`` / ``False``, as for a local path. Reading or writing an opened file
is not covered: the library's error is raised as it is.

Paths stay strings: :func:`os.path.join`, :func:`os.path.dirname` and
:func:`os.path.basename` are right for URLs too; :func:`os.path.abspath` and
:func:`os.path.normpath` are not (``gs://b`` would become ``CWD/gs:/b``), hence
:func:`absolute`.

A shared utility (like ``jitr.fileio``): any jitr subpackage may import it.
"""

from __future__ import annotations

import builtins
import errno
import glob as _glob
import os
import shutil
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, TypeVar

from jitr.tf_cpu import prepare_for_tensorflow

if TYPE_CHECKING:
  from etils import epath

__all__ = [
  "URL_PREFIXES",
  "StorageError",
  "absolute",
  "check_reachable",
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


class StorageError(OSError):
  """A storage URL that cannot be reached: no file system for its scheme, or the storage
  library failed (credentials, network). One line naming the URL, what failed and what to
  do."""


# Per scheme: the service's name, how to give credentials, the fsspec file system's
# package, and a FUSE tool that mounts the bucket as a folder.
_SERVICES: dict[str, tuple[str, str, str, str]] = {
  "gs": (
    "Cloud Storage",
    "gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS=KEY.json",
    "gcsfs",
    "gcsfuse",
  ),
  "s3": (
    "S3",
    "aws configure, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    "s3fs",
    "s3fs-fuse or mountpoint-s3",
  ),
  "az": (
    "Azure Blob Storage",
    "az login, or AZURE_STORAGE_CONNECTION_STRING",
    "adlfs",
    "blobfuse2",
  ),
}
# Where the exceptions of the storage libraries epath uses come from (module prefixes).
_STORAGE_LIBRARIES = (
  "tensorflow",
  "google.auth",
  "google.api_core",
  "google.cloud",
  "gcsfs",
  "botocore",
  "aiobotocore",
  "s3fs",
  "azure",
  "adlfs",
)


def _scheme(path: str) -> str:
  return path.split("://", 1)[0]


def _tf_schemes(gfile: Any) -> tuple[str, ...]:
  """The URL schemes TensorFlow's file systems serve now (``tf.io.gfile``; a package such
  as tensorflow-io may register more), e.g. ``('gs',)``."""
  return tuple(s for s in gfile.get_registered_schemes() if s not in ("", "file", "ram"))


def file_system_problem(path: str, backend: Any) -> str | None:
  """Why epath's ``backend`` (the one it picked for the URL ``path``) has no file system
  for ``path``'s scheme, in one line naming what to use instead; ``None`` when it has one,
  or when ``backend`` is neither TensorFlow's nor fsspec's (a stand-in answers for
  itself)."""
  from etils.epath import backend as backend_lib

  scheme = _scheme(path)
  service, _, package, fuse = _SERVICES[scheme]
  if backend is backend_lib.tf_backend:
    get = getattr(backend.gfile, "get_registered_schemes", None)
    served = _tf_schemes(backend.gfile) if get is not None else (scheme,)
    if scheme in served:
      return None
    listed = ", ".join(f"{s}://" for s in served) or "no URL scheme"
    return (
      f"{path}: no file system for {scheme}:// URLs ({service}): with TensorFlow installed "
      f"(as jitr[train] installs it) jitr, orbax and TFDS read and write URLs through "
      f"TensorFlow's file systems, which serve {listed} only; use a gs:// bucket or a "
      f"folder (a local copy, or the bucket mounted with {fuse})"
    )
  if backend is backend_lib.fsspec_backend:
    import fsspec

    try:
      fsspec.get_filesystem_class("gcs" if scheme == "gs" else scheme)
    except ImportError:
      return (
        f"{path}: no file system for {scheme}:// URLs ({service}): etils.epath reads them "
        f"through fsspec, whose {scheme}:// file system is the package {package}, which is "
        f"not installed; install it with: pip install {package}"
      )
  return None


def _epath(path: PathLike) -> epath.Path:
  """``epath.Path(path)``; epath is imported on the first URL (``jitr[train]`` installs it:
  the core install reads local paths only). epath's Cloud Storage backend imports
  TensorFlow when it is installed: what must come first is done first
  (:func:`jitr.tf_cpu.prepare_for_tensorflow`: the modules it breaks, its quiet
  environment). A scheme without a file system is a :class:`StorageError`
  (:func:`file_system_problem`)."""
  prepare_for_tensorflow()
  try:
    from etils import epath
  except ModuleNotFoundError:
    raise ModuleNotFoundError(
      f"{os.fspath(path)}: reading or writing a storage URL needs etils[epath], which is not "
      "installed; install it with: pip install 'jitr[train]'"
    ) from None
  url = epath.Path(os.fspath(path))
  problem = file_system_problem(os.fspath(path), getattr(url, "_backend", None))
  if problem is not None:
    raise StorageError(problem)
  return url


def storage_library_error(err: BaseException) -> BaseException | None:
  """The first exception of ``err``'s chain (itself, then what it was raised from or
  during) that a storage library raised (:data:`_STORAGE_LIBRARIES`), else ``None``."""
  seen = set()
  while err is not None and id(err) not in seen:
    seen.add(id(err))
    if type(err).__module__.startswith(_STORAGE_LIBRARIES):
      return err
    err = err.__cause__ or err.__context__
  return None


# What a URL that is not there, or a full disk, raises: the caller's to handle, as for a
# local path.
_PATH_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)


def unreachable(path: str, action: str, cause: BaseException) -> str:
  """The one line of a storage URL ``path`` that could not be reached while ``action``
  (``"checking whether it exists"``, ...): the library's first line and how to
  authenticate."""
  service, credentials, _, _ = _SERVICES[_scheme(path)]
  lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
  first = f"{type(cause).__name__}: {lines[0][:200]}" if lines else type(cause).__name__
  return (
    f"{path}: could not reach {service} while {action} ({first}); check the network and "
    f"the credentials ({credentials})"
  )


_T = TypeVar("_T")


def _on_url(path: PathLike, action: str, call: Callable[[], _T]) -> _T:
  """``call()`` (an epath call on the URL ``path``); a failure of the storage library
  becomes one :class:`StorageError` line (:func:`unreachable`); a URL that is not there is
  ``FileNotFoundError``, as for a local path. Other errors are raised as they are."""
  path = os.fspath(path)
  try:
    return call()
  except _PATH_ERRORS:
    raise
  except Exception as err:
    cause = storage_library_error(err)
    if cause is None or "No space left on device" in str(cause):  # a full disk: fileio's
      raise
    if type(cause).__name__ == "NotFoundError":  # TensorFlow's, raised as it is by epath
      raise FileNotFoundError(errno.ENOENT, "no such file or folder", path) from None
    raise StorageError(unreachable(path, action, cause)) from err


def absolute(path: PathLike) -> str:
  """``os.path.abspath(path)`` for a local path; a URL as it is (it is absolute already)."""
  path = os.fspath(path)
  return path.rstrip("/") if is_url(path) else os.path.abspath(path)


def check_reachable(path: PathLike) -> None:
  """Nothing for a local path or a storage URL that can be reached (whether or not
  something is there); a :class:`StorageError` line for a URL that cannot: before a URL is
  handed to a library that reads it itself (TFDS, orbax, TensorBoard), whose own error
  would be a traceback."""
  if is_url(path):
    exists(path)


def exists(path: PathLike) -> bool:
  """Whether a file or folder is at ``path``."""
  if is_url(path):
    return _on_url(path, "checking whether it exists", lambda: _epath(path).exists())
  return os.path.exists(path)


def isdir(path: PathLike) -> bool:
  """Whether ``path`` is a folder (on a bucket: a prefix with objects below it). On a
  bucket a ``False`` is checked with :func:`exists` (TensorFlow's answer to a bucket it
  cannot reach is ``False`` too)."""
  if is_url(path):
    if _on_url(path, "checking whether it is a folder", lambda: _epath(path).is_dir()):
      return True
    exists(path)  # a StorageError where the bucket cannot be reached
    return False
  return os.path.isdir(path)


def isfile(path: PathLike) -> bool:
  """Whether ``path`` is a file (an object, on a bucket)."""
  if is_url(path):
    return _on_url(path, "checking whether it is a file", lambda: _epath(path).is_file())
  return os.path.isfile(path)


def getsize(path: PathLike) -> int:
  """The size of the file at ``path`` in bytes."""
  if is_url(path):
    return _on_url(path, "reading its size", lambda: _epath(path).stat().length)
  return os.path.getsize(path)


def mtime(path: PathLike) -> float:
  """When the file at ``path`` was last written, in seconds since the epoch."""
  if is_url(path):
    return _on_url(path, "reading its time", lambda: float(_epath(path).stat().mtime))
  return os.path.getmtime(path)


def listdir(path: PathLike) -> list[str]:
  """The names in the folder ``path`` (unsorted, as :func:`os.listdir`)."""
  if is_url(path):
    return _on_url(path, "listing it", lambda: [p.name for p in _epath(path).iterdir()])
  return os.listdir(path)


def makedirs(path: PathLike) -> None:
  """Creates the folder ``path`` and its parents; an existing folder is fine."""
  if is_url(path):
    _on_url(path, "creating it", lambda: _epath(path).mkdir(parents=True, exist_ok=True))
  else:
    os.makedirs(path, exist_ok=True)


def remove(path: PathLike) -> None:
  """Deletes the file at ``path`` (``FileNotFoundError`` when there is none)."""
  if is_url(path):
    _on_url(path, "deleting it", lambda: _epath(path).unlink())
  else:
    os.remove(path)


def rmtree(path: PathLike) -> None:
  """Deletes the folder ``path`` and everything below it."""
  if is_url(path):
    _on_url(path, "deleting it", lambda: _epath(path).rmtree())
  else:
    shutil.rmtree(path)


def replace(src: PathLike, dst: PathLike) -> None:
  """Moves ``src`` onto ``dst``, replacing it (atomic for local paths on one file system;
  a copy then a delete on a bucket)."""
  if is_url(src) or is_url(dst):
    url = src if is_url(src) else dst
    _on_url(url, "moving a file", lambda: _epath(src).replace(os.fspath(dst)))
  else:
    os.replace(src, dst)


def glob(folder: PathLike, pattern: str) -> list[str]:
  """The sorted paths in ``folder`` whose names match ``pattern`` (``*``, ``?``, ``[...]``
  wildcards; the folder's own name is taken literally)."""
  if is_url(folder):
    found = _on_url(folder, "listing it", lambda: [str(p) for p in _epath(folder).glob(pattern)])
    return sorted(found)
  return sorted(_glob.glob(os.path.join(_glob.escape(os.fspath(folder)), pattern)))


def walk(top: PathLike) -> Iterator[tuple[str, list[str], list[str]]]:
  """``(folder, subfolder names, file names)`` for ``top`` and every folder below it, top
  down (as :func:`os.walk`)."""
  if is_url(top):
    found = _on_url(top, "listing it", lambda: list(_epath(top).walk()))
    for root, dirs, files in found:
      yield str(root), list(dirs), list(files)
  else:
    yield from os.walk(top)


def open(path: PathLike, mode: str = "r", *, encoding: str | None = None) -> IO[Any]:  # noqa: A001
  """Opens the file at ``path`` (modes ``r``, ``w``, ``a``, each with ``b``). Text is UTF-8
  on a bucket; a local file is read in ``encoding`` (the locale's when ``None``, as the
  built-in :func:`open`). A bucket's object appears whole when a file opened for writing
  is closed."""
  if is_url(path):
    text = encoding if "b" not in mode else None
    return _on_url(path, f"opening it ({mode})", lambda: _epath(path).open(mode, encoding=text))
  return builtins.open(path, mode, encoding=encoding if "b" not in mode else None)
