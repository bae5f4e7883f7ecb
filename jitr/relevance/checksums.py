"""sha256 digests of files, and a bounded cache of them that never serves a stale digest.

:class:`ChecksumCache` files a digest under the file's version (path, device, inode,
size, mtime, ctime), and only once the file's last change lies more than ``margin_ns``
(more than the filesystem's timestamp granularity) before the moment the file was
looked at. Any later change to the file, written in place or renamed over it, then
carries a newer ctime, so its version differs and it is hashed again. A file changed
within the margin is hashed on every call: two writes that close together could share
their time stamps.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable

from jitr import paths
from jitr.fileio import file_digest

MARGIN_NS = 2_000_000_000  # 2 s: above the time-stamp granularity of local and network disks
MAX_ENTRIES = 4096


def file_sha256(path: str) -> str:
  """The sha256 hex digest of the file at ``path`` (:func:`jitr.fileio.file_digest`)."""
  return file_digest(path)[1]


def file_version(path: str, st: os.stat_result) -> tuple[str, int, int, int, int, int]:
  """What identifies one version of a file: absolute path, device, inode, size, mtime, ctime."""
  return (
    paths.absolute(path),
    st.st_dev,
    st.st_ino,
    st.st_size,
    st.st_mtime_ns,
    st.st_ctime_ns,
  )


class ChecksumCache:
  """:func:`file_sha256` of files, each version hashed once (see the module docstring).

  Args:
    max_entries: how many digests are held; the least recently used goes first.
    margin_ns: a file changed less than this long before it is looked at is not cached.
    clock: the wall clock, in nanoseconds since the epoch.
  """

  def __init__(
    self,
    max_entries: int = MAX_ENTRIES,
    margin_ns: int = MARGIN_NS,
    clock: Callable[[], int] = time.time_ns,
  ) -> None:
    self._digests: collections.OrderedDict[tuple, str] = collections.OrderedDict()
    self._max_entries = max_entries
    self._margin_ns = margin_ns
    self._clock = clock

  def __len__(self) -> int:
    return len(self._digests)

  def sha256(self, path: str) -> str:
    """The sha256 hex digest of the file at ``path`` as it is now."""
    if paths.is_url(path):  # an object has no inode to tell its versions apart
      return file_sha256(path)
    now = self._clock()
    st = os.stat(path)
    key = file_version(path, st)
    digest = self._digests.get(key)
    if digest is not None:
      self._digests.move_to_end(key)
      return digest
    digest = file_sha256(path)
    if max(st.st_mtime_ns, st.st_ctime_ns) < now - self._margin_ns:
      self._digests[key] = digest
      if len(self._digests) > self._max_entries:
        self._digests.popitem(last=False)
    return digest
