"""The GradCache step (``grad_chunks``) and query chunks (``query_chunks``): embeddings of
every chunk without activations, the loss's gradient at them, each chunk's backward again;
a device's query rows scored and lossed a chunk at a time: the same loss, metrics and
update as the step over the whole batch, on one device and on eight; refused in one line
where a chunk would change what the rows compute."""

import jax
import numpy as np
import pytest

from jitr import training
from jitr.training.grad_cache import chunked
from tests.training import tiny


def _step(grad_chunks, axis_name=None, query_chunks=1):
  return training.make_train_step(
    tiny.EVERY_LOSS_FN,
    model=tiny.MODEL,
    graded_fn=tiny.graded_inputs_fn,
    axis_name=axis_name,
    grad_chunks=grad_chunks,
    query_chunks=query_chunks,
  )


def _assert_same_update(state, want, got):
  """The SGD (rate 1) updates ``state − new`` agree to float32 rounding of their scale."""
  for p, a, b in zip(*(jax.tree.leaves(s.params) for s in (state, want, got)), strict=True):
    step_a, step_b = np.asarray(p) - np.asarray(a), np.asarray(p) - np.asarray(b)
    np.testing.assert_allclose(step_b, step_a, atol=1e-6 * np.abs(step_a).max() + 1e-7)


def test_chunks_give_the_update_of_the_whole_batch_on_one_device_or_eight():
  """Every loss of the registry (random draws keyed by global rows, graded inputs, epoch
  windows) and the exact NDCG metrics: GradCache's 4 chunks and 4 query chunks of 8 rows
  each on one device, then both at 2 chunks of 2 rows on each of 8 devices, against the
  whole batch's step on one device."""
  batch = tiny.make_batch(seed=4, n_images=16, captions_per_image=2)  # 32 rows
  state = tiny.make_state()
  want, want_metrics = jax.jit(_step(1))(state, batch)
  assert float(want_metrics["grad_norm"]) > 1e-3 and "ndcg_i2t" in want_metrics
  for chunks in ({"grad_chunks": 4}, {"grad_chunks": 1, "query_chunks": 4}):
    got, metrics = jax.jit(_step(**chunks))(state, batch)
    assert set(metrics) == set(want_metrics)
    for name in want_metrics:
      want_value = float(want_metrics[name])
      assert float(metrics[name]) == pytest.approx(want_value, rel=1e-6, abs=1e-5), (chunks, name)
    _assert_same_update(state, want, got)
  dp = training.DataParallel(_step(2, axis_name="batch", query_chunks=2), donate=False)
  parallel, parallel_metrics = dp(dp.put_state(state), dp.put_batch(batch))
  for name in ("loss", "ndcg_t2i"):
    assert float(parallel_metrics[name]) == pytest.approx(float(want_metrics[name]), rel=1e-6)
  _assert_same_update(state, want, dp.get_state(parallel))


def test_chunks_that_do_not_split_the_rows_are_refused():
  with pytest.raises(ValueError, match=r"^grad_chunks: expected an int >= 1, got 0$"):
    _step(0)
  batch = tiny.make_batch(seed=4, n_images=5, captions_per_image=2)  # 10 rows
  refused = (
    r"^config.grad_chunks: 4 chunks do not split a device's 10 rows \(images\); "
    r"expected a divisor"
  )
  with pytest.raises(ValueError, match=refused):
    jax.jit(_step(4))(tiny.make_state(), batch)
  with pytest.raises(ValueError, match=r"tokens comes in token chunks"):
    chunked({"tokens": (np.zeros((4, 2)), np.zeros((4, 3)))}, 2)


def test_rows_that_a_chunk_would_change_are_refused():
  """Auxiliary losses of the rows and batch statistics: one line, nothing trained."""
  import dataclasses

  import jax.numpy as jnp

  from jitr.models.retrieval_model import ModelOutput

  def with_aux(variables, batch, **kwargs):
    out, new_state = tiny.MODEL.forward(variables, batch, **kwargs)
    return ModelOutput(out.images, out.captions, {"caption": jnp.mean(out.images, -1)}), new_state

  model = dataclasses.replace(tiny.MODEL, forward=with_aux, aux_weights={"caption": 1.0})
  step = training.make_train_step(tiny.LOSS_FN, model=model, axis_name=None, grad_chunks=2)
  batch = tiny.make_batch(seed=4)
  with pytest.raises(ValueError, match=r"^config.grad_chunks: the network's auxiliary losses"):
    jax.jit(step)(tiny.make_state(), batch)
  state = tiny.make_state().replace(model_state={"batch_stats": {"mean": jnp.zeros(3)}})
  plain = training.make_train_step(tiny.LOSS_FN, model=tiny.MODEL, axis_name=None, grad_chunks=2)
  with pytest.raises(ValueError, match=r"^config.grad_chunks: the network keeps batch statistics"):
    jax.jit(plain)(state, batch)
