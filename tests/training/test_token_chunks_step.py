"""A train step on captions in length-sorted chunks (``config.token_chunks``) equals the
step on the batch at one width: the same loss and the same updated parameters, for both
networks that take chunks (the BiGRU-free VSE++ GRU and VSE∞'s BERT), on two devices
against one."""

import jax
import numpy as np
import optax
import pytest

from jitr import training
from jitr.data.token_chunks import chunked_tokens, length_sorted
from tests.training import model_zoo, tiny


@pytest.mark.parametrize("name", ["vse", "vseinf"])
def test_chunked_step_on_two_devices_equals_the_step_at_one_width(name):
  model = model_zoo.model(name)
  batch = model_zoo.region_batch(seed=3)  # 8 pairs, captions of 2..5 ids
  state = training.create_train_state(
    jax.jit(model.init)(jax.random.key(0), batch), optax.sgd(1.0), jax.random.key(1)
  )
  step = training.make_train_step(
    tiny.LOSS_FN, model=model, graded_fn=tiny.graded_fn, axis_name=None
  )
  want_state, want = jax.jit(step)(state, batch)

  # each device's 4 rows sorted by length, then 2 chunks per device, each its own width
  order = length_sorted(batch["lengths"], shards=2)
  ordered = {k: v[order] for k, v in batch.items()}
  chunked = chunked_tokens(ordered, chunks=2, shards=2, buckets=(2, 3, 4, 5))
  widths = [chunked[f"token_chunks/{c}"].shape[1] for c in range(2)]
  assert widths[0] < widths[1] <= batch["tokens"].shape[1], widths  # the cut saves padding
  dp = training.DataParallel(
    training.make_train_step(tiny.LOSS_FN, model=model, graded_fn=tiny.graded_fn),
    devices=jax.devices()[:2],
    donate=False,
  )
  got_state, got = dp(dp.put_state(state), dp.put_batch(chunked))
  assert float(got["loss"]) == pytest.approx(float(want["loss"]), abs=1e-5)
  for a, b in zip(jax.tree.leaves(want_state.params), jax.tree.leaves(got_state.params)):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=1e-5)
