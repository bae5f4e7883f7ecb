"""Faults of checkpoints: a damaged latest checkpoint, a disk that fills up during a save."""

import errno
import functools
import glob
import os

import jax
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest

from jitr import training
from jitr.training.checkpoints import CheckpointCorruptError, Checkpoints, DiskFullError
from jitr.training.loop import EpochPlan, fit
from tests.file_fixtures import snapshot
from tests.training import tiny

STEPS_PER_EPOCH = 3


@functools.cache
def _parallel():
  """One single-device step for every run here (compiled once)."""
  return training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:1],
  )


def _train(workdir, num_epochs=2):
  checkpoints = Checkpoints(workdir)
  state, _ = fit(
    tiny.make_state(optax.adam(1e-2)),
    parallel=_parallel(),
    plan=EpochPlan(
      epoch_batches=lambda e: (tiny.make_batch(seed=100 * e + i) for i in range(STEPS_PER_EPOCH)),
      steps_per_epoch=STEPS_PER_EPOCH,
      num_epochs=num_epochs,
    ),
    checkpoints=checkpoints,
  )
  checkpoints.close()
  return state


def _damage(step_dir):
  """Overwrites every array data file of a checkpoint with zeros of the same size."""
  files = glob.glob(os.path.join(step_dir, "default", "**", "d", "*"), recursive=True)
  assert files
  for path in files:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
      f.write(b"\0" * size)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """A finished two-epoch run (latest checkpoints at steps 3 and 6) and the state at step 3."""
  root = tmp_path_factory.mktemp("trained")
  _train(str(root / "one"), num_epochs=1)
  checkpoints = Checkpoints(str(root / "one"))
  at_3 = checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  checkpoints.close()
  _train(str(root / "run"))
  return root / "run", at_3


def _copy(src, dst):
  import shutil

  shutil.copytree(src, dst)
  return dst


def test_damaged_latest_checkpoint_falls_back_to_the_previous_one(trained, tmp_path, caplog):
  run, at_3 = trained
  run = _copy(run, tmp_path / "run")
  _damage(str(run / "checkpoints" / "latest" / "6"))
  before = snapshot(str(run))
  checkpoints = Checkpoints(str(run))
  with caplog.at_level("WARNING"):
    restored = checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  checkpoints.close()
  assert int(restored.step) == 3
  for a, b in zip(jax.tree.leaves(restored.params), jax.tree.leaves(at_3.params)):
    np.testing.assert_array_equal(a, b)
  assert "restored checkpoint step 3" in caplog.text and "step 6" in caplog.text
  assert snapshot(str(run)) == before  # restoring wrote nothing


def test_every_checkpoint_damaged_is_one_clear_error(trained, tmp_path):
  run = _copy(trained[0], tmp_path / "run")
  for step in ("3", "6"):
    _damage(str(run / "checkpoints" / "latest" / step))
  checkpoints = Checkpoints(str(run))
  with pytest.raises(CheckpointCorruptError, match=r"no checkpoint can be restored \(step 6 .*"):
    checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  checkpoints.close()


def test_disk_full_during_a_save_says_so_and_removes_its_temporary_folder(
  trained, tmp_path, monkeypatch
):
  run = _copy(trained[0], tmp_path / "run")
  before = snapshot(str(run))
  checkpoints = Checkpoints(str(run))
  latest = os.fspath(checkpoints.latest.directory)

  def full_disk(self, step, *args, **kwargs):
    os.makedirs(os.path.join(latest, f"{step}.orbax-checkpoint-tmp-1234", "default"))
    raise OSError(errno.ENOSPC, "No space left on device")

  monkeypatch.setattr(ocp.CheckpointManager, "save", full_disk)
  state = tiny.make_state(optax.adam(1e-2)).replace(step=jax.numpy.asarray(7))
  with pytest.raises(
    DiskFullError, match=r"^\[Errno 28\] disk full: could not save checkpoint step 7"
  ):
    checkpoints.save_latest(state)
  checkpoints.close()
  assert sorted(os.listdir(latest)) == ["3", "6"]
  assert snapshot(str(run)) == before
