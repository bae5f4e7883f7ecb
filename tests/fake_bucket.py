"""A Cloud Storage bucket on a local folder: ``gs://bucket/...`` through ``etils.epath``.

``fake_bucket(root)`` replaces epath's backends (``epath.testing.mock_epath``) so that
every URL ``gs://bucket/REST`` reads and writes ``root/REST`` (local paths stay local),
and turns epath's TensorFlow backend off for the duration (it would answer ``gs://``
itself). Only code
that goes through epath (``jitr.paths``) sees the bucket: a module that hands a URL to
``os`` or the built-in ``open`` would write a ``gs:`` folder into the working directory
instead, which the tests check is absent. An object written to a folder that has none
is written (a bucket has no folders). A URL of another bucket is an error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from etils.epath import gpath
from etils.epath import testing as epath_testing

BUCKET = "gs://bucket"


def _local(root: str, path) -> str:
  """Where ``path`` lives: a URL of the bucket under ``root``, a local path unchanged."""
  path = os.fspath(path)
  if not path.startswith("gs://"):
    return path
  if not (path == BUCKET or path.startswith(BUCKET + "/")):
    raise AssertionError(f"{path!r} is not in the fake bucket {BUCKET}")
  return os.path.join(root, path[len(BUCKET) :].lstrip("/"))


def _url(root: str, path: str) -> str:
  rel = os.path.relpath(path, root)
  return BUCKET if rel == "." else f"{BUCKET}/{rel}"


@contextlib.contextmanager
def fake_bucket(root: str) -> Iterator[str]:
  """Serves ``gs://bucket`` from the folder ``root`` (created); yields ``gs://bucket``."""
  root = os.path.abspath(root)
  os.makedirs(root, exist_ok=True)
  local = lambda p: _local(root, p)

  def open_object(orig, path, mode):
    if "r" not in mode and path != local(path):  # a bucket has no folders to create first
      os.makedirs(os.path.dirname(local(path)), exist_ok=True)
    return orig(local(path), mode)

  def glob(orig, pattern):
    found = orig(local(pattern))
    return [_url(root, f) for f in found] if pattern != local(pattern) else found

  def walk(orig, top, *, top_down=True, on_error=None):
    for folder, dirs, files in orig(local(top), top_down=top_down, on_error=on_error):
      yield (_url(root, folder) if top != local(top) else folder), dirs, files

  mocks = dict(
    open=open_object,
    exists=lambda orig, p: orig(local(p)),
    isdir=lambda orig, p: orig(local(p)),
    listdir=lambda orig, p: orig(local(p)),
    glob=glob,
    walk=walk,
    makedirs=lambda orig, p, exist_ok=False: orig(local(p), exist_ok=exist_ok),
    mkdir=lambda orig, p, exist_ok=False: orig(local(p), exist_ok=exist_ok),
    remove=lambda orig, p: orig(local(p)),
    rmtree=lambda orig, p: orig(local(p)),
    rename=lambda orig, p, dst: orig(local(p), local(dst)),
    replace=lambda orig, p, dst: orig(local(p), local(dst)),
    copy=lambda orig, p, dst, overwrite: orig(local(p), local(dst), overwrite=overwrite),
    stat=lambda orig, p: orig(local(p)),
  )
  tf_backend = gpath._is_tf_installed
  gpath._is_tf_installed = lambda: False
  try:
    with epath_testing.mock_epath(**mocks):
      yield BUCKET
  finally:
    gpath._is_tf_installed = tf_backend


def serve_in_subprocesses(hook_dir, root) -> str:
  """Writes ``hook_dir/sitecustomize.py``, which serves ``gs://bucket`` from ``root`` in any
  Python process whose ``PYTHONPATH`` starts with ``hook_dir`` (the repository after it),
  for the whole process: a console script then sees the bucket as a user's would. Returns
  ``hook_dir``."""
  os.makedirs(hook_dir, exist_ok=True)
  with open(os.path.join(hook_dir, "sitecustomize.py"), "w", encoding="utf-8") as f:
    f.write(
      "from tests.fake_bucket import fake_bucket\n\n"
      f"_SERVED = fake_bucket({os.path.abspath(root)!r})  # kept: closing it would stop it\n"
      "_SERVED.__enter__()  # until the process exits\n"
    )
  return os.fspath(hook_dir)
