import os
import signal

import jax
import numpy as np
import optax
import pytest

from jitr import training
from jitr.training.checkpoints import Checkpoints
from jitr.training.loop import EpochPlan, LoopHooks, StopRequested, fit
from tests.training import tiny

STEPS_PER_EPOCH = 3


def _epoch_batches(epoch):
  return (tiny.make_batch(seed=100 * epoch + i) for i in range(STEPS_PER_EPOCH))


def _run(
  workdir, *, stop_after=None, evaluate=None, eval_every_steps=0, validated=None, num_epochs=2
):
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:2],
  )
  seen = []
  stop = (lambda: len(seen) >= stop_after) if stop_after else (lambda: False)
  checkpoints = Checkpoints(workdir)
  state, finished = fit(
    tiny.make_state(optax.adam(1e-2)),
    parallel=parallel,
    plan=EpochPlan(
      _epoch_batches, STEPS_PER_EPOCH, num_epochs=num_epochs, eval_every_steps=eval_every_steps
    ),
    checkpoints=checkpoints,
    hooks=LoopHooks(
      evaluate=evaluate,
      on_step=lambda step, m: seen.append(step),
      stop=stop,
      on_validation=lambda step, m: (validated if validated is not None else []).append((step, m)),
    ),
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


def test_a_plan_of_no_epochs_keeps_the_initial_state_as_step_0(tmp_path):
  """num_epochs = 0 (a pretrained model scored as it is): validated once, saved as the latest
  and best checkpoint of step 0; a longer plan then trains on from it."""
  validated = []
  state, finished, steps = _run(
    str(tmp_path), num_epochs=0, evaluate=lambda s: {"rsum": 7.0}, validated=validated
  )
  assert finished and steps == [] and int(state.step) == 0 and validated == [(0, {"rsum": 7.0})]
  checkpoints = Checkpoints(str(tmp_path))
  assert checkpoints.best.best_step() == 0 and checkpoints.latest.latest_step() == 0
  initial = tiny.make_state(optax.adam(1e-2))
  saved = checkpoints.restore(initial, which="best")
  checkpoints.close()
  for a, b in zip(jax.tree.leaves(initial.params), jax.tree.leaves(saved.params), strict=True):
    np.testing.assert_array_equal(a, b)
  _, finished, steps = _run(str(tmp_path))
  assert finished and steps == list(range(1, 7))


def test_best_checkpoint_follows_the_metric(tmp_path):
  scores = iter([5.0, 3.0])
  _run(str(tmp_path), evaluate=lambda state: {"rsum": next(scores)})
  checkpoints = Checkpoints(str(tmp_path))
  assert checkpoints.best.best_step() == 3  # epoch 0 (rsum 5) beat epoch 1 (rsum 3)
  assert checkpoints.latest.latest_step() == 6
  best = checkpoints.restore(tiny.make_state(optax.adam(1e-2)), which="best")
  assert int(best.step) == 3
  checkpoints.close()


def test_validation_within_epochs_keeps_the_best_of_every_validation(tmp_path):
  """Every 2 steps of 3-step epochs: steps 2, 3 (epoch end), 4 and 6 (epoch end); the
  best is the validation within the second epoch, step 4."""
  scores = iter([1.0, 2.0, 7.0, 3.0])
  validated = []
  _run(
    str(tmp_path),
    evaluate=lambda state: {"rsum": next(scores), "step": int(state.step)},
    eval_every_steps=2,
    validated=validated,
  )
  assert [(step, m["step"], m["rsum"]) for step, m in validated] == [
    (2, 2, 1.0),
    (3, 3, 2.0),
    (4, 4, 7.0),
    (6, 6, 3.0),
  ]
  checkpoints = Checkpoints(str(tmp_path))
  assert checkpoints.best.best_step() == 4 and checkpoints.latest.latest_step() == 6
  checkpoints.close()


def test_sigterm_requests_a_stop():
  with StopRequested() as stop:
    assert not stop()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop()
  assert signal.getsignal(signal.SIGTERM) is not stop.request


def test_short_epoch_is_an_error(tmp_path):
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:2],
  )
  with pytest.raises(ValueError, match="expected steps_per_epoch = 5"):
    fit(
      tiny.make_state(),
      parallel=parallel,
      plan=EpochPlan(epoch_batches=_epoch_batches, steps_per_epoch=5, num_epochs=1),
    )


def _caption_to_image_r_at_1(params, batches):
  """Caption -> image R@1 within each batch (ties impossible with float embeddings)."""
  hits = []
  for b in batches:
    img, txt = tiny.TinyDualEncoder().apply(
      {"params": params}, b["images"], b["tokens"], b["lengths"]
    )
    best = np.asarray(txt @ img.T).argmax(axis=1)  # a row of the batch, i.e. an image
    hits.append(b["image_ids"][best] == b["image_ids"])
  return float(np.mean(hits))


def test_fit_learns_the_batches_it_sees():
  """Eight epochs over the same three batches: each batch's loss falls by a clear
  margin, and caption -> image R@1 rises well above the untrained model's."""
  batches = [tiny.make_batch(seed=i) for i in range(3)]
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:2],
  )
  start = tiny.make_state(optax.adam(1e-2))
  before = _caption_to_image_r_at_1(start.params, batches)  # before fit donates the buffers
  losses = []
  state, finished = fit(
    start,
    parallel=parallel,
    plan=EpochPlan(epoch_batches=lambda epoch: iter(batches), steps_per_epoch=3, num_epochs=8),
    hooks=LoopHooks(on_step=lambda step, m: losses.append(float(m["loss"]))),
  )
  assert finished and len(losses) == 24
  first, last = np.array(losses[:3]), np.array(losses[-3:])
  assert np.all(last < 0.75 * first), (first, last)
  after = _caption_to_image_r_at_1(state.params, batches)
  assert after >= before + 0.15, (before, after)


def test_prefetching_does_not_change_the_result():
  parallel = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:2],
  )
  results = []
  for prefetch in (0, 1, 3):
    state, finished = fit(
      tiny.make_state(optax.adam(1e-2)),
      parallel=parallel,
      plan=EpochPlan(epoch_batches=_epoch_batches, steps_per_epoch=STEPS_PER_EPOCH, num_epochs=2),
      prefetch=prefetch,
    )
    assert finished and int(state.step) == 2 * STEPS_PER_EPOCH
    results.append(jax.tree.leaves(jax.device_get(state.params)))
  for other in results[1:]:
    for a, b in zip(results[0], other):
      np.testing.assert_array_equal(a, b)
