"""A disk that fills up while jitr_shapes is built: one ``OSError(ENOSPC)`` line naming the
record file being written (where it would have ended up), TFDS's unfinished folder of that
build removed, every complete build in the same data dir untouched; the same call builds
it once space is freed.

TensorFlow's record writer reports a full disk as ``ResourceExhaustedError`` ("PATH; No
space left on device"), which TFDS re-raises as a ``RuntimeError``. Builds here are of
a few images (seconds); the real full disk (a tmpfs in a private mount namespace, see
tests/apps/test_disk_and_interrupt.py) is under ``jitr-train`` building ``tiny``.
"""

import os
import pathlib
import shutil
import sys

import numpy as np
import pytest

from jitr.data.shapes import tfds as shapes_tfds
from jitr.tf_cpu import import_tf
from tests.apps.test_disk_and_interrupt import REPO, run_on_small_disk, train_env
from tests.apps.test_faults import _last_line
from tests.file_fixtures import snapshot


def _micro(name: str) -> shapes_tfds.ShapesConfig:
  return shapes_tfds.ShapesConfig(
    name=name, num_train=4, num_val=2, num_test=2, description="4 / 2 / 2 images."
  )


def _full_when_writing(monkeypatch, part: str) -> None:
  """TensorFlow's record writer on a disk that is full when a file named ``*part*`` is
  written (the error TensorFlow raises for ``ENOSPC``)."""
  tf = import_tf()
  real_writer = tf.io.TFRecordWriter

  class Full(real_writer):
    def __init__(self, path, *args, **kwargs):
      super().__init__(path, *args, **kwargs)
      self.path = os.fspath(path)

    def write(self, record):
      if part in os.path.basename(self.path):
        raise tf.errors.ResourceExhaustedError(None, None, f"{self.path}; No space left on device")
      return super().write(record)

  monkeypatch.setattr(tf.io, "TFRecordWriter", Full)


def _unfinished(data_dir) -> list[str]:
  return sorted(str(p) for p in pathlib.Path(data_dir).rglob("incomplete.*"))


def test_a_full_disk_during_a_build_is_one_line_and_the_next_build_completes(tmp_path, monkeypatch):
  data_dir = str(tmp_path / "tfds")
  shapes_tfds.build(data_dir, _micro("done"))
  done = shapes_tfds.builder(data_dir, _micro("done")).data_dir
  before = snapshot(done)
  _full_when_writing(monkeypatch, "-train.tfrecord")
  with pytest.raises(OSError) as err:
    shapes_tfds.build(data_dir, _micro("full"))
  folder = f"{data_dir}/jitr_shapes/full/1.0.0"
  assert str(err.value) == (
    f"[Errno 28] disk full: could not write {folder}/jitr_shapes-train.tfrecord-00000-of-00001 "
    "while building jitr_shapes/full (its unfinished files were removed); free space and "
    "run the same command again"
  )
  assert _unfinished(data_dir) == [] and not os.path.exists(folder)
  assert snapshot(done) == before  # the complete build is untouched
  monkeypatch.undo()  # space freed
  shapes_tfds.build(data_dir, _micro("full"))
  arrays = shapes_tfds.load_split("train", data_dir=data_dir, config=_micro("full"), images=False)
  np.testing.assert_array_equal(arrays["image_id"], np.arange(4))


def test_other_build_errors_pass_through(tmp_path, monkeypatch):
  def broken(self, *args, **kwargs):
    raise RuntimeError("a bug, not a full disk")

  monkeypatch.setattr(shapes_tfds.JitrShapes, "download_and_prepare", broken)
  with pytest.raises(RuntimeError, match="a bug, not a full disk"):
    shapes_tfds.build(str(tmp_path), _micro("x"))


@pytest.mark.parametrize(
  ("message", "path"),
  [
    ("/d/a/incomplete.X1_1.0.0/f.tfrecord; No space left on device", "/d/a/1.0.0/f.tfrecord"),
    ("no path here", None),
  ],
)
def test_the_written_file_is_read_from_the_error(message, path):
  try:
    try:
      raise ValueError(message)
    except ValueError as inner:
      raise RuntimeError("wrapped") from inner
  except RuntimeError as err:
    found = shapes_tfds.written_path(err)
  assert (shapes_tfds.final_path(found) if found else None) == path
  assert shapes_tfds.written_path(OSError(28, "full", "/x/y.json")) == "/x/y.json"


@pytest.mark.slow  # 10 s: a jitr-train process; the build above is the unit, and
# tests/relevance/test_precompute_disk_full.py has the fast real full disk of this kind
def test_jitr_train_building_shapes_on_a_full_disk_is_one_line(tmp_path):
  """A real full disk: the TFDS data dir is a tmpfs of 200 KiB, too small for the train
  split of ``tiny`` (about 440 KB)."""
  data_dir, kept = tmp_path / "tfds", tmp_path / "kept"
  exe = shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))
  command = [
    exe,
    f"--config={REPO / 'configs' / 'default.py'}",
    f"--workdir={tmp_path / 'run'}",
    "--config.shapes_config=tiny",
    f"--config.data_dir={data_dir}",
    "--config.graded.relevance=oracle",
    "--config.compilation_cache=False",
  ]
  out = run_on_small_disk(data_dir, 200, command, keep=kept, cwd=tmp_path, env=train_env())
  assert out.returncode == 1, out.stderr[-3000:]
  assert "Traceback" not in out.stderr, out.stderr[-3000:]
  folder = f"{data_dir}/jitr_shapes/tiny/1.0.0"
  assert _last_line(out.stderr) == (
    f"jitr-train: error: [Errno 28] disk full: could not write "
    f"{folder}/jitr_shapes-train.tfrecord-00000-of-00001 while building jitr_shapes/tiny (its "
    "unfinished files were removed); free space and run the same command again"
  )
  assert _unfinished(kept) == []
  assert not list(kept.rglob("*.tfrecord*"))
  assert not (tmp_path / "run").exists()  # nothing written before the data is there
