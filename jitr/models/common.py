"""Small pure helpers shared by the encoders: masked pooling, length masks, the official
word-embedding init, a text encoder run over caption chunks. (L2 normalisation is
:func:`jitr.losses.normalize.l2_normalize`.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = [
  "masked_max",
  "masked_mean",
  "lengths_to_mask",
  "official_embedding_init",
  "encode_row_chunks",
  "wide_dtype",
]


def wide_dtype(dtype) -> jnp.dtype:
  """The dtype a ``dtype`` computation keeps its LayerNorm, softmax and residual sums in:
  float32, or float64 for float64 (bfloat16 matmuls, float32 statistics)."""
  return jnp.promote_types(dtype, jnp.float32)


def masked_max(x: jax.Array, mask: jax.Array | None) -> jax.Array:
  """``max_k x[b, k, :]`` over entries with ``mask[b, k]``; 0 where none is valid.

  Args: x ``[B, K, D]``; mask ``[B, K]`` bool or ``None`` (all valid).
  """
  if mask is None:
    return jnp.max(x, axis=1)
  m = mask[..., None]
  lowest = jnp.asarray(jnp.finfo(x.dtype).min, x.dtype)
  pooled = jnp.max(jnp.where(m, x, lowest), axis=1)
  return jnp.where(jnp.any(m, axis=1), pooled, jnp.zeros_like(pooled))


def masked_mean(x: jax.Array, mask: jax.Array | None) -> jax.Array:
  """``Σ_k mask·x / max(1, Σ_k mask)``: mean over valid entries, 0 where none."""
  if mask is None:
    return jnp.mean(x, axis=1)
  m = mask[..., None].astype(x.dtype)
  return jnp.sum(x * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1)


def lengths_to_mask(lengths: jax.Array, max_len: int) -> jax.Array:
  """``[B, max_len]`` bool, ``mask[b, t] = t < lengths[b]``."""
  return jnp.arange(max_len)[None, :] < lengths[:, None]


def official_embedding_init(key: jax.Array, shape, dtype=jnp.float32) -> jax.Array:
  """``U(-0.1, 0.1)``: the word-embedding init of the official VSE++ / SGRAF / VSRN code."""
  return jax.random.uniform(key, shape, dtype, -0.1, 0.1)


def encode_row_chunks(encode, tokens, lengths: jax.Array) -> jax.Array:
  """``encode(tokens, lengths) -> [B, ...]`` of a batch whose ``tokens`` are one array
  ``[B, L]`` or a tuple of ``k`` chunks ``[B/k, L_c]``: rows ``c·B/k … (c+1)·B/k − 1`` of
  the batch, each chunk padded to its own width (``config.token_chunks``,
  :mod:`!jitr.data.token_chunks`). Chunks give
  ``concat_c encode(tokens_c, lengths[c·B/k : (c+1)·B/k])``: for an encoder whose row
  depends on its own caption alone, the rows of encoding the batch at one width."""
  if not isinstance(tokens, (tuple, list)):
    return encode(tokens, lengths)
  size = tokens[0].shape[0]
  parts = [encode(t, lengths[c * size : (c + 1) * size]) for c, t in enumerate(tokens)]
  return jnp.concatenate(parts, axis=0)
