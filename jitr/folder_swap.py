"""Folders written all-or-nothing: a reader sees the previous folder or the complete new one.

:func:`atomic_folder` hands out a fresh temporary folder beside the target
(``NAME.tmp-HOST-PID-XXXXXXXX``, :func:`jitr.fileio.temp_name`: same parent, so the final
rename never crosses a file system). When the ``with`` block completes, the temporary
folder takes the target's name: an absent target or an empty folder is replaced by one
``os.rename``; a folder with contents (a report written before) is first renamed aside,
then removed once the new one is in place. If the block raises (Ctrl-C and a full disk
included), the temporary folder is removed and the target is as it was.

For a storage URL (``gs://...``, :mod:`jitr.paths`) a bucket has no folders to rename:
the block writes into a local temporary folder, which is uploaded file by file when it
completes (the target is left alone if the block fails; an upload cut off midway leaves
part of the new files beside the old ones).

A shared utility (like :mod:`jitr.fileio`): any jitr subpackage may import it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from jitr import paths
from jitr.fileio import TEMP_MARKER, temp_name

PathLike = str | os.PathLike


@contextlib.contextmanager
def atomic_folder(path: PathLike) -> Iterator[str]:
  """Yields a new empty folder to fill; on success it becomes ``path`` (module docstring).

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
    with _uploaded_folder(os.fspath(path)) as tmp:
      yield tmp
    return
  path = os.path.abspath(os.fspath(path))
  os.makedirs(os.path.dirname(path), exist_ok=True)
  tmp = _fresh_folder(path)
  try:
    yield tmp
    _swap_in(tmp, path)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
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


def _swap_in(tmp: str, path: str) -> None:
  """Renames the folder ``tmp`` onto ``path``: over an absent or empty folder in one rename;
  a folder with contents is renamed aside first and removed after."""
  if os.path.isdir(path) and not os.listdir(path):
    os.rmdir(path)
  if not os.path.lexists(path):
    os.rename(tmp, path)
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
def _uploaded_folder(url: str) -> Iterator[str]:
  """A local temporary folder whose files are copied under the storage URL ``url`` when
  the block completes, and which is removed either way."""
  tmp = tempfile.mkdtemp(prefix=os.path.basename(url.rstrip("/")) + TEMP_MARKER)
  try:
    yield tmp
    for folder, _, files in os.walk(tmp):
      target = os.path.join(url, os.path.relpath(folder, tmp)) if folder != tmp else url
      paths.makedirs(target)
      for name in files:
        with open(os.path.join(folder, name), "rb") as src:
          with paths.open(os.path.join(target, name), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
