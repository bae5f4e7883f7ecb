"""Image encoder over a padded set of region features (BUTD / jitr_shapes regions).

VSE++ (precomp) and VSE∞ (BUTD)::

    v_k = regions_k W + b           (Dense to the joint space, per region)
    v   = pool_{k valid}(v_k)        max (VSE++†), mean, or GPO (VSE∞)
    out = v / ‖v‖₂

Padded regions (``mask = False``) never influence the output.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize
from jitr.models.common import masked_max, masked_mean
from jitr.models.gpo import GPO

POOLINGS = ("max", "mean", "gpo")


class SetPool(nn.Module):
  """Masked pooling of ``[B, K, D]`` over ``K``: ``'max'``, ``'mean'`` or ``'gpo'``."""

  pooling: str = "max"

  @nn.compact
  def __call__(self, x: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    if self.pooling == "max":
      return masked_max(x, mask)
    if self.pooling == "mean":
      return masked_mean(x, mask)
    if self.pooling == "gpo":
      return GPO(name="gpo")(x, mask)[0]
    raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")


class RegionEncoder(nn.Module):
  """``(regions [B, K, D_in], mask [B, K] | None) -> [B, embed_dim]`` (L2-normalised
  unless ``normalize=False``)."""

  embed_dim: int = 1024
  pooling: str = "max"
  normalize: bool = True
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, regions: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    if regions.ndim != 3:
      raise ValueError(f"RegionEncoder: regions must be [B, K, D], got {regions.shape}")
    if mask is not None and mask.shape != regions.shape[:2]:
      raise ValueError(f"RegionEncoder: mask must be {regions.shape[:2]}, got {mask.shape}")
    x = nn.Dense(self.embed_dim, dtype=self.dtype, param_dtype=self.param_dtype, name="fc")(regions)
    x = SetPool(self.pooling, name="pool")(x, mask)
    return l2_normalize(x) if self.normalize else x.astype(jnp.float32)
