"""Pure, masked building blocks of SGR / SAF (Paranioar/SGRAF ``model.py``).

Every reduction takes a boolean mask of the valid entries, so padded words or
regions never change a result. Formulas (official code; ``ε = 1e-8``)::

    l2norm(X) = X / (sqrt(Σ X²) + ε)          l1norm(X) = X / (Σ |X| + ε)
    s_rt = LeakyReLU_0.1(v_r · q_t);  ŝ_rt = s_rt / (sqrt(Σ_t s_rt²) + ε)   (over words)
    α_tr = softmax_r(λ ŝ_rt);  a_t = l2norm(Σ_r α_tr v_r)                  (λ = 9)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize_additive

EPS = 1e-8


def _masked(x: jax.Array, mask: jax.Array | None) -> jax.Array:
  return x if mask is None else jnp.where(mask, x, jnp.zeros_like(x))


def l2norm(x: jax.Array, *, axis: int = -1, mask: jax.Array | None = None) -> jax.Array:
  """Official ``l2norm``: ``x / (sqrt(Σ x²) + 1e-8)`` over the entries where ``mask``
  (broadcast to ``x``) holds; masked entries come out 0."""
  return l2_normalize_additive(_masked(x, mask), axis=axis, eps=EPS)


def l1norm(x: jax.Array, *, axis: int = -1, mask: jax.Array | None = None) -> jax.Array:
  """Official ``l1norm``: ``x / (Σ |x| + 1e-8)`` over the valid entries; masked -> 0."""
  x = _masked(x, mask)
  return x / (jnp.sum(jnp.abs(x), axis=axis, keepdims=True) + EPS)


def masked_softmax(x: jax.Array, mask: jax.Array | None, *, axis: int = -1) -> jax.Array:
  """``softmax`` over the valid entries of ``axis``; masked entries (and rows with
  none valid) get weight 0, never NaN."""
  if mask is None:
    return jax.nn.softmax(x, axis=axis)
  lowest = jnp.finfo(x.dtype).min
  p = jax.nn.softmax(jnp.where(mask, x, lowest), axis=axis)
  return jnp.where(mask, p, jnp.zeros_like(p))


def masked_mean(x: jax.Array, mask: jax.Array, *, axis: int) -> jax.Array:
  """Mean over the valid entries of ``axis`` (``mask`` broadcast to ``x``); 0 if none."""
  m = jnp.broadcast_to(mask, x.shape).astype(x.dtype)
  return jnp.sum(x * m, axis=axis) / jnp.maximum(jnp.sum(m, axis=axis), 1.0)


def masked_moments(
  x: jax.Array, mask: jax.Array, *, axes: tuple[int, ...], axis_name: str | None = None
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Batch-norm moments over the valid entries of ``axes``: ``(mean, biased var, count)``,
  each with ``axes`` reduced. ``mask`` broadcasts to ``x``.

  With ``axis_name`` (sync BatchNorm, as flax's ``BatchNorm(axis_name=...)``) the sums
  ``n = Σ m``, ``Σ m·x`` and ``Σ m·(x − μ)²`` are ``psum``-ed over that axis first, so the
  moments are those of the rows of every device: 8 devices = 1 device.
  """
  psum = (lambda v: v) if axis_name is None else (lambda v: jax.lax.psum(v, axis_name))
  m = jnp.broadcast_to(mask, x.shape).astype(x.dtype)
  n = psum(jnp.sum(m, axis=axes))
  mean = psum(jnp.sum(x * m, axis=axes)) / jnp.maximum(n, 1.0)
  centred = x - jnp.expand_dims(mean, axes)
  var = psum(jnp.sum(centred * centred * m, axis=axes)) / jnp.maximum(n, 1.0)
  return mean, var, n


def running_update(
  running: jax.Array, batch: jax.Array, count: jax.Array, *, momentum: float
) -> jax.Array:
  """PyTorch's ``r ← (1 − m) r + m b``, left unchanged where ``count == 0``."""
  return jnp.where(count > 0, (1.0 - momentum) * running + momentum * batch, running)


def unbiased(var: jax.Array, count: jax.Array) -> jax.Array:
  """``var · n / (n − 1)`` (PyTorch updates running_var with the unbiased variance)."""
  return var * count / jnp.maximum(count - 1.0, 1.0)


def scan_attention(
  words: jax.Array,
  word_mask: jax.Array,
  regions: jax.Array,
  region_mask: jax.Array,
  *,
  smooth: float,
) -> jax.Array:
  """Text-to-visual attention (``SCAN_attention(cap, img, smooth)`` of the official code)
  for every (image i, caption c) pair of a block.

  Args:
    words: ``[C, L, D]``; word_mask ``[C, L]``; regions ``[I, R, D]``; region_mask ``[I, R]``.
  Returns:
    ``a [I, C, L, D]``: ``a_t = l2norm(Σ_r softmax_r(λ ŝ_rt) v_r)`` with
    ``ŝ_rt = s_rt / (sqrt(Σ_t s_rt²) + ε)``, ``s_rt = LeakyReLU_0.1(v_r · q_t)``.
  """
  s = jax.nn.leaky_relu(jnp.einsum("ird,ctd->ictr", regions, words), 0.1)
  wm = word_mask[None, :, :, None]
  s = l2norm(s, axis=2, mask=wm)  # over the caption's words
  alpha = masked_softmax(smooth * s, region_mask[:, None, None, :], axis=-1)
  return l2norm(jnp.einsum("ictr,ird->ictd", alpha, regions))
