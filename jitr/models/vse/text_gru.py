"""GRU and BiGRU caption encoders over padded token ids (VSE++, SCAN, VSE∞).

::

    e_t = Embed(token_t)                       (word_dim)
    h   = GRU(e, lengths)  or  BiGRU(e, lengths) with directions averaged
    out = pool(h)   'last': state after the last real token (for BiGRU the
                    mean of the forward and backward final states, VSE++);
                    'mean' / 'max' / 'gpo' over the real tokens' outputs (VSE∞)
    out = out / ‖out‖₂

Tokens at ``t >= lengths[b]`` never influence the output (masked recurrence).
For speed, call it on a batch trimmed to its (bucketed) longest caption
(:func:`jitr.data.vocab.bucket_length`): the recurrence runs over exactly the
time axis it is given, with the input projection of all steps done in one matmul.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize
from jitr.models.common import lengths_to_mask
from jitr.models.gru import GRU, BiGRU
from jitr.models.vse.region_encoder import SetPool

__all__ = ["GRUTextEncoder"]
TEXT_POOLINGS = ("last", "mean", "max", "gpo")


def _uniform_init(scale: float):
  """``U(-scale, scale)`` (VSE++ initialises word embeddings with 0.1)."""

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, shape, dtype, -scale, scale)

  return init


class GRUTextEncoder(nn.Module):
  """``(tokens [B, T] int, lengths [B] int) -> [B, embed_dim]``.

  ``embed_dim`` is the GRU hidden size (VSE++: 1024). ``bidirectional`` gives a
  BiGRU whose two directions are averaged (SCAN / VSE∞).
  """

  vocab_size: int
  word_dim: int = 300
  embed_dim: int = 1024
  bidirectional: bool = False
  pooling: str = "last"
  normalize: bool = True
  unroll: int = 1
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, tokens: jax.Array, lengths: jax.Array) -> jax.Array:
    if tokens.ndim != 2 or lengths.shape != tokens.shape[:1]:
      raise ValueError(
        f"GRUTextEncoder: tokens must be [B, T] and lengths [B], "
        f"got {tokens.shape} and {lengths.shape}"
      )
    if self.pooling not in TEXT_POOLINGS:
      raise ValueError(
        f"GRUTextEncoder: pooling must be one of {TEXT_POOLINGS}, got {self.pooling!r}"
      )
    lengths = lengths.astype(jnp.int32)
    x = nn.Embed(
      self.vocab_size,
      self.word_dim,
      dtype=self.dtype,
      param_dtype=self.param_dtype,
      embedding_init=_uniform_init(0.1),
      name="embed",
    )(tokens)
    kw = dict(unroll=self.unroll, dtype=self.dtype, param_dtype=self.param_dtype)
    if self.bidirectional:
      outputs, final = BiGRU(self.embed_dim, merge="mean", name="bigru", **kw)(x, lengths)
    else:
      outputs, final = GRU(self.embed_dim, name="gru", **kw)(x, lengths)
    if self.pooling == "last":
      out = final
    else:
      mask = lengths_to_mask(lengths, tokens.shape[1])
      out = SetPool(self.pooling, name="pool")(outputs, mask)
    return l2_normalize(out) if self.normalize else out.astype(jnp.float32)
