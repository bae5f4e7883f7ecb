"""The checksum cache: each file version hashed once, a rewritten file never served a stale
digest, a bounded number of entries."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from jitr.relevance import checksums
from jitr.relevance.checksums import ChecksumCache, file_sha256

OLD = b"a" * 64
NEW = b"b" * 64  # the same size


def digest(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def hashed(monkeypatch) -> list[str]:
  """The paths :func:`file_sha256` reads, in order."""
  paths: list[str] = []

  def counting(path: str) -> str:
    paths.append(path)
    return file_sha256(path)

  monkeypatch.setattr(checksums, "file_sha256", counting)
  return paths


def rewrite_in_place(path, data: bytes) -> None:
  """Overwrite ``path`` with ``data`` and give it back its time stamps (atime, mtime)."""
  st = os.stat(path)
  with open(path, "r+b") as f:
    f.write(data)
  os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def replace_by_rename(path, data: bytes) -> None:
  """Write ``data`` to a new file with ``path``'s mtime and rename it over ``path``."""
  st = os.stat(path)
  tmp = f"{path}.tmp"
  with open(tmp, "wb") as f:
    f.write(data)
  os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
  os.replace(tmp, path)


def test_file_sha256_is_the_digest_of_the_bytes(tmp_path):
  path = tmp_path / "f"
  path.write_bytes(OLD * 40_000)  # more than one 1 MiB chunk
  assert file_sha256(str(path)) == digest(OLD * 40_000)


@pytest.mark.parametrize("rewrite", [rewrite_in_place, replace_by_rename])
def test_a_rewritten_file_is_hashed_again(tmp_path, hashed, rewrite):
  """A file older than the margin is cached; rewritten with the same size and mtime, its
  new version is hashed, not served the old digest."""
  path = tmp_path / "shard"
  path.write_bytes(OLD)
  cache = ChecksumCache(margin_ns=50_000_000)
  time.sleep(0.2)  # the file is now older than the margin
  assert cache.sha256(str(path)) == digest(OLD)
  assert cache.sha256(str(path)) == digest(OLD)
  assert len(hashed) == 1 and len(cache) == 1  # the second call was served by the cache

  rewrite(path, NEW)
  assert os.path.getsize(path) == len(OLD)
  assert cache.sha256(str(path)) == digest(NEW)
  assert len(hashed) == 2


@pytest.mark.parametrize("rewrite", [rewrite_in_place, replace_by_rename])
def test_a_file_changed_within_the_margin_is_never_cached(tmp_path, hashed, rewrite):
  """Writes close together may share their time stamps: a fresh file is hashed every time."""
  path = tmp_path / "shard"
  path.write_bytes(OLD)
  cache = ChecksumCache()
  assert cache.sha256(str(path)) == digest(OLD)
  rewrite(path, NEW)  # at once: possibly within the same time-stamp tick
  assert cache.sha256(str(path)) == digest(NEW)
  assert len(cache) == 0 and len(hashed) == 2


def test_the_cache_holds_at_most_max_entries(tmp_path, hashed):
  later = time.time_ns() + 60 * 10**9  # a clock a minute ahead: every file is old
  cache = ChecksumCache(max_entries=2, clock=lambda: later)
  paths = []
  for i in range(3):
    paths.append(str(tmp_path / f"f{i}"))
    with open(paths[-1], "wb") as f:
      f.write(bytes([i]) * 8)
  for path in paths:
    cache.sha256(path)
  assert len(cache) == 2
  cache.sha256(paths[2])  # still held
  cache.sha256(paths[0])  # dropped first (least recently used): hashed again
  assert hashed == [*paths, paths[0]]
