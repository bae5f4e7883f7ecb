"""The gradient of a batch-wide loss with the towers' activations of one chunk at a time
(GradCache: Gao et al., "Scaling Deep Contrastive Learning Batch Size under Memory Limited
Setup", 2021).

A listwise or contrastive loss couples every pair of the batch, so it cannot be split into
micro-batches whose gradients add up. Its gradient still factors through the embeddings
``e = f_θ(x)``: ``∂L/∂θ = Σ_c (∂e_c/∂θ)ᵀ ∂L/∂e_c`` over chunks ``c`` of the rows. So:

1. embed every chunk without keeping activations (``lax.map``),
2. take the loss and ``g = ∂L/∂e`` (and ``∂L/∂θ`` of what reads ``θ`` beside the
   embeddings: a learned temperature, a scoring head) at the embeddings,
3. run each chunk's forward again and pull ``g_c`` back through it (``jax.vjp`` in a
   ``lax.scan``), adding the chunks' parameter gradients.

The result equals the gradient of the whole batch's forward pass (one more forward pass of
compute); peak memory holds one chunk's activations. The forward pass must treat rows
alone: no batch statistics (a BatchNorm's running state), no auxiliary losses of the rows;
dropout is drawn per chunk (the same key in steps 1 and 3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jitr.models.retrieval_model import ModelOutput

#: ``forward(params, rows, key) -> ModelOutput`` of some rows.
Forward = Callable[[Any, Mapping[str, jax.Array], jax.Array], ModelOutput]
#: ``scored(params, images, captions) -> (loss, aux)`` at the batch's embeddings.
Scored = Callable[[Any, jax.Array, jax.Array], tuple[jax.Array, Any]]


def chunked(rows: Mapping[str, jax.Array], chunks: int) -> dict[str, jax.Array]:
  """Each ``[b, ...]`` array of ``rows`` as ``[chunks, b / chunks, ...]`` (one line when
  ``chunks`` does not divide ``b``)."""
  out = {}
  for name, x in rows.items():
    if not hasattr(x, "shape"):
      raise ValueError(
        f"config.grad_chunks: {name} comes in token chunks (config.token_chunks > 1); "
        "expected one of the two settings at 1"
      )
    if x.shape[0] % chunks:
      raise ValueError(
        f"config.grad_chunks: {chunks} chunks do not split a device's {x.shape[0]} rows "
        f"({name}); expected a divisor"
      )
    out[name] = x.reshape(chunks, x.shape[0] // chunks, *x.shape[1:])
  return out


def _joined(x: jax.Array) -> jax.Array:
  """``[chunks, rows, ...] -> [chunks · rows, ...]``."""
  return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def value_and_grad(
  forward: Forward,
  scored: Scored,
  params: Any,
  rows: Mapping[str, jax.Array],
  key: jax.Array,
  chunks: int,
) -> tuple[tuple[jax.Array, Any], Any]:
  """``((loss, aux), ∂loss/∂params)`` of ``scored(params, *forward(params, rows))``, the
  forward pass run ``chunks`` rows-chunks at a time (module docstring). ``rows``: the
  towers' inputs, ``[b, ...]`` each; chunk ``c`` draws with ``fold_in(key, c)``."""
  split = chunked(rows, chunks)
  keys = jax.vmap(lambda c: jax.random.fold_in(key, c))(jnp.arange(chunks))

  def embed(p, part, k):
    out = forward(p, part, k)
    if out.aux_losses:
      raise ValueError(
        f"config.grad_chunks: the network's auxiliary losses {sorted(out.aux_losses)} read "
        "the rows' activations; expected grad_chunks 1"
      )
    return out.images, out.captions

  images, captions = jax.lax.map(lambda a: embed(params, *a), (split, keys))
  images, captions = jax.lax.stop_gradient((_joined(images), _joined(captions)))
  (loss, aux), (grads, d_images, d_captions) = jax.value_and_grad(
    scored, argnums=(0, 1, 2), has_aux=True
  )(params, images, captions)
  d_images = d_images.reshape(chunks, -1, *d_images.shape[1:])
  d_captions = d_captions.reshape(chunks, -1, *d_captions.shape[1:])

  def add_chunk(total, args):
    part, k, d_img, d_cap = args
    _, pull = jax.vjp(lambda p: embed(p, part, k), params)
    (g,) = pull((d_img, d_cap))
    return jax.tree.map(jnp.add, total, g), None

  grads, _ = jax.lax.scan(add_chunk, grads, (split, keys, d_images, d_captions))
  return (loss, aux), grads
