import jax
import numpy as np
import optax
import pytest

from jitr import training
from tests.training import tiny


def test_steps_lower_the_loss_on_a_tiny_batch():
  state = tiny.make_state(optax.adam(1e-2))
  step = jax.jit(
    training.make_train_step(
      tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn, axis_name=None
    )
  )
  batch = tiny.make_batch()
  losses_seen = []
  for _ in range(8):
    state, metrics = step(state, batch)
    losses_seen.append(float(metrics["loss"]))
  assert losses_seen[-1] < 0.8 * losses_seen[0]
  assert int(state.step) == 8
  assert 0.0 < float(metrics["ndcg_i2t"]) <= 1.0 and 0.0 < float(metrics["ndcg_t2i"]) <= 1.0
  assert set(metrics) >= {"loss", "loss/triplet", "loss/smooth_ndcg", "grad_norm"}


def test_positives_are_every_caption_of_the_same_image():
  batch = tiny.make_batch(n_images=3, captions_per_image=2)
  positives, where = training.in_batch_targets({k: np.asarray(v) for k, v in batch.items()})
  expected = np.kron(np.eye(3, dtype=bool), np.ones((2, 2), bool))
  np.testing.assert_array_equal(positives, expected)
  assert np.asarray(where).all()


def _sgd_gradient(state_before, state_after):
  # With optax.sgd(1.0): params_after = params_before − grad.
  return jax.tree.map(
    lambda a, b: np.asarray(a) - np.asarray(b), state_before.params, state_after.params
  )


@pytest.mark.parametrize("backend", ["shard_map", "pmap"])
def test_eight_devices_equal_one_device(backend):
  assert jax.device_count() == 8, "tests/conftest.py asks XLA for 8 host devices"
  batch = tiny.make_batch(seed=3)
  state = tiny.make_state()
  single = jax.jit(
    training.make_train_step(
      tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn, axis_name=None
    )
  )
  ref_state, ref_metrics = single(state, batch)
  dp = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
    backend=backend,
    donate=False,
  )
  new_state, metrics = dp(dp.put_state(state), dp.put_batch(batch))
  new_state = dp.get_state(new_state)
  for name in ("loss", "loss/triplet", "loss/smooth_ndcg", "ndcg_i2t", "ndcg_t2i"):
    assert float(metrics[name]) == pytest.approx(float(ref_metrics[name]), abs=1e-5), name
  want, got = _sgd_gradient(state, ref_state), _sgd_gradient(state, new_state)
  for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
    np.testing.assert_allclose(g, w, atol=1e-5)


def test_pmap_equals_shard_map_over_several_steps():
  batches = [tiny.make_batch(seed=s) for s in range(3)]
  results = {}
  for backend in ("shard_map", "pmap"):
    dp = training.DataParallel(
      training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn),
      backend=backend,
      devices=jax.devices()[:4],
    )
    state = dp.put_state(tiny.make_state(optax.adam(1e-2)))
    for batch in batches:
      state, metrics = dp(state, dp.put_batch(batch))
    results[backend] = (dp.get_state(state), float(metrics["loss"]))
  (a, loss_a), (b, loss_b) = results["shard_map"], results["pmap"]
  assert loss_a == pytest.approx(loss_b, abs=1e-6)
  for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params)):
    np.testing.assert_allclose(x, y, atol=1e-6)


def test_batch_that_does_not_split_over_devices_is_refused():
  dp = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_fn)
  )
  batch = tiny.make_batch(n_images=3, captions_per_image=2)  # 6 rows on 8 devices
  with pytest.raises(ValueError, match="do not split over 8 devices"):
    dp.put_batch(batch)


def test_the_step_switches_epoch_windowed_terms_at_state_step():
  """VSE∞ warm-up through the real step: with 3 steps per epoch, the total is
  the sum-of-hinges term for steps 0–2 and the max-violation term from step 3."""
  from jitr import losses

  loss_fn = losses.objective(
    {
      "warmup": {"loss": "triplet", "mining": "sum", "until_epoch": 1},
      "triplet": {"mining": "max", "from_epoch": 1},
    },
    steps_per_epoch=3,
  )
  step = jax.jit(training.make_train_step(loss_fn, model=tiny.MODEL, axis_name=None))
  state = tiny.make_state(optax.sgd(0.0))  # parameters stay put: every step sees the same sim
  batch = tiny.make_batch()
  for i in range(5):
    state, m = step(state, batch)
    expected = m["loss/warmup"] if i < 3 else m["loss/triplet"]
    assert float(m["loss"]) == pytest.approx(float(expected), abs=1e-6), i
  assert float(m["loss/warmup"]) > float(m["loss/triplet"])  # the two terms differ


def test_shard_map_checks_that_replicated_outputs_are_reduced():
  """check_vma is on: a step returning a per-device value as replicated is refused."""
  dp = training.DataParallel(lambda state, batch: (state, {"x": batch["x"].sum()}), donate=False)
  with pytest.raises(Exception, match="(?i)vary|varying|replicat"):
    dp(dp.put_state({"w": np.zeros(2, np.float32)}), dp.put_batch({"x": np.ones(8, np.float32)}))
