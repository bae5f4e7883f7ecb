"""A small CNN image encoder for raw pixels (e.g. the 64×64 jitr_shapes images).

``uint8`` images are scaled to [-1, 1]. Each stage is
``Conv3x3(c) → GroupNorm → ReLU → MaxPool 2×2`` (no batch statistics, so the
train step stays a pure function of params), channels (32, 64, 128, 256): a
64×64 image becomes a 4×4 grid of 256-d features, projected per cell to
``embed_dim``, pooled over the 16 cells (mean, max or GPO) and L2-normalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize
from jitr.models.vse.region_encoder import SetPool


class ConvEncoder(nn.Module):
  """``images [B, H, W, C] -> [B, embed_dim]``."""

  embed_dim: int = 1024
  channels: Sequence[int] = (32, 64, 128, 256)
  pooling: str = "mean"
  normalize: bool = True
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, images: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    if mask is not None:
      raise ValueError("ConvEncoder takes no mask (pixels have no padding)")
    if images.ndim != 4:
      raise ValueError(f"ConvEncoder: images must be [B, H, W, C], got {images.shape}")
    if jnp.issubdtype(images.dtype, jnp.integer):
      x = images.astype(self.dtype) / 127.5 - 1.0
    else:
      x = images.astype(self.dtype)
    for i, c in enumerate(self.channels):
      x = nn.Conv(c, (3, 3), dtype=self.dtype, param_dtype=self.param_dtype, name=f"conv{i}")(x)
      x = nn.GroupNorm(
        num_groups=min(8, c), dtype=self.dtype, param_dtype=self.param_dtype, name=f"norm{i}"
      )(x)
      x = nn.relu(x)
      x = nn.max_pool(x, (2, 2), strides=(2, 2))
    b, h, w, c = x.shape
    x = nn.Dense(self.embed_dim, dtype=self.dtype, param_dtype=self.param_dtype, name="fc")(
      x.reshape(b, h * w, c)
    )
    x = SetPool(self.pooling, name="pool")(x, None)
    return l2_normalize(x) if self.normalize else x.astype(jnp.float32)
