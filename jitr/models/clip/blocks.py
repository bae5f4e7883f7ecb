"""The pre-LayerNorm transformer block both CLIP towers (and timm's SigLIP trunk) stack.

For ``x`` ``[B, L, W]``, ``H`` heads of width ``d = W / H``, an additive mask ``M``
(``0`` / ``-inf``, or none)::

    q, k, v = split(Dense_qkv(LN_1(x)))                # one fused [W, 3W] projection
    x = x + Dense_out(concat_h softmax(q_h k_hᵀ / √d + M) v_h)
    x = x + fc2(act(fc1(LN_2(x))))

``act``: ``"gelu"`` exact (erf; Flax's ``nn.gelu`` defaults to the tanh form, which
open_clip's ``nn.GELU`` is not), ``"gelu_tanh"``, ``"quick_gelu"`` ``x·σ(1.702x)``.
Precision: ``dtype`` is the compute dtype of the Dense matmuls and attention products
(bfloat16 allowed); LayerNorm, softmax and the residual stream are float32 (float64 when
``dtype`` is float64); params are float32.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.common import wide_dtype

Dtype = Any


def activation(name: str):
  """The activation function of ``name`` (one of :data:`!jitr.models.clip.config.ACTIVATIONS`)."""
  return {
    "gelu": lambda x: jax.nn.gelu(x, approximate=False),
    "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
    "quick_gelu": lambda x: x * jax.nn.sigmoid(1.702 * x),
  }[name]


def causal_mask(length: int) -> jax.Array:
  """``[L, L]``: 0 on and below the diagonal, ``-inf`` above (open_clip's
  ``build_causal_mask``)."""
  return jnp.where(jnp.tril(jnp.ones((length, length), bool)), 0.0, -jnp.inf)


def attend(q, k, v, mask, dtype: Dtype):
  """``softmax(q kᵀ/√d + mask) v`` per head: ``q`` ``[B, Q, H, d]``, ``k``/``v``
  ``[B, K, H, d]``, ``mask`` ``[Q, K]`` additive or ``None`` -> ``[B, Q, H, d]``. The
  products run head-major (``[B, H, Q, d]``): batch dimensions leading, which XLA's CPU
  backend multiplies without copies."""
  q, k, v = (jnp.swapaxes(t, 1, 2) for t in (q, k, v))
  scores = jnp.matmul(q, jnp.swapaxes(k, -1, -2)).astype(wide_dtype(dtype)) * q.shape[-1] ** -0.5
  if mask is not None:
    scores = scores + mask
  probs = jax.nn.softmax(scores, axis=-1)
  return jnp.swapaxes(jnp.matmul(probs.astype(dtype), v), 1, 2)


def dense_rows(dense: nn.Dense, x):
  """``dense`` over the last axis of ``x`` ``[..., W]``, applied to ``x`` flattened to rows
  ``[N, W]``: the same values as ``dense(x)``, but one matrix product (XLA's CPU backend
  runs a 3-D ``dot_general`` and its gradient well under half as fast)."""
  out = dense(x.reshape(-1, x.shape[-1]))
  return out.reshape(*x.shape[:-1], out.shape[-1])


class Mlp(nn.Module):
  """``fc2(act(fc1(x)))``."""

  hidden: int
  act: str
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, x):
    width = x.shape[-1]
    y = dense_rows(nn.Dense(self.hidden, dtype=self.dtype, name="fc1"), x)
    y = activation(self.act)(y)
    return dense_rows(nn.Dense(width, dtype=self.dtype, name="fc2"), y)


class Block(nn.Module):
  """One pre-LN residual block (the formula above): params ``norm1``, ``attn.qkv``,
  ``attn.out``, ``norm2``, ``mlp.fc1``, ``mlp.fc2``."""

  heads: int
  mlp_width: int
  act: str
  norm_eps: float
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, x, mask):
    w = wide_dtype(self.dtype)
    h = nn.LayerNorm(epsilon=self.norm_eps, dtype=w, name="norm1")(x)
    x = x + _Attention(self.heads, self.dtype, name="attn")(h, mask).astype(w)
    h = nn.LayerNorm(epsilon=self.norm_eps, dtype=w, name="norm2")(x)
    return x + Mlp(self.mlp_width, self.act, self.dtype, name="mlp")(h).astype(w)


class _Attention(nn.Module):
  """Self-attention with one fused ``qkv`` Dense and an ``out`` Dense."""

  heads: int
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, x, mask):
    b, length, width = x.shape
    qkv = dense_rows(nn.Dense(3 * width, dtype=self.dtype, name="qkv"), x)
    q, k, v = jnp.split(qkv.reshape(b, length, 3 * self.heads, width // self.heads), 3, axis=2)
    context = attend(q, k, v, mask, self.dtype).reshape(b, length, width)
    return dense_rows(nn.Dense(width, dtype=self.dtype, name="out"), context)


def stack(config: Any, dtype: Dtype, remat: bool) -> Transformer:
  """The :class:`Transformer` of a tower's config (``layers``, ``heads``, ``mlp_width``,
  ``act``, ``norm_eps``), named ``transformer``."""
  c = config
  return Transformer(
    c.layers, c.heads, c.mlp_width, c.act, c.norm_eps, dtype, remat, name="transformer"
  )


class Transformer(nn.Module):
  """``layers`` :class:`Block` s named ``block_0`` ..; ``remat`` recomputes each block's
  activations in the backward pass (``nn.remat``)."""

  layers: int
  heads: int
  mlp_width: int
  act: str
  norm_eps: float
  dtype: Dtype = jnp.float32
  remat: bool = False

  @nn.compact
  def __call__(self, x, mask=None):
    block = nn.remat(Block) if self.remat else Block
    for i in range(self.layers):
      x = block(self.heads, self.mlp_width, self.act, self.norm_eps, self.dtype, name=f"block_{i}")(
        x, mask
      )
    return x
