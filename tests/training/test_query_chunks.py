"""Query rows a chunk at a time (``query_chunks``): each device's rows scored, targeted,
graded and lossed per chunk, the chunk's scoring redone in the backward pass; the same
loss, metrics and update as the whole rows, on one device and on eight, with GradCache;
refused in one line where it cannot apply."""

import dataclasses

import jax
import pytest

from jitr import training
from tests.training import tiny
from tests.training.test_grad_cache import _assert_same_update
from tests.training.test_grad_cache import _step as grad_cache_step


def _step(query_chunks, axis_name=None, grad_chunks=1):
  return grad_cache_step(grad_chunks, axis_name=axis_name, query_chunks=query_chunks)


def test_chunks_give_the_update_of_the_whole_rows_on_one_device_or_eight():
  """Every loss of the registry (random draws keyed by global rows, graded inputs, epoch
  windows), the exact NDCG metrics; 4 chunks of 8 rows on one device, then 2 chunks of 2
  rows on each of 8 devices with GradCache's 2 chunks beside them."""
  batch = tiny.make_batch(seed=4, n_images=16, captions_per_image=2)  # 32 rows
  state = tiny.make_state()
  want, want_metrics = jax.jit(_step(1))(state, batch)
  got, metrics = jax.jit(_step(4))(state, batch)
  assert set(metrics) == set(want_metrics) and "ndcg_i2t" in metrics
  for name in want_metrics:
    assert float(metrics[name]) == pytest.approx(float(want_metrics[name]), rel=1e-6, abs=1e-5), (
      name
    )
  _assert_same_update(state, want, got)
  assert float(want_metrics["grad_norm"]) > 1e-3  # an update to compare
  dp = training.DataParallel(_step(2, axis_name="batch", grad_chunks=2), donate=False)
  parallel, parallel_metrics = dp(dp.put_state(state), dp.put_batch(batch))
  for name in ("loss", "ndcg_t2i"):
    assert float(parallel_metrics[name]) == pytest.approx(float(want_metrics[name]), rel=1e-6)
  _assert_same_update(state, want, dp.get_state(parallel))


def test_chunks_that_cannot_apply_are_refused():
  with pytest.raises(ValueError, match=r"^query_chunks: expected an int >= 1, got 0$"):
    _step(0)
  batch = tiny.make_batch(seed=4, n_images=5, captions_per_image=2)  # 10 rows
  refused = r"^config.query_chunks: 4 chunks do not split a device's 10 rows; expected a divisor"
  with pytest.raises(ValueError, match=refused):
    jax.jit(_step(4))(tiny.make_state(), batch)
  pairwise = dataclasses.replace(tiny.MODEL, pairwise=True)
  with pytest.raises(ValueError, match=r"^config.query_chunks: the network scores each"):
    training.make_train_step(tiny.LOSS_FN, model=pairwise, query_chunks=2)
