"""Layers that several networks share (SGRAF, VSRN, CVSE): PyTorch-initialised linear
parameters declared for math run inside ``lax.map``, and PyTorch ``BatchNorm1d`` over the
valid entries of a masked batch (synchronised over a data-parallel axis when asked)."""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.masked_ops import masked_moments, running_update, unbiased

xavier = nn.initializers.xavier_uniform()


class LinearParams(nn.Module):
  """Declares a Linear layer's ``kernel [in, out]`` and ``bias [out]`` and returns them
  (for math run inside ``lax.map``, where submodules cannot be called)."""

  in_features: int
  features: int
  kernel_init: Callable = xavier

  @nn.compact
  def __call__(self) -> tuple[jax.Array, jax.Array]:
    kernel = self.param("kernel", self.kernel_init, (self.in_features, self.features))
    return kernel, self.param("bias", nn.initializers.zeros, (self.features,))


class BatchNormVars(nn.Module):
  """PyTorch ``BatchNorm1d`` variables: params ``scale``, ``bias``; batch_stats ``mean``,
  ``var`` (torch defaults: momentum 0.1, running_var updated with the unbiased variance).
  ``scale_init`` is torch's γ = 1 unless set (VSRN's ``Rs_GCN`` starts at γ = 0)."""

  features: int
  scale_init: Callable = nn.initializers.ones

  @nn.compact
  def __call__(self):
    scale = self.param("scale", self.scale_init, (self.features,))
    bias = self.param("bias", nn.initializers.zeros, (self.features,))
    mean = self.variable("batch_stats", "mean", jnp.zeros, (self.features,))
    var = self.variable("batch_stats", "var", jnp.ones, (self.features,))
    return scale, bias, mean, var


def masked_batch_norm(
  bn: nn.Module,
  x: jax.Array,
  mask: jax.Array,
  *,
  channel_axis: int,
  train: bool,
  momentum: float,
  eps: float,
  axis_name: str | None = None,
) -> jax.Array:
  """``(x − μ_c) / sqrt(σ²_c + eps) · γ_c + β_c`` with batch moments over the valid entries
  (train; running statistics updated) or running statistics (eval). Channel count
  may be below the module's (the first ``x.shape[channel_axis]`` channels are used).
  ``axis_name``: the moments are over the rows of every device of that axis (sync BN)."""
  scale, bias, mean_v, var_v = bn()
  c = x.shape[channel_axis]
  axes = tuple(a for a in range(x.ndim) if a != channel_axis % x.ndim)
  shape = [1] * x.ndim
  shape[channel_axis] = c
  if train:
    mean, var, count = masked_moments(x, mask, axes=axes, axis_name=axis_name)
    if not bn.is_initializing():
      running_mean, running_var = jnp.asarray(mean_v.value), jnp.asarray(var_v.value)
      upd_mean = running_update(running_mean[:c], mean, count, momentum=momentum)
      upd_var = running_update(running_var[:c], unbiased(var, count), count, momentum=momentum)
      mean_v.value = running_mean.at[:c].set(upd_mean)
      var_v.value = running_var.at[:c].set(upd_var)
  else:
    mean, var = mean_v.value[:c], var_v.value[:c]
  normed = (x - mean.reshape(shape)) * jax.lax.rsqrt(var.reshape(shape) + eps)
  return normed * scale[:c].reshape(shape) + bias[:c].reshape(shape)
