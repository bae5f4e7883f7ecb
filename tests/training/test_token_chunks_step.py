"""Captions in length-sorted chunks (``config.token_chunks``) give what the batch at one
width gives: VSE++'s GRU the same caption embeddings, and VSE∞'s train step (its BERT) the
same loss and updated parameters on two devices as on one device at one width."""

import jax
import numpy as np
import optax
import pytest

from jitr import training
from jitr.data.token_chunks import chunked_tokens, joined_token_chunks, length_sorted
from tests.training import model_zoo, tiny


def _chunked(batch, chunks, shards, buckets):
  """``batch`` with each device's rows sorted by length and its tokens in chunks."""
  order = length_sorted(batch["lengths"], shards=shards)
  ordered = {k: v[order] for k, v in batch.items()}
  return ordered, chunked_tokens(ordered, chunks=chunks, shards=shards, buckets=buckets)


def test_the_gru_dual_encoder_embeds_chunks_as_the_batch_at_one_width():
  model = model_zoo.model("vse")
  ordered, chunked = _chunked(model_zoo.region_batch(seed=3), 4, 1, (2, 3, 4, 5))
  variables = model.init(jax.random.key(0), ordered)
  (want, _), (got, _) = (
    model.forward(variables, joined_token_chunks(b), rngs={"dropout": jax.random.key(2)})
    for b in (ordered, chunked)
  )
  assert len({t.shape[1] for t in joined_token_chunks(chunked)["tokens"]}) > 1
  np.testing.assert_allclose(np.asarray(got.captions), np.asarray(want.captions), atol=1e-6)
  np.testing.assert_array_equal(np.asarray(got.images), np.asarray(want.images))


def test_chunked_vseinf_step_on_two_devices_equals_the_step_at_one_width():
  model = model_zoo.model("vseinf")
  batch = model_zoo.region_batch(seed=3)  # 8 pairs, captions of 2..5 ids
  state = training.create_train_state(
    jax.jit(model.init)(jax.random.key(0), batch), optax.sgd(1.0), jax.random.key(1)
  )
  # each device's 4 rows sorted by length, then 2 chunks per device, each its own width
  _, chunked = _chunked(batch, 2, 2, (2, 3, 4, 5))
  widths = [chunked[f"token_chunks/{c}"].shape[1] for c in range(2)]
  assert widths[0] < widths[1] <= batch["tokens"].shape[1], widths  # the cut saves padding
  (want_state, want), (got_state, got) = tiny.one_and_parallel_steps(
    model, state, batch, devices=jax.devices()[:2], parallel_batch=chunked
  )
  assert float(got["loss"]) == pytest.approx(float(want["loss"]), abs=1e-5)
  tiny.assert_params_close(want_state, got_state)
