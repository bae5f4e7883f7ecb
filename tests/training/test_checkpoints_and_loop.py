import os
import signal

import jax
import numpy as np
import optax
import pytest

from jitr import training
from jitr.training.checkpoints import Checkpoints
from jitr.training.loop import StopRequested, fit
from tests.training import tiny

STEPS_PER_EPOCH = 3


def _epoch_batches(epoch):
  return (tiny.make_batch(seed=100 * epoch + i) for i in range(STEPS_PER_EPOCH))


def _run(workdir, *, stop_after=None, evaluate=None):
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, graded_fn=tiny.graded_fn), devices=jax.devices()[:2]
  )
  seen = []
  stop = (lambda: len(seen) >= stop_after) if stop_after else (lambda: False)
  checkpoints = Checkpoints(workdir)
  state, finished = fit(
    tiny.make_state(optax.adam(1e-2)),
    parallel=parallel,
    epoch_batches=_epoch_batches,
    steps_per_epoch=STEPS_PER_EPOCH,
    num_epochs=2,
    checkpoints=checkpoints,
    evaluate=evaluate,
    on_step=lambda step, m: seen.append(step),
    stop=stop,
  )
  checkpoints.close()
  return state, finished, seen


def test_kill_and_resume_equals_an_uninterrupted_run(tmp_path):
  full, finished, steps = _run(str(tmp_path / "full"))
  assert finished and steps == list(range(1, 7))
  partial, finished, steps = _run(str(tmp_path / "cut"), stop_after=4)  # stops mid-epoch 1
  assert not finished and steps == [1, 2, 3, 4] and int(partial.step) == 4
  resumed, finished, steps = _run(str(tmp_path / "cut"))
  assert finished and steps == [5, 6]
  for a, b in zip(jax.tree.leaves(full.params), jax.tree.leaves(resumed.params)):
    np.testing.assert_array_equal(a, b)
  np.testing.assert_array_equal(jax.random.key_data(full.rng), jax.random.key_data(resumed.rng))


def test_best_checkpoint_follows_the_metric(tmp_path):
  scores = iter([5.0, 3.0])
  _run(str(tmp_path), evaluate=lambda state: {"rsum": next(scores)})
  checkpoints = Checkpoints(str(tmp_path))
  assert checkpoints.best.best_step() == 3  # epoch 0 (rsum 5) beat epoch 1 (rsum 3)
  assert checkpoints.latest.latest_step() == 6
  best = checkpoints.restore(tiny.make_state(optax.adam(1e-2)), which="best")
  assert int(best.step) == 3
  checkpoints.close()


def test_sigterm_requests_a_stop():
  with StopRequested() as stop:
    assert not stop()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop()
  assert signal.getsignal(signal.SIGTERM) is not stop.request


def test_short_epoch_is_an_error(tmp_path):
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, graded_fn=tiny.graded_fn), devices=jax.devices()[:2]
  )
  with pytest.raises(ValueError, match="expected steps_per_epoch = 5"):
    fit(
      tiny.make_state(),
      parallel=parallel,
      epoch_batches=_epoch_batches,
      steps_per_epoch=5,
      num_epochs=1,
    )
