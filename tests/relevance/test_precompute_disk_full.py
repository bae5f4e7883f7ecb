"""A disk that fills up while jitr-precompute writes its shards: one line naming the shard
being written, its temporary file removed, the complete shards, manifests and header left
as they were; the same command finishes the set once space is freed, with the bytes of a
run that never failed.

TensorFlow's record writer reports a full disk as ``ResourceExhaustedError`` ("PATH; No
space left on device"), not as ``OSError``: :func:`jitr.fileio.atomic_path` recognises it.
The real full disk is a tmpfs in a private mount namespace
(tests/apps/test_disk_and_interrupt.py); the in-process case patches the writer.
"""

from __future__ import annotations

import errno
import os
import pathlib
import shutil
import sys

import numpy as np
import pytest

from jitr.relevance.precompute import PrecomputeOptions, precompute_relevance
from jitr.relevance.registry import default_estimator_settings
from tests.apps.test_disk_and_interrupt import REPO, run_on_small_disk
from tests.file_fixtures import WORDS, snapshot

SHARD_1 = "relevance-00001-of-00002.tfrecord"


def _settings():
  settings = default_estimator_settings()
  settings.lsa.k = 4
  return settings


def _captions(root: pathlib.Path) -> pathlib.Path:
  """A precomp caption file of 40 images x 5 captions of 3-7 words: 20 images per shard
  make two shards of LSA vectors of about 4.7 KB (two 4 KiB pages each)."""
  rng = np.random.default_rng(0)
  caps = [" ".join(rng.choice(WORDS, size=rng.integers(3, 8))) for _ in range(200)]
  path = root / "train_caps.txt"
  path.write_text("\n".join(caps) + "\n")
  return path


def _precompute(captions, out) -> str:
  return precompute_relevance(
    str(captions),
    "lsa",
    str(out),
    settings=_settings(),
    options=PrecomputeOptions(images_per_shard=20, log=lambda _: None),
  )


def _no_temporaries(folder) -> bool:
  return not [n for n in os.listdir(folder) if ".tmp-" in n]


def test_a_full_disk_in_the_record_writer_is_one_error_naming_the_shard(tmp_path, monkeypatch):
  from jitr.tf_cpu import import_tf

  tf = import_tf()
  captions, out = _captions(tmp_path), tmp_path / "rel"
  real_writer = tf.io.TFRecordWriter

  class FullAtShard1(real_writer):
    """TensorFlow's writer on a disk that is full when shard 1 is written."""

    def __init__(self, path, *args, **kwargs):
      super().__init__(path, *args, **kwargs)
      self.path = path

    def write(self, record):
      if SHARD_1 in self.path:
        raise tf.errors.ResourceExhaustedError(None, None, f"{self.path}; No space left on device")
      return super().write(record)

  monkeypatch.setattr(tf.io, "TFRecordWriter", FullAtShard1)
  with pytest.raises(OSError) as err:
    _precompute(captions, out)
  assert err.value.errno == errno.ENOSPC
  assert str(err.value) == (
    f"[Errno 28] disk full: could not write {out / SHARD_1} (temporary file removed); "
    "free space and run the same command again"
  )
  assert _no_temporaries(out)
  before = snapshot(out)
  assert sorted(before) == [
    "relevance-00000-of-00002.tfrecord",
    "relevance-00000-of-00002.tfrecord.json",
    "relevance.json",
  ]
  monkeypatch.undo()  # space freed
  assert _precompute(captions, out).startswith("wrote 2 shards")
  after = snapshot(out)
  assert {name: after[name] for name in before if name != "relevance.json"} == {
    name: digest for name, digest in before.items() if name != "relevance.json"
  }  # the complete shard and its manifest were kept, not rewritten
  _precompute(captions, tmp_path / "clean")
  assert after == snapshot(tmp_path / "clean")


def test_jitr_precompute_on_a_full_disk_is_one_line_and_the_rerun_finishes(tmp_path):
  """A real full disk: --out is a tmpfs of 20 KiB, room for the header and shard 0 with its
  manifest, not for shard 1."""
  captions, out, kept = _captions(tmp_path), tmp_path / "rel", tmp_path / "kept"
  exe = shutil.which("jitr-precompute") or str(
    pathlib.Path(sys.executable).with_name("jitr-precompute")
  )
  command = [
    exe,
    f"--captions={captions}",
    "--estimator=lsa",
    "--config.estimators.lsa.k=4",
    f"--out={out}",
    "--images_per_shard=20",
  ]
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  result = run_on_small_disk(out, 20, command, keep=kept, cwd=tmp_path, env=env, timeout=300)
  assert result.returncode == 1, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.stderr.strip().splitlines()[-1] == (
    f"jitr-precompute: error: [Errno 28] disk full: could not write {out / SHARD_1} "
    "(temporary file removed); free space and run the same command again"
  )
  assert sorted(os.listdir(kept)) == [
    "relevance-00000-of-00002.tfrecord",
    "relevance-00000-of-00002.tfrecord.json",
    "relevance.json",
  ]
  os.rmdir(out)  # space freed: what the full disk kept, on a disk with room
  shutil.move(kept, out)
  assert _precompute(captions, out).startswith("wrote 2 shards")
  _precompute(captions, tmp_path / "clean")
  assert snapshot(out) == snapshot(tmp_path / "clean")
