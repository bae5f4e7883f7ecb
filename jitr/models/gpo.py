"""Generalized Pooling Operator (GPO) of VSE∞ (Chen et al., CVPR 2021).

For a set of ``n`` valid feature vectors ``f_1..f_n ∈ R^D``, GPO sorts every
dimension independently in descending order and takes a weighted sum over the
sorted positions::

    pooled_d = Σ_{k<n} θ_k · sort_desc(f_{1..n, d})_k,
    θ = softmax(score / 0.1)   over k < n,
    score_k = Linear(mean of the two directions of BiGRU(PE(k)))_k,

with ``PE`` the sinusoidal positional encoding of the position index (dim 32)
and a BiGRU of hidden size 32 run over the ``n`` valid positions. ``θ`` depends
only on ``n``; θ = one-hot(0) gives max pooling, uniform θ gives mean pooling.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.common import lengths_to_mask
from jitr.models.gru import BiGRU


def positional_encoding(length: int, dim: int) -> jax.Array:
  """``[length, dim]``: ``pe[k, 2i] = sin(k / 10000^(2i/dim))``,
  ``pe[k, 2i+1] = cos(k / 10000^(2i/dim))`` (``dim`` even)."""
  if dim % 2:
    raise ValueError(f"positional_encoding: dim must be even, got {dim}")
  pos = jnp.arange(length, dtype=jnp.float32)[:, None]
  div = jnp.exp(jnp.arange(0, dim, 2, dtype=jnp.float32) * (-math.log(10000.0) / dim))
  pe = jnp.zeros((length, dim), jnp.float32)
  pe = pe.at[:, 0::2].set(jnp.sin(pos * div))
  return pe.at[:, 1::2].set(jnp.cos(pos * div))


def sort_valid_desc(features: jax.Array, mask: jax.Array | None) -> tuple[jax.Array, jax.Array]:
  """Sorts each feature dimension over the valid entries, descending.

  Args: features ``[B, K, D]``; mask ``[B, K]`` bool or ``None``.
  Returns: sorted ``[B, K, D]`` (positions ``k >= n_valid`` are 0) and the
  sorted-position mask ``[B, K]`` (``k < n_valid``).
  """
  b, k, _ = features.shape
  if mask is None:
    mask = jnp.ones((b, k), bool)
  lowest = jnp.asarray(jnp.finfo(features.dtype).min, features.dtype)
  x = jnp.where(mask[..., None], features, lowest)
  x = -jnp.sort(-x, axis=1)
  sorted_mask = lengths_to_mask(jnp.sum(mask, axis=1), k)
  return jnp.where(sorted_mask[..., None], x, jnp.zeros_like(x)), sorted_mask


def gpo_pool(features: jax.Array, mask: jax.Array | None, weights: jax.Array) -> jax.Array:
  """``Σ_k weights[b, k] · sort_desc(features[b, valid, d])_k``: ``[B, D]``.

  ``weights`` ``[B, K]`` are over sorted positions (entries at ``k >= n_valid``
  multiply zeros).
  """
  sorted_x, _ = sort_valid_desc(features, mask)
  return jnp.sum(sorted_x * weights[..., None].astype(sorted_x.dtype), axis=1)


class GPO(nn.Module):
  """Learned GPO pooling: ``(features [B,K,D], mask [B,K]) -> (pooled [B,D], θ [B,K])``.

  ``bias``: whether the score ``Linear`` has a bias. The official one has none
  (``nn.Linear(d_hidden, 1, bias=False)``); a bias shifts every valid score alike, so θ
  is the same with or without it (its gradient is 0).
  """

  d_pe: int = 32
  d_hidden: int = 32
  temperature: float = 0.1
  bias: bool = True

  @nn.compact
  def __call__(
    self, features: jax.Array, mask: jax.Array | None = None
  ) -> tuple[jax.Array, jax.Array]:
    b, k, _ = features.shape
    if mask is None:
      mask = jnp.ones((b, k), bool)
    n_valid = jnp.sum(mask, axis=1).astype(jnp.int32)
    sorted_mask = lengths_to_mask(n_valid, k)
    pe = jnp.broadcast_to(positional_encoding(k, self.d_pe), (b, k, self.d_pe))
    pe = jnp.where(sorted_mask[..., None], pe, 0.0)
    out, _ = BiGRU(self.d_hidden, merge="mean", name="bigru")(pe, n_valid)
    scores = nn.Dense(1, use_bias=self.bias, name="linear")(out)[..., 0]
    scores = jnp.where(sorted_mask, scores, -10000.0)
    weights = jax.nn.softmax(scores / self.temperature, axis=-1)
    return gpo_pool(features, mask, weights), weights
