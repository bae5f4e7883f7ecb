"""The query-row split: 8 host devices give the one-device loss and gradient of every loss.

The reference is the plain functional objective on the whole similarity
matrix of the *unpadded* batch (``jax.value_and_grad`` on one device); the
data-parallel step gets the same pairs, padded with ``valid=False`` rows when
the batch is not a multiple of the device count, and each device computes
only its own queries' terms.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses, training
from tests.training import tiny

STEPS_PER_EPOCH = tiny.STEPS_PER_EPOCH
TERMS = tiny.EVERY_LOSS
graded_fn = tiny.graded_inputs_fn


def _batch(n_pairs, rows):
  """``n_pairs`` real pairs (several captions per image) padded to ``rows`` with invalid rows."""
  full = tiny.make_batch(seed=5, n_images=(n_pairs + 1) // 2, captions_per_image=2)
  real = {k: np.asarray(v)[:n_pairs] for k, v in full.items()}
  pad = rows - n_pairs
  padded = {k: np.concatenate([v, v[:pad]]) for k, v in real.items()}
  padded["valid"] = np.arange(rows) < n_pairs
  padded["image_ids"][n_pairs:] = -1
  return real, padded


def _reference(loss_fn, state, batch):
  """One device, no split: ``value_and_grad`` of the functional objective on the whole batch."""
  batch = {k: jnp.asarray(v) for k, v in batch.items()}
  positives, where = training.in_batch_targets(batch)
  graded = graded_fn(batch, batch, positives)
  loss_key = jax.random.split(state.rng, 3)[1]

  def total(params):
    out, _ = tiny.MODEL.forward({"params": params}, batch, train=True, rngs={})
    sim = out.images @ out.captions.T
    return loss_fn(sim, positives=positives, where=where, graded=graded, key=loss_key, step=0)

  (value, parts), grads = jax.jit(jax.value_and_grad(total, has_aux=True))(state.params)
  return value, parts, grads


@functools.cache
def _data_parallel(loss_fn, backend):
  """One ``DataParallel`` step per objective and backend: batches of one row count share
  its compilation."""
  return training.DataParallel(
    training.make_train_step(loss_fn, model=tiny.MODEL, graded_fn=graded_fn),
    backend=backend,
    donate=False,
  )


def _parallel(loss_fn, state, batch, backend):
  dp = _data_parallel(loss_fn, backend)
  new_state, metrics = dp(dp.put_state(state), dp.put_batch(batch))
  grads = jax.tree.map(
    lambda a, b: np.asarray(a) - np.asarray(b), state.params, dp.get_state(new_state).params
  )
  return metrics, grads  # optax.sgd(1.0): params_after = params_before − grad


def _assert_same(loss_fn, n_pairs, rows, backend, names, reference=_reference):
  assert jax.device_count() == 8, "tests/conftest.py asks XLA for 8 host devices"
  real, padded = _batch(n_pairs, rows)
  state = tiny.make_state()
  value, parts, want = reference(loss_fn, state, real)
  metrics, got = _parallel(loss_fn, state, padded, backend)
  assert float(metrics["loss"]) == pytest.approx(float(value), rel=1e-6, abs=1e-5)
  for name in names:
    assert float(metrics[f"loss/{name}"]) == pytest.approx(
      float(parts[name]), rel=1e-6, abs=1e-5
    ), name
  assert float(value) > 0.0
  for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
  assert max(float(np.abs(w).max()) for w in jax.tree.leaves(want)) > 1e-3  # a real gradient


@pytest.mark.slow  # 9 compilations; the sum test below checks every term's value in one
@pytest.mark.parametrize("name", sorted(TERMS))
def test_each_loss_on_eight_devices_equals_one_device_with_padding(name):
  """13 pairs padded to 16 rows (2 per device): each loss alone, value and gradient."""
  term = dict(TERMS[name], weight=1.0) if name != "later" else {"loss": "adaptive_listwise"}
  loss_fn = losses.objective({name: term}, steps_per_epoch=STEPS_PER_EPOCH)
  _assert_same(loss_fn, 13, 16, "shard_map", [name])


SUM_FN = losses.objective(TERMS, steps_per_epoch=STEPS_PER_EPOCH)


@functools.cache
def _sum_reference(n_pairs):
  """The one-device reference of ``SUM_FN`` on ``n_pairs`` real pairs, computed (and
  compiled) once for both backends."""
  real, _ = _batch(n_pairs, n_pairs)
  return _reference(SUM_FN, tiny.make_state(), real)


@pytest.mark.parametrize("backend", ["shard_map", "pmap"])
@pytest.mark.parametrize("n_pairs, rows", [(16, 16), (13, 16)])
def test_sum_of_every_loss_on_eight_devices_equals_one_device(backend, n_pairs, rows):
  """Unpadded, and 3 padding rows (the last device all padding, the one before half): one
  compiled step of 16 rows per backend serves both."""
  _assert_same(
    SUM_FN, n_pairs, rows, backend, list(TERMS), reference=lambda *_: _sum_reference(n_pairs)
  )


def test_random_negatives_do_not_depend_on_the_split():
  """SAM's random draw is keyed per global query row: 8 devices = 1 device, same key."""
  loss_fn = losses.objective({"sam": TERMS["sam_random"]})
  real, _ = _batch(16, 16)
  state = tiny.make_state()
  one = jax.jit(
    training.make_train_step(loss_fn, model=tiny.MODEL, graded_fn=graded_fn, axis_name=None)
  )
  _, single = one(state, real)
  metrics, _ = _parallel(loss_fn, state, real, "shard_map")
  assert float(metrics["loss"]) == pytest.approx(float(single["loss"]), abs=1e-6)
