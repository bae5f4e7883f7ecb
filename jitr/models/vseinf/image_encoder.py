"""VSE∞'s image tower over BUTD region features (official ``EncoderImageAggr`` with
``precomp_enc_type="basic"``, lib/encoders.py)::

    v_k = fc(r_k) + mlp(r_k)                       per region, r_k ∈ R^{img_dim}
    mlp(r) = W_2 · ReLU(BN(W_1 r + b_1)) + b_2      (lib/modules/mlp.py, hidden embed/2)
    v = GPO(v_1..v_n)                               over the n valid regions
    out = v / (‖v‖₂ + 1e-8)

``fc`` starts Xavier-uniform with a zero bias (``init_weights``), the MLP's layers as
PyTorch's ``nn.Linear`` and its BatchNorm at γ = 1, β = 0. The BatchNorm runs, as the
official ``MLP.forward`` does, over the ``B·R`` rows of the reshaped ``[B·R, D]`` batch,
padded regions included (the BUTD features have 36 regions each, none padded); its
statistics are synchronised over ``axis_name``. The official MLP also builds a second
BatchNorm (``bns.1``) its forward never calls: it has no counterpart here.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize_additive
from jitr.models.gpo import GPO
from jitr.models.layers import BatchNormVars, masked_batch_norm
from jitr.models.vseinf.init import torch_dense, xavier_kernel_init

EPS = 1e-8
BN_MOMENTUM = 0.1
BN_EPS = 1e-5


class ResidualMLP(nn.Module):
  """``[B, R, D] -> [B, R, out]``: Linear → BatchNorm1d over the ``B·R`` rows → ReLU →
  Linear (the official two-layer ``MLP``)."""

  hidden: int
  out: int
  axis_name: str | None = None
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, x: jax.Array, *, train: bool) -> jax.Array:
    b, r, d = x.shape
    h = torch_dense(self.hidden, d, "layers_0", self.dtype)(x.reshape(b * r, d))
    rows = jnp.ones((b * r, 1), bool)
    h = masked_batch_norm(
      BatchNormVars(self.hidden, name="bns_0"),
      h.astype(jnp.float32),
      rows,
      channel_axis=-1,
      train=train,
      momentum=BN_MOMENTUM,
      eps=BN_EPS,
      axis_name=self.axis_name,
    )
    h = torch_dense(self.out, self.hidden, "layers_1", self.dtype)(jax.nn.relu(h))
    return h.reshape(b, r, self.out)


class ImageEncoder(nn.Module):
  """``(regions [B, R, img_dim], mask [B, R] | None, *, train) -> [B, embed_dim]``
  (L2-normalised unless ``normalize=False``, the official ``no_imgnorm``)."""

  embed_dim: int = 1024
  img_dim: int = 2048
  normalize: bool = True
  axis_name: str | None = None
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(
    self, regions: jax.Array, mask: jax.Array | None = None, *, train: bool = False
  ) -> jax.Array:
    if regions.ndim != 3 or regions.shape[-1] != self.img_dim:
      raise ValueError(
        f"vseinf image encoder: regions must be [B, R, {self.img_dim}] (img_dim), "
        f"got {regions.shape}"
      )
    fc = nn.Dense(
      self.embed_dim,
      dtype=self.dtype,
      kernel_init=xavier_kernel_init,
      bias_init=nn.initializers.zeros,
      name="fc",
    )(regions)
    mlp = ResidualMLP(self.embed_dim // 2, self.embed_dim, self.axis_name, self.dtype, name="mlp")
    features = (mlp(regions, train=train) + fc).astype(jnp.float32)
    pooled, _ = GPO(bias=False, name="gpool")(features, mask)
    return l2_normalize_additive(pooled, eps=EPS) if self.normalize else pooled
