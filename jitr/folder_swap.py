"""Folders written all-or-nothing: a reader sees the previous folder or the complete new one.

:func:`atomic_folder` hands out a fresh temporary folder beside the target
(``NAME.tmp-HOST-PID-XXXXXXXX``, :func:`jitr.fileio.temp_name`: same parent, so the final
rename never crosses a file system). When the ``with`` block completes, its files are
fsynced and the temporary folder takes the target's place (:func:`swap_in`): an absent
target or an empty folder is replaced by one ``os.rename``; a folder with contents (a
report written before) is exchanged with it in one step where Linux's ``renameat2`` can
(:func:`exchange_paths`), else renamed aside first (for a moment there is no folder, never
a mix of the two), then removed. If the block raises (Ctrl-C and a full disk included),
the temporary folder is removed and the target is as it was; a full disk is one
``OSError(ENOSPC)`` line (:func:`jitr.fileio.disk_full_error`).

For a storage URL (``gs://...``, :mod:`jitr.paths`) a bucket renames nothing (a rename is a
copy of every object): the block writes into a local temporary folder, left out of the
bucket if the block fails, and uploaded when it completes (:func:`publish_folder`): every
file (each object appears whole), then the objects the new folder lacks are deleted. With
``last`` (a report's ``metrics.json``), that file marks a complete folder: it is deleted
first and uploaded at the end, so an upload cut off midway leaves no ``last`` beside files
that are not its own.

A shared utility (like :mod:`jitr.fileio`): any jitr subpackage may import it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator

from jitr import paths
from jitr.fileio import TEMP_MARKER, disk_full_error, is_disk_full, temp_name

PathLike = str | os.PathLike

# Linux's renameat2(2): swap two existing paths in one step.
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextlib.contextmanager
def atomic_folder(path: PathLike, *, last: str | None = None) -> Iterator[str]:
  """Yields a new empty folder to fill; on success it becomes ``path``, files of ``path``
  the block did not write gone (module docstring; ``last``: on a bucket, the file that
  marks a complete folder, uploaded last).

  >>> import os, tempfile
  >>> target = os.path.join(tempfile.mkdtemp(), "report")
  >>> with atomic_folder(target) as tmp:
  ...   with open(os.path.join(tmp, "a.txt"), "w") as f:
  ...     _ = f.write("new")
  ...   print(os.path.exists(target))
  False
  >>> os.listdir(target), len(os.listdir(os.path.dirname(target)))
  (['a.txt'], 1)
  """
  if paths.is_url(path):
    with _uploaded_folder(os.fspath(path), last) as tmp:
      yield tmp
    return
  path = os.path.abspath(os.fspath(path))
  os.makedirs(os.path.dirname(path), exist_ok=True)
  tmp = _fresh_folder(path)
  try:
    yield tmp
    _fsync_files(tmp)
    swap_in(tmp, path)
  except BaseException as err:
    shutil.rmtree(tmp, ignore_errors=True)
    if is_disk_full(err):
      raise disk_full_error(path) from err
    raise


def _fresh_folder(path: str) -> str:
  """Creates (exclusively) and returns an unused temporary folder name beside ``path``."""
  for _ in range(100):
    tmp = temp_name(path)
    try:
      os.mkdir(tmp)
    except FileExistsError:
      continue
    return tmp
  raise FileExistsError(f"{path}: could not create a free temporary folder beside it")


def _fsync_files(folder: str) -> None:
  """fsyncs every file under the local ``folder`` (its contents are on disk before the
  folder takes the target's name)."""
  for root, _, files in os.walk(folder):
    for name in files:
      fd = os.open(os.path.join(root, name), os.O_RDONLY)
      try:
        os.fsync(fd)
      finally:
        os.close(fd)


def exchange_paths(a: str, b: str) -> bool:
  """Swaps the local paths ``a`` and ``b`` (files or folders, both existing) in one
  atomic step (Linux's ``renameat2(RENAME_EXCHANGE)``); ``False``, with nothing changed,
  where the system or the file system cannot."""
  try:
    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
  except (OSError, AttributeError):  # not Linux, or a C library without renameat2
    return False
  if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
    return True
  code = ctypes.get_errno()
  if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the file system cannot
    return False
  raise OSError(code, os.strerror(code), a)


def swap_in(tmp: str, path: str) -> None:
  """Puts the folder ``tmp`` in the place of ``path``: over an absent or empty folder in
  one rename; a folder with contents is exchanged with it (:func:`exchange_paths`) or,
  where that cannot be, renamed aside first; the previous folder is removed after."""
  if os.path.isdir(path) and not os.listdir(path):
    os.rmdir(path)
  if not os.path.lexists(path):
    os.rename(tmp, path)
    return
  if exchange_paths(tmp, path):
    shutil.rmtree(tmp, ignore_errors=True)  # the previous folder, now under tmp's name
    return
  old = temp_name(path)
  os.rename(path, old)
  try:
    os.rename(tmp, path)
  except BaseException:
    os.rename(old, path)  # the previous folder back in place
    raise
  shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _uploaded_folder(url: str, last: str | None) -> Iterator[str]:
  """A local temporary folder published under the storage URL ``url`` when the block
  completes (:func:`publish_folder`), and removed either way."""
  tmp = tempfile.mkdtemp(prefix=os.path.basename(url.rstrip("/")) + TEMP_MARKER)
  try:
    yield tmp
    publish_folder(tmp, url, last=last)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


def _relative_files(folder: str) -> list[str]:
  """The ``/``-separated paths, relative to the local ``folder``, of every file under it."""
  return sorted(
    os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")
    for root, _, files in os.walk(folder)
    for name in files
  )


def publish_folder(local: str, url: str, *, last: str | None = None) -> None:
  """Makes the folder ``url`` in a bucket hold the files of the local folder ``local``:
  ``last`` (when given) deleted first, every other file uploaded, the objects the new
  folder lacks deleted, ``last`` uploaded at the end."""
  if last is not None:
    with contextlib.suppress(FileNotFoundError):
      paths.remove(f"{url}/{last}")
  names = _relative_files(local)
  for name in names:
    if name != last:
      _upload(os.path.join(local, name), f"{url}/{name}")
  _remove_other_objects(url, set(names))
  if last in names:
    _upload(os.path.join(local, last), f"{url}/{last}")


def _upload(local: str, url: str) -> None:
  """Copies the local file ``local`` to the object ``url`` (it appears whole on close; a
  bucket has no folders to create first)."""
  paths.makedirs(os.path.dirname(url))
  with open(local, "rb") as src, paths.open(url, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 24)


def _remove_other_objects(url: str, keep: set[str]) -> None:
  """Deletes every object under the folder ``url`` whose path relative to it is not in
  ``keep``."""
  if not paths.isdir(url):
    return
  prefix = url.rstrip("/") + "/"
  for root, _, files in paths.walk(url):
    for name in files:
      path = os.path.join(root, name)
      if path.removeprefix(prefix) not in keep:  # no os.path.relpath: it mangles a URL
        paths.remove(path)
