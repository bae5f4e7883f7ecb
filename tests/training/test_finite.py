"""Non-finite training stops the run at the first bad step, and saves nothing of it."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jitr import training
from jitr.training.checkpoints import Checkpoints
from jitr.training.finite import FiniteGuard, NonFiniteTrainingError
from jitr.training.loop import EpochPlan, LoopHooks, fit
from tests.file_fixtures import snapshot
from tests.training import tiny

STEPS_PER_EPOCH = 3


def test_guard_checks_every_n_steps_and_names_the_first_bad_step():
  guard = FiniteGuard(every=3, kept=lambda: "the latest checkpoint is still step 0")
  guard.add(1, {"loss": jnp.float32(1.0), "grad_norm": jnp.float32(2.0), "other": jnp.nan})
  guard.add(2, {"loss": jnp.float32(1.5), "grad_norm": jnp.float32(np.inf)})  # not checked yet
  with pytest.raises(NonFiniteTrainingError) as err:
    guard.add(3, {"loss": jnp.float32(np.nan), "grad_norm": jnp.float32(np.nan)})
  assert str(err.value) == (
    "step 2: grad_norm is inf (loss=1.5, grad_norm=inf); training stopped without saving "
    "this state; the latest checkpoint is still step 0. Lower optimizer.learning_rate or look "
    "for NaN/Inf in the data"
  )
  guard.add(4, {"loss": jnp.float32(np.nan)})  # pending cleared by the failed check
  with pytest.raises(NonFiniteTrainingError, match="^step 4: loss is nan"):
    guard.check()
  guard.check()  # nothing pending


@pytest.mark.parametrize("every", [0, -1, 1.5, True])
def test_guard_refuses_a_bad_period(every):
  with pytest.raises(ValueError, match="FiniteGuard every="):
    FiniteGuard(every=every)


def _batches(epoch, *, nan_at=None):
  for i in range(STEPS_PER_EPOCH):
    batch = tiny.make_batch(seed=100 * epoch + i)
    if (epoch, i) == nan_at:
      batch["images"][0, 0] = np.nan
    yield batch


def _fit(workdir, epoch_batches, *, num_epochs, every=2):
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:1],
  )
  checkpoints = Checkpoints(workdir)
  try:
    return fit(
      tiny.make_state(optax.adam(1e-2)),
      parallel=parallel,
      plan=EpochPlan(
        epoch_batches=epoch_batches, steps_per_epoch=STEPS_PER_EPOCH, num_epochs=num_epochs
      ),
      checkpoints=checkpoints,
      hooks=LoopHooks(evaluate=lambda state: {"rsum": 1.0}),
      check_finite_every=every,
    )
  finally:
    checkpoints.close()


def test_a_nan_batch_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
  run = str(tmp_path / "run")
  _fit(run, _batches, num_epochs=1)  # a good first epoch: checkpoint at step 3
  before = snapshot(run)
  # Epoch 1's first batch (step 4) holds a NaN feature; checked at step 4 (every 2 steps).
  with pytest.raises(NonFiniteTrainingError) as err:
    _fit(run, lambda e: _batches(e, nan_at=(1, 0)), num_epochs=2)
  assert str(err.value).startswith("step 4: loss is nan (loss=nan, grad_norm=nan); ")
  assert "the latest checkpoint is still step 3" in str(err.value)
  assert snapshot(run) == before  # neither latest nor best saved the NaN state


def test_a_nan_learning_rate_is_caught_before_the_first_save(tmp_path):
  """Checked at the epoch's end (step 3) although the period (100) was not reached."""
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:1],
  )
  checkpoints = Checkpoints(str(tmp_path))
  with pytest.raises(
    NonFiniteTrainingError, match=r"^step 2: loss is nan .*no checkpoint was saved"
  ):
    fit(
      tiny.make_state(optax.adam(float("nan"))),
      parallel=parallel,
      plan=EpochPlan(epoch_batches=_batches, steps_per_epoch=STEPS_PER_EPOCH, num_epochs=1),
      checkpoints=checkpoints,
    )
  checkpoints.close()
  assert not os.listdir(tmp_path / "checkpoints" / "latest")
