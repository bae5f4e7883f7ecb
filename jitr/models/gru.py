"""Masked GRU layers over padded sequences, built for speed on CPU and GPU.

The cell follows PyTorch's ``nn.GRU`` (so its weights port directly)::

    r = σ(x W_ir + b_ir + h W_hr + b_hr)
    z = σ(x W_iz + b_iz + h W_hz + b_hz)
    n = tanh(x W_in + b_in + r ⊙ (h W_hn + b_hn))
    h' = (1 − z) ⊙ n + z ⊙ h

Speed: the input projection ``x W_i + b_i`` of *all* timesteps is one
``[B·T, E] × [E, 3H]`` matmul outside the time loop; the ``lax.scan`` body only
does ``h W_h`` and the gates. Padding: at ``t >= length`` the carry is kept
(``h_t = h_{t-1}``) and the output is 0, so the final carry is the state after
the last real token and padding tokens never matter. The scan runs over the
array's time axis, so trimming a batch to its (bucketed) longest caption before
calling — see :func:`jitr.data.vocab.bucket_length` — skips the padding work
entirely. The reverse direction reverses each sequence within its own length.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.common import lengths_to_mask

Dtype = Any


def _stacked_orthogonal(num: int):
  """Initialiser for ``[H, num·H]``: ``num`` independent orthogonal ``H×H`` blocks."""

  def init(key, shape, dtype=jnp.float32):
    h = shape[0]
    keys = jax.random.split(key, num)
    return jnp.concatenate([nn.initializers.orthogonal()(k, (h, h), dtype) for k in keys], axis=-1)

  return init


def reverse_padded(x: jax.Array, lengths: jax.Array) -> jax.Array:
  """Reverses each ``x[b, :lengths[b]]`` in place, leaving the padding where it
  is: ``y[b, t] = x[b, lengths[b] − 1 − t]`` for ``t < lengths[b]``, else ``x[b, t]``.
  It is its own inverse."""
  t = jnp.arange(x.shape[1])[None, :]
  idx = jnp.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
  idx = idx.reshape(idx.shape + (1,) * (x.ndim - 2))
  return jnp.take_along_axis(x, idx, axis=1)


def gru_scan(
  x_proj: jax.Array,
  mask: jax.Array,
  w_h: jax.Array,
  b_h: jax.Array,
  h0: jax.Array,
  *,
  unroll: int = 1,
) -> tuple[jax.Array, jax.Array]:
  """Runs the recurrence on precomputed input projections.

  Args:
    x_proj: ``[B, T, 3H]`` = ``x W_i + b_i`` (gate order r, z, n).
    mask: ``[B, T]`` bool, valid timesteps.
    w_h: ``[H, 3H]``; b_h: ``[3H]``; h0: ``[B, H]``.
    unroll: ``lax.scan`` unroll factor.
  Returns:
    outputs ``[B, T, H]`` (0 at padding) and the final carry ``[B, H]``.
  """

  def step(h, inputs):
    xp, m = inputs
    hp = h @ w_h + b_h
    xr, xz, xn = jnp.split(xp, 3, axis=-1)
    hr, hz, hn = jnp.split(hp, 3, axis=-1)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    h_new = (1.0 - z) * n + z * h
    m = m[:, None]
    return jnp.where(m, h_new, h), jnp.where(m, h_new, jnp.zeros_like(h_new))

  xs = (jnp.swapaxes(x_proj, 0, 1), jnp.swapaxes(mask, 0, 1))
  final, outs = jax.lax.scan(step, h0, xs, unroll=unroll)
  return jnp.swapaxes(outs, 0, 1), final


def _zero_state(x_proj: jax.Array, hidden: int) -> jax.Array:
  """``h0 = 0 [B, H]`` typed like the inputs: under ``shard_map`` with its varying-axis
  checks on, a carry built from constants would be device-invariant while the
  scan's output varies per device (it reads this device's rows and parameters)."""
  return jnp.zeros_like(x_proj[:, 0, :hidden])


class GRU(nn.Module):
  """One masked GRU direction over ``[B, T, E]`` inputs with lengths ``[B]``.

  Returns ``(outputs [B, T, H], final [B, H])``; for ``reverse=True`` the
  outputs are aligned with the input positions and ``final`` is the state after
  reading each sequence backwards down to position 0.
  """

  hidden_size: int
  reverse: bool = False
  unroll: int = 1
  dtype: Dtype = jnp.float32
  param_dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, inputs: jax.Array, lengths: jax.Array) -> tuple[jax.Array, jax.Array]:
    b, t, _ = inputs.shape
    h = self.hidden_size
    x_proj = nn.Dense(3 * h, dtype=self.dtype, param_dtype=self.param_dtype, name="input")(
      inputs
    )  # one matmul for all steps
    w_h = self.param(
      "recurrent_kernel", _stacked_orthogonal(3), (h, 3 * h), self.param_dtype
    ).astype(self.dtype)
    b_h = self.param("recurrent_bias", nn.initializers.zeros, (3 * h,), self.param_dtype).astype(
      self.dtype
    )
    mask = lengths_to_mask(lengths, t)
    if self.reverse:
      x_proj = reverse_padded(x_proj, lengths)
    outputs, final = gru_scan(x_proj, mask, w_h, b_h, _zero_state(x_proj, h), unroll=self.unroll)
    if self.reverse:
      outputs = reverse_padded(outputs, lengths)
    return outputs, final


class BiGRU(nn.Module):
  """Forward and backward masked GRUs; ``merge='mean'`` averages the two
  directions (SCAN / VSE∞: output size H), ``'concat'`` concatenates (2H)."""

  hidden_size: int
  merge: str = "mean"
  unroll: int = 1
  dtype: Dtype = jnp.float32
  param_dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, inputs: jax.Array, lengths: jax.Array) -> tuple[jax.Array, jax.Array]:
    kw = dict(
      hidden_size=self.hidden_size,
      unroll=self.unroll,
      dtype=self.dtype,
      param_dtype=self.param_dtype,
    )
    out_f, fin_f = GRU(name="forward", **kw)(inputs, lengths)
    out_b, fin_b = GRU(reverse=True, name="backward", **kw)(inputs, lengths)
    if self.merge == "mean":
      return (out_f + out_b) / 2, (fin_f + fin_b) / 2
    if self.merge == "concat":
      return (jnp.concatenate([out_f, out_b], -1), jnp.concatenate([fin_f, fin_b], -1))
    raise ValueError(f"BiGRU: merge must be 'mean' or 'concat', got {self.merge!r}")
