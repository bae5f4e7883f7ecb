"""GRU / BiGRU text encoders: shapes, L2 norm, padding tokens ignored, trimming."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.models import GRUTextEncoder, gru
from jitr.models.vse import text_gru

TOKENS = jnp.array(
  [[1, 5, 6, 7, 2, 0, 0, 0], [1, 8, 2, 0, 0, 0, 0, 0], [1, 4, 4, 4, 4, 4, 9, 2]], jnp.int32
)
LENGTHS = jnp.array([5, 3, 8], jnp.int32)


@pytest.mark.parametrize(
  "bidirectional,pooling", [(False, "last"), (True, "last"), (True, "gpo"), (False, "mean")]
)
def test_shapes_norm_and_padding_tokens_ignored(bidirectional, pooling, make_params):
  enc = GRUTextEncoder(
    vocab_size=12, word_dim=6, embed_dim=7, bidirectional=bidirectional, pooling=pooling
  )
  params = make_params(enc, TOKENS, LENGTHS)
  apply = jax.jit(enc.apply)
  out = apply(params, TOKENS, LENGTHS)
  assert out.shape == (3, 7) and out.dtype == jnp.float32
  np.testing.assert_allclose(jnp.linalg.norm(out, axis=-1), 1.0, rtol=1e-5)
  pad = jnp.arange(8)[None, :] >= LENGTHS[:, None]
  other = jnp.where(pad, 11, TOKENS)  # padding tokens changed
  np.testing.assert_allclose(apply(params, other, LENGTHS), out, atol=1e-6)
  # a shorter length changes the embedding (the mask is really used)
  assert not np.allclose(apply(params, TOKENS, jnp.array([4, 3, 8]))[0], out[0])


def test_trimming_to_the_longest_caption_is_exact(make_params):
  enc = GRUTextEncoder(vocab_size=12, word_dim=6, embed_dim=7, bidirectional=True)
  tokens, lengths = TOKENS[:2], LENGTHS[:2]
  params = make_params(enc, tokens, lengths)
  apply = jax.jit(enc.apply)
  full = apply(params, tokens, lengths)
  trimmed = apply(params, tokens[:, :5], lengths)
  np.testing.assert_allclose(full, trimmed, atol=1e-6)


def test_param_layout_and_initialisers():
  enc = GRUTextEncoder(vocab_size=12, word_dim=6, embed_dim=7)
  params = jax.eval_shape(enc.init, jax.random.key(0), TOKENS, LENGTHS)["params"]
  assert params["embed"]["embedding"].shape == (12, 6)
  assert params["gru"]["input"]["kernel"].shape == (6, 21)
  assert params["gru"]["recurrent_kernel"].shape == (7, 21)
  emb = np.asarray(text_gru._uniform_init(0.1)(jax.random.key(0), (50, 6)))
  assert np.abs(emb).max() <= 0.1 and emb.std() > 0.04  # U(-0.1, 0.1) as VSE++
  w = np.asarray(gru._stacked_orthogonal(3)(jax.random.key(0), (7, 21)))
  for g in range(3):  # three orthogonal gate blocks
    blk = w[:, 7 * g : 7 * (g + 1)]
    np.testing.assert_allclose(blk @ blk.T, np.eye(7), atol=1e-5)


def test_bad_inputs():
  enc = GRUTextEncoder(vocab_size=12, word_dim=6, embed_dim=7)
  with pytest.raises(ValueError, match=r"tokens must be \[B, T\]"):
    jax.eval_shape(enc.init, jax.random.key(0), TOKENS, LENGTHS[:2])
  with pytest.raises(ValueError, match="pooling must be one of"):
    jax.eval_shape(
      GRUTextEncoder(vocab_size=12, pooling="first").init, jax.random.key(0), TOKENS, LENGTHS
    )
